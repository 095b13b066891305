"""Graph-CoT's agent (sec. 4.2.1 of the paper): a thought and actions per step, run with the KG toolbox's
four tools (bound as tools, or parsed from ``Action: Name[args]`` text), or chosen by ranking every
valid action.

Example:
    >>> render_actions([("NeighborCheck", ["Splash", "directed_by"])])
    'NeighborCheck[Splash, directed_by]'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException
from pydantic import BaseModel, Field

from kg_agents.core.answers import parse_answers
from kg_agents.core.decide import check_calibrate, rank, topic_question
from kg_agents.core.metering import invoke_llm
from kg_agents.errors import ConfigError, KGAgentsError
from kg_agents.kg.base import INVERSE_PREFIX, Triple
from kg_agents.kg.text import relation_words
from kg_agents.llm.ranking import Ranking
from kg_agents.methods.graph_cot.interaction.base import Interaction, entity_label, toolbox_relation
from kg_agents.methods.graph_cot.parsing import parse_action
from kg_agents.tools.kg_tools import kg_toolkit
from kg_agents.untrusted import kg_text

__all__ = [
    "ActionMode",
    "AgentInteraction",
    "Finish",
    "action_key",
    "agent_frontier",
    "finish_on_raw_scores",
    "render_actions",
    "render_agent_steps",
    "walk_depth",
]

ActionMode = Literal["auto", "tools", "text"]


class Finish(BaseModel):
    """End the task with the answers (node names, not ids or descriptions)."""

    answers: list[str] = Field(description="the answers to the question")


def render_actions(actions: Sequence[tuple[str, Sequence[str]]]) -> str:
    """Actions as one ``Action`` line: ``NeighborCheck[Splash, directed_by], ...`` (the arguments, node ids
    and relations, rendered with :func:`~kg_agents.untrusted.kg_text`)."""
    return ", ".join(f"{name}[{', '.join(kg_text(a) for a in args)}]" for name, args in actions)


def action_key(actions: Sequence[tuple[str, Sequence[str]]], finish: Sequence[str] | None) -> tuple[Any, ...]:
    """An agent step as a decision key (see :class:`kg_agents.core.decide.Decision`):
    ``("finish", labels)``, ``("retrieve", entity)`` or ``("neighbor", nodes, relation, direction)``.

    Example:
        >>> action_key([("NeighborCheck", ["m1", "~directed_by"])], None)
        ('neighbor', ('m1',), 'directed_by', 'in')
    """
    if finish is not None:
        return ("finish", tuple(finish))
    if actions and actions[0][0] == "RetrieveNode":
        return ("retrieve", actions[0][1][0])
    rel = actions[0][1][1] if actions else ""
    direction = "in" if rel.startswith(INVERSE_PREFIX) else "out"
    return ("neighbor", tuple(a[1][0] for a in actions), rel.removeprefix(INVERSE_PREFIX), direction)


def finish_on_raw_scores(ranking: Ranking, is_finish: Sequence[bool]) -> Ranking:
    """A calibrated action ranking whose ``Finish`` competes on the model's own scores.

    Calibration (``baseline``) picks the relation to follow by how much the question raises it; whether to
    stop is a different question, which the calibrated scores answer badly (the step prompt with the
    question taken out still makes ``Finish`` likely). So ``Finish`` gets the score that puts it above the
    best calibrated action exactly when its raw log-probability is above that action's.

    Example:
        >>> r = Ranking(("a", "b", "f"), (-1.0, 0.5, -4.0), "logprobs",
        ...             extra={"calibrated": True, "uncalibrated": (-2.0, -3.0, -2.5)})
        >>> finish_on_raw_scores(r, [False, False, True]).best      # b is raised most; raw f beats raw b
        'f'
    """
    if not any(is_finish) or all(is_finish):
        return ranking
    raw = ranking.extra["uncalibrated"]
    acts = [i for i, f in enumerate(is_finish) if not f]
    best = max(acts, key=lambda i: ranking.scores[i])
    shift = raw[best] - ranking.scores[best]  # the best action's baseline score
    scores = tuple(raw[i] - shift if f else ranking.scores[i] for i, f in enumerate(is_finish))
    return replace(ranking, scores=scores)


def render_agent_steps(steps: Sequence[dict[str, Any]]) -> str:
    """The agent's chain as the paper's scratchpad: ``Thought i``, ``Action i``, ``Observation i`` lines."""
    out = []
    for i, st in enumerate(steps, 1):
        out.append(f"Thought {i}: {st.get('thought', '')}")
        if st.get("action"):
            out.append(f"Action {i}: {st['action']}")
        if st.get("observation"):
            out.append(f"Observation {i}: {st['observation']}")
    return "\n".join(out)


def agent_frontier(branch: dict[str, Any]) -> list[str]:
    """The nodes an agent's chain goes on from: those its last step reached, else its start entities.

    Example:
        >>> agent_frontier({"starts": ["Splash"], "steps": [{"nodes": []}]})
        ['Splash']
    """
    steps = branch.get("steps") or []
    return list((steps[-1].get("nodes") if steps else None) or []) or list(branch.get("starts") or [])


def walk_depth(steps: Sequence[dict[str, Any]]) -> int:
    """How many hops an agent's chain has walked: its ``NeighborCheck`` steps that reached nodes.

    Example:
        >>> walk_depth([{"action": "RetrieveNode[Splash]", "nodes": ["Splash"]},
        ...             {"action": "NeighborCheck[Splash, directed_by]", "nodes": ["Ron Howard"]}])
        1
    """
    return sum(
        1 for st in steps if str(st.get("action") or "").startswith("NeighborCheck") and st.get("nodes")
    )


class AgentInteraction(Interaction):
    """Graph-CoT's agent (sec. 4.2.1): a thought and actions per step, run with :class:`KGToolbox`.

    Args:
        action_mode: ``tools`` (bound tools), ``text`` (``Action: Name[args]`` lines) or ``auto``
            (tools when the model calls tools natively; text for a model whose ``native_tool_calling`` is
            False, such as the embedded one: its grammar-constrained calls carry no thought).
        max_actions: at most this many actions run per step.
        *args, **kwargs: those of :class:`Interaction`.

    Raises:
        ConfigError: an unknown ``action_mode``, or ``tools`` with a model without tool calling.
    """

    name = "graph_agent"

    def __init__(
        self, *args: Any, action_mode: ActionMode, max_actions: int, calibrate: bool = False, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.calibrate = check_calibrate(calibrate)
        self.tools = {
            t.name: t for t in kg_toolkit(self.kg, self.box.index, max_neighbors=self.box.max_neighbors)
        }
        self.bound = None
        self.max_actions = max_actions
        if action_mode not in ("auto", "tools", "text"):
            raise ConfigError(f"action_mode must be 'auto', 'tools' or 'text', got {action_mode!r}")
        if action_mode == "tools" or (
            action_mode == "auto" and getattr(self.model, "native_tool_calling", True)
        ):
            try:
                self.bound = self.model.bind_tools([*self.tools.values(), Finish])
            except NotImplementedError as exc:
                if action_mode == "tools":
                    raise ConfigError(
                        f"the chat model {type(self.model).__name__} does not support tool "
                        "calling; use action_mode='text'"
                    ) from exc
        self.mode = "tools" if self.bound is not None else "text"

    def chain_text(self, branch: dict[str, Any]) -> str:
        return render_agent_steps(branch.get("steps") or [])

    def _messages(self, branch: dict[str, Any], question: str) -> list[BaseMessage]:
        msgs = list(
            self.prompts["agent_tools"].format_messages(
                graph_definition=self.graph_definition, question=question
            )
        )
        for st in branch.get("steps") or []:
            calls = st.get("tool_calls") or []
            if calls:
                msgs.append(AIMessage(content=st.get("thought", ""), tool_calls=calls))
                for call, obs in zip(calls, st.get("observations") or [], strict=False):
                    msgs.append(ToolMessage(content=obs, tool_call_id=call["id"], name=call["name"]))
            else:
                msgs.append(AIMessage(content=st.get("raw", st.get("thought", ""))))
                if st.get("observation"):
                    msgs.append(HumanMessage(content=f"Observation: {st['observation']}"))
        return msgs

    def action_options(
        self, branch: dict[str, Any], walk: int | None = None, plan: Sequence[str] | None = None
    ) -> list[tuple[str, list[tuple[str, list[str]]], list[str] | None]]:
        """Every action the agent can take next, each valid by construction: ``(thought, actions, finish)``.

        With no step yet: ``RetrieveNode[e]`` for each topic entity. Afterwards, over the nodes the last
        step reached (its frontier; the topic entities when it reached none): one ``NeighborCheck`` per
        relation those nodes have (both directions; run on each of them, at most ``max_actions``), and
        ``Finish`` with the frontier's labels once a ``NeighborCheck`` reached it. An action the chain
        already took is not offered again.

        With a walk length ``walk`` (the ranked route's ``hops``), ``Finish`` is not offered before the
        chain has made that many ``NeighborCheck`` steps that reached nodes, and is the only option once it
        has.

        With a relation chain ``plan`` (toolbox relation names, one per hop), the ``NeighborCheck`` of a
        hop is the chain's relation at that hop alone, run on the frontier's nodes that have it and that the
        chain had not reached before; where none has it, every relation is offered as without a plan.
        """
        steps = branch.get("steps") or []
        starts = list(branch.get("starts") or [])
        options: list[tuple[str, list[tuple[str, list[str]]], list[str] | None]] = []
        if not steps:
            for e in starts:
                label = kg_text(entity_label(self.kg, e))
                options.append((f"I need the node {label}.", [("RetrieveNode", [e])], None))
            return options
        last = steps[-1]
        frontier = agent_frontier(branch)
        done = {step.get("action") for step in steps}
        nodes = frontier[: self.max_actions]
        by_rel: dict[str, list[str]] = {}
        hop = walk_depth(steps)
        if plan and hop < len(plan):  # the chain's relation, on the nodes that have it (one KG call)
            rel, direction = toolbox_relation(plan[hop])
            have = self.kg.neighbors_many(frontier, rel, direction, limit=1)
            # a node the chain passed before (its start, say) is no step forward
            before = {x for st in steps[:-1] for x in st.get("nodes") or []}
            on = [n for n in frontier if have.get(n) and n not in before][: self.max_actions]
            if on:
                nodes, by_rel = on, {plan[hop]: on}
        if not by_rel:
            for n in nodes:
                for rel in self.box.neighbor_types(n):
                    by_rel.setdefault(rel, []).append(n)
        names = ", ".join(kg_text(entity_label(self.kg, n)) for n in nodes[:3])
        names += " ..." if len(nodes) > 3 else ""
        for rel, members in by_rel.items():
            actions = [("NeighborCheck", [n, rel]) for n in members]
            if render_actions(actions) in done:
                continue
            words = kg_text(relation_words(rel.lstrip(INVERSE_PREFIX)))
            thought = (
                f"I need what has {names} as {words}."
                if rel.startswith(INVERSE_PREFIX)
                else f"I need the {words} of {names}."
            )
            options.append((thought, actions, None))
        if last.get("nodes") and str(last.get("action") or "").startswith("NeighborCheck"):
            labels = [entity_label(self.kg, n) for n in last["nodes"]]
            finish: tuple[str, list[tuple[str, list[str]]], list[str] | None] = (
                f"The answer is {' | '.join(map(kg_text, labels))}.",
                [],
                labels,
            )
            if walk is None:
                options.append(finish)
            elif walk_depth(steps) >= walk:
                return [finish]
        return options

    def think_ranked(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        """The next step chosen by ranking :meth:`action_options` (candidate ``j`` takes the j-th best).

        With ``relation_chain`` and a walk length (1 hop too: a chain of one relation), the step after the
        start is reached first ranks the relation chain from it (:meth:`Interaction._plan`, once per
        chain); the hops then follow it."""
        walk = settings.get("walk_hops")
        steps = branch.get("steps") or []
        plan, plan_trace = branch.get("plan"), None
        if self.relation_chain and walk and plan is None and steps:
            info: dict[str, Any] = {}
            plan = self._plan(question, agent_frontier(branch)[: self.max_actions], int(walk), info)
            plan_trace = info.get("plan")
        options = self.action_options(branch, walk, plan)
        if not options:  # nothing to choose from (no topic entity): the model writes the step
            msg = self._text_step(branch, question, settings)
            msg.additional_kwargs["ranking"] = {"route": "none", "options": 0}
            return msg
        n = len(steps) + 1
        replies = [
            f"{thought}\nAction {n}: "
            + (f"Finish[{' | '.join(finish)}]" if finish is not None else render_actions(actions))
            for thought, actions, finish in options
        ]
        keys: dict[str, tuple[Any, ...]] = {}
        for reply, (_, actions, finish) in zip(replies, options, strict=True):
            keys.setdefault(reply, action_key(actions, finish))
        replies = list(keys)
        baseline = None
        if self.calibrate:  # the same step with the question's words taken out: only its topic entities
            topics = topic_question(entity_label(self.kg, e) for e in branch.get("starts") or [])
            baseline = self._step_messages(branch, topics)
        ranking = rank(
            self.model,
            self._step_messages(branch, question),
            replies,
            role="action",
            keys=list(keys.values()),
            baseline=baseline,
        )
        if not ranking.matched:  # a text-only model wrote a step naming no option: read it as written
            return AIMessage(
                content=ranking.raw or "", response_metadata={"ranking": ranking.as_trace(top=5)}
            )
        if ranking.extra.get("calibrated"):
            ranking = finish_on_raw_scores(ranking, [finish is not None for _, _, finish in options])
        pick = ranking.order()[min(int(settings.get("candidate", 0)), len(replies) - 1)]
        thought, actions, finish = options[pick]
        ranked_step = {"thought": thought, "actions": actions, "finish": finish}
        if plan is not None:
            ranked_step.update(plan=list(plan), plan_trace=plan_trace)
        return AIMessage(
            content=replies[pick],
            additional_kwargs={"ranked_step": ranked_step},
            response_metadata={"ranking": ranking.as_trace(top=5)},
        )

    def _step_messages(self, branch: dict[str, Any], question: str) -> list[BaseMessage]:
        steps = branch.get("steps") or []
        scratch = render_agent_steps(steps)
        return self.prompts["agent_step"].format_messages(
            graph_definition=self.graph_definition,
            question=question,
            scratchpad=(scratch + "\n") if scratch else "",
            step=len(steps) + 1,
        )

    def _text_step(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        msgs = self._step_messages(branch, question)
        return invoke_llm(self.model, msgs, stop=["\nObservation"], **self.sampling(settings))

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        if settings.get("decide", "rank") == "rank":
            return self.think_ranked(branch, question, settings)
        if self.mode == "tools":
            return invoke_llm(self.bound, self._messages(branch, question), **self.sampling(settings))
        return self._text_step(branch, question, settings)

    def _run_action(self, name: str, args: list[str]) -> tuple[str, list[Triple], list[str]]:
        """Observation, triples seen, entities retrieved; errors become the observation."""
        try:
            obs, triples = self.box.run(name, args)
        except ToolException as exc:
            return str(exc), [], []
        except KGAgentsError as exc:
            return f"The graph could not answer {name}: {exc}", [], []
        found = []
        if name.casefold() == "retrievenode":
            found = self.box.lookup(args[0]) if args else []
        return obs, triples, found

    def ground(
        self, branch: dict[str, Any], output: Any, question: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        msg = output if isinstance(output, BaseMessage) else AIMessage(content=str(output))
        text = str(msg.content or "")
        calls = list(getattr(msg, "tool_calls", None) or [])
        triples: list[Triple] = []
        starts: list[str] = []
        if isinstance(msg, AIMessage) and msg.additional_kwargs.get("ranked_step") is not None:
            return self._ground_ranked(msg.additional_kwargs["ranked_step"], msg)
        if calls:
            step: dict[str, Any] = {"thought": text.strip(), "tool_calls": [], "observations": []}
            answers = None
            for i, call in enumerate(calls[: self.max_actions]):
                call = {
                    "name": call.get("name", ""),
                    "args": dict(call.get("args") or {}),
                    "id": call.get("id") or f"call_{len(branch.get('steps') or [])}_{i}",
                    "type": "tool_call",
                }
                args = call["args"]
                if call["name"] == "Finish":
                    raw = args.get("answers")
                    answers = (
                        [str(a) for a in raw] if isinstance(raw, list) else parse_answers(str(raw or ""))
                    )
                    obs = "Finished."
                elif call["name"] in self.tools:
                    schema = self.tools[call["name"]].args_schema
                    keys = list(schema.model_fields)  # type: ignore[union-attr]
                    missing = [k for k in keys if k not in args]
                    if missing:
                        obs = f"{call['name']} needs the arguments {keys}; missing {missing}."
                        t_: list[Triple] = []
                        f_: list[str] = []
                    else:
                        obs, t_, f_ = self._run_action(call["name"], [str(args[k]) for k in keys])
                    triples += t_
                    starts += f_
                else:
                    obs = f"Unknown tool {call['name']!r}. Valid tools: {', '.join(self.tools)}, Finish."
                step["tool_calls"].append(call)
                step["observations"].append(obs)
            step["action"] = "; ".join(f"{c['name']}{list(c['args'].values())}" for c in step["tool_calls"])
            step["observation"] = " ".join(step["observations"])
            return {"step": step, "triples": triples, "starts": starts, "answers": answers}
        parsed = parse_action(text, max_actions=self.max_actions)
        step = {"thought": parsed.thought, "raw": text}
        if parsed.finish is not None:
            step["action"] = f"Finish[{' | '.join(parsed.finish)}]"
            return {"step": step, "triples": [], "starts": [], "answers": parsed.finish}
        if parsed.error:
            if self.mode == "tools" and text.strip():
                # A tool-calling model that answers in plain text has finished (as in create_react_agent).
                answers = parse_answers(text)
                step["action"] = f"Finish[{' | '.join(answers)}]"
                return {"step": step, "triples": [], "starts": [], "answers": answers}
            step["action"] = None
            step["observation"] = (
                parsed.error + " Write 'Action: ' followed by one of "
                "RetrieveNode[keyword], "
                "NodeFeature[node, feature], NeighborCheck[node, neighbor_type], "
                "NodeDegree[node, neighbor_type], Finish[answer]."
            )
            return {"step": step, "triples": [], "starts": [], "answers": None, "malformed": True}
        return self._run_actions(step, parsed.actions)

    def _run_actions(self, step: dict[str, Any], actions: list[tuple[str, list[str]]]) -> dict[str, Any]:
        """Run a step's actions; the step records them, their observation and the nodes they reached."""
        observations = []
        triples: list[Triple] = []
        starts: list[str] = []
        nodes: list[str] = []
        for name, args in actions:
            obs, t_, f_ = self._run_action(name, args)
            observations.append(obs)
            triples += t_
            starts += f_
            nodes += f_ or [x for t in t_ for x in (t.head, t.tail) if x not in args]
        step["action"] = render_actions(actions)
        step["observation"] = " ".join(observations)
        step["nodes"] = list(dict.fromkeys(nodes))
        return {"step": step, "triples": triples, "starts": starts, "answers": None}

    def _ground_ranked(self, ranked: dict[str, Any], msg: AIMessage) -> dict[str, Any]:
        """A ranked step: its actions run as chosen (no parsing), or its Finish answers."""
        step: dict[str, Any] = {"thought": ranked["thought"], "raw": str(msg.content)}
        out: dict[str, Any]
        if ranked["finish"] is not None:
            step["action"] = f"Finish[{' | '.join(map(kg_text, ranked['finish']))}]"
            out = {"step": step, "triples": [], "starts": [], "answers": list(ranked["finish"])}
        else:
            out = self._run_actions(step, [(n, list(a)) for n, a in ranked["actions"]])
        out["trace"] = {"ranking": msg.response_metadata.get("ranking")}
        if "plan" in ranked:  # the relation chain the hops follow, kept on the branch
            out["plan"] = ranked["plan"]
            if ranked.get("plan_trace") is not None:
                out["trace"]["plan"] = ranked["plan_trace"]
        return out

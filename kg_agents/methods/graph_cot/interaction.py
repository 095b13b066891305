"""How one step of a Graph-CoT chain talks to the KG: the ReAct agent or the automatic explorer.

An :class:`Interaction` is the strategy object the graph's nodes hold (sec. 4.2 of the paper):
``think`` makes the step's LLM call from a branch (a chain state), ``ground`` turns the output into
the new step (observations, triples seen, entities reached, answers). :class:`AgentInteraction`
runs Graph-CoT's four tools (bound as tools, or parsed from text actions); :class:`ExploreInteraction`
extracts and links entities, then prunes relations and neighbours level by level (algorithm 1).

Example:
    >>> from kg_agents.core.metering import MeteredKG
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.base import Triple
    >>> kg = MeteredKG(MemoryKG([Triple("Splash", "directed_by", "Ron Howard")]))
    >>> triple_text(kg, Triple("Splash", "directed_by", "Ron Howard"))
    'Splash -> directed_by -> Ron Howard'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import ToolException
from pydantic import BaseModel, Field

from kg_agents.core.answers import parse_answers
from kg_agents.core.chains import chain_example as chain_prompt_example
from kg_agents.core.chains import chain_text as relation_chain_text
from kg_agents.core.chains import relation_chains, walk_chain
from kg_agents.core.decide import (
    answer_candidates,
    check_calibrate,
    ground_answers,
    rank,
    ranked_answers,
    topic_question,
)
from kg_agents.core.metering import MeteredKG, invoke_llm
from kg_agents.core.prompts import PromptLike, prompt_templates
from kg_agents.core.support import support_paths
from kg_agents.errors import ConfigError, EntityNotFound, KGAgentsError
from kg_agents.kg.base import INVERSE_PREFIX, Direction, KnowledgeGraph, Path, Triple, joins_in_engine
from kg_agents.kg.text import relation_words
from kg_agents.llm.ranking import Ranking
from kg_agents.methods.graph_cot.parsing import (
    match_relations,
    parse_action,
    parse_bracket_list,
    parse_thought,
    parse_yes,
)
from kg_agents.tools.kg_tools import KGToolbox, kg_toolkit
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "AGENT_PROMPTS",
    "COMMON_PROMPTS",
    "EXPLORE_PROMPTS",
    "KEEP_RATIO",
    "PROMPT_DIR",
    "ActionMode",
    "AgentInteraction",
    "ExploreInteraction",
    "Finish",
    "Interaction",
    "agent_frontier",
    "entity_label",
    "graph_definition",
    "load_prompts",
    "render_actions",
    "render_agent_steps",
    "triple_text",
]

ActionMode = Literal["auto", "tools", "text"]
#: The folder of the bundled prompts, under ``kg_agents/methods``.
PROMPT_DIR = "graph_cot"
#: The prompts both interactions use (evaluation, merge, final answer).
COMMON_PROMPTS = ("select_vote", "score_vote", "merge", "final_answer")
AGENT_PROMPTS = ("agent_step", "agent_tools", "explore_plan_relations", *COMMON_PROMPTS)
EXPLORE_PROMPTS = (
    "explore_thought",
    "explore_extract",
    "explore_prune_relations",
    "explore_prune_entities",
    "explore_plan_relations",
    "explore_end",
    *COMMON_PROMPTS,
)


def toolbox_relation(name: str) -> tuple[str, Direction]:
    """``(relation, direction)`` of a relation as the toolbox names it (``~relation``: followed backwards).

    Example:
        >>> toolbox_relation("~written_by"), toolbox_relation("directed_by")
        (('written_by', 'in'), ('directed_by', 'out'))
    """
    if name.startswith(INVERSE_PREFIX):
        return name[len(INVERSE_PREFIX) :], "in"
    return name, "out"


#: The longest reasoning path searched through a branch's triples.
PATH_HOPS = 4


def load_prompts(
    overrides: Mapping[str, PromptLike] | None, names: Sequence[str]
) -> dict[str, ChatPromptTemplate]:
    """The templates ``names``: the bundled ones, each replaced by its override when given.

    Raises:
        ConfigError: an override names no prompt of ``names`` (the message lists the valid ones).
    """
    return prompt_templates(PROMPT_DIR, names, overrides)


class Finish(BaseModel):
    """End the task with the answers (node names, not ids or descriptions)."""

    answers: list[str] = Field(description="the answers to the question")


#: Ranked pruning keeps the options whose probability is at least this share of the best one's.
KEEP_RATIO = 0.5


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


def graph_definition(kg: KnowledgeGraph, max_relations: int = 40) -> str:
    """The prompts' "Definition of the graph": what nodes are, and the first ``max_relations`` relations."""
    rels = list(kg.all_relations())[:max_relations]
    return (
        "nodes are entities (movies, people, genres, years, ...) identified by their names; "
        f"relations: {', '.join(kg_text(r) for r in rels)}; write ~relation to follow a relation backwards"
    )


def entity_label(kg: Any, entity: str) -> str:
    """The label of ``entity``, or the id itself when the KG has no such entity.

    A failing endpoint is not hidden: its error is raised.
    """
    try:
        return str(kg.label(entity))
    except EntityNotFound:
        return entity


def triple_text(kg: Any, t: Triple) -> str:
    """``head -> relation -> tail`` with the entities' labels (the relation id as it is)."""
    return f"{entity_label(kg, t.head)} -> {t.relation} -> {entity_label(kg, t.tail)}"


class Interaction:
    """What one step of a chain does; subclassed by the agent and the explorer.

    Args:
        model: the chat model.
        mkg: the (metered) knowledge graph.
        box: the Graph-CoT toolbox over ``mkg``.
        prompts: the templates by name (:func:`load_prompts`).
        max_context_triples: at most this many triples shown in a prompt.
        temperature: sampling temperature of candidate thoughts when k > 1; None leaves the model's own.
        relation_chain: on the ranked route with a walk length (the agent: 1 hop or more; the explorer:
            2 hops or more), rank the relations as one chain of that length, once, from the chain's start
            (:meth:`_plan`); each hop then takes the chain's relation.
        chain_calibrate: rank the chains calibrated (each chain's score less its score when the question
            is only the entity).
        chain_example: show the chain prompt's worked example (for chains longer than the example's).
    """

    #: the graph's name
    name = "method"
    #: how the agent acts (``tools`` or ``text``); None for the explorer
    mode: str | None = None

    def __init__(
        self,
        model: Any,
        mkg: MeteredKG,
        box: KGToolbox,
        prompts: Mapping[str, ChatPromptTemplate],
        max_context_triples: int,
        temperature: float | None = None,
        *,
        relation_chain: bool = False,
        chain_calibrate: bool = True,
        chain_example: bool = True,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.relation_chain = relation_chain
        self.chain_calibrate = check_calibrate(chain_calibrate)
        self.chain_example = chain_example
        self.kg = mkg
        self.box = box
        self.prompts = prompts
        self.graph_definition = graph_definition(mkg)
        self.max_context_triples = max_context_triples

    def chain_text(self, branch: dict[str, Any]) -> str:
        """The branch's chain as text, for the evaluators, the merge and the final answer."""
        raise NotImplementedError

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        """The LLM call that gives the branch's next step."""
        raise NotImplementedError

    def sampling(self, settings: dict[str, Any]) -> dict[str, Any]:
        """Call options for candidate thoughts: ``temperature`` when several candidates are drawn (k > 1)."""
        if settings.get("k_eff", 1) > 1 and self.temperature is not None:
            return {"temperature": self.temperature}
        return {}

    def ground(
        self, branch: dict[str, Any], output: Any, question: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        """Turn the LLM's output into the child's new step; returns updated branch fields."""
        raise NotImplementedError

    def triples_text(self, branch: dict[str, Any]) -> str:
        """The branch's last ``max_context_triples`` triples, one a line (``(none)`` without any)."""
        triples = branch.get("triples") or []
        triples = triples[-self.max_context_triples :]
        return kg_block(kg_text(triple_text(self.kg, t)) for t in triples) if triples else "(none)"

    def candidates(self, branch: dict[str, Any]) -> dict[str, list[Path]]:
        """The nodes a branch's triples connect to its start entities (shortest paths), by label."""
        triples = list(dict.fromkeys(branch.get("triples") or []))
        starts = list(branch.get("starts") or [])
        ends = {x for t in triples for x in (t.head, t.tail)} - set(starts)
        paths = support_paths(starts, triples, ends, max_hops=PATH_HOPS, shortest=True)
        return answer_candidates(self.kg.label, paths, exclude=starts)

    def _plan(self, question: str, starts: list[str], length: int, trace: dict[str, Any]) -> list[str]:
        """The relation chain of ``length`` hops from ``starts`` the model ranks first (calibrated with
        ``chain_calibrate``: each chain's score less its score when the question is only the entity), as
        the toolbox names the relations (``~relation`` followed backwards); empty when the graph has no
        such chain (the levels then rank relations as usual).

        Ranked hop by hop, a small model takes the relation naming the answer's type first; ranked as
        a whole against the question, the chain's first hops are read with its last.
        """
        chains, truncated = relation_chains(self.kg, starts, length)
        if not chains:
            trace["plan"] = {"chains": 0}
            return []
        entity = ", ".join(kg_text(entity_label(self.kg, e)) for e in starts)
        tpl = self.prompts["explore_plan_relations"]
        example = chain_prompt_example(length, self.chain_example)
        ranking = rank(
            self.model,
            tpl.format_messages(question=question, entity=entity, example=example),
            [relation_chain_text(c) for c in chains],
            role="chain",
            keys=[(tuple(starts), c) for c in chains],
            baseline=tpl.format_messages(question=f"[{entity}]", entity=entity, example=example)
            if self.chain_calibrate
            else None,
        )
        # the relations as the toolbox names them (``~relation`` followed backwards)
        best = [f"{INVERSE_PREFIX}{r}" if d == "in" else r for r, d in chains[ranking.order()[0]]]
        trace["plan"] = {
            "chains": len(chains),
            "example": bool(example),
            "calibrated": bool(ranking.extra.get("calibrated", False)),
            "truncated": truncated,
            "chosen": best,
            "ranking": ranking.as_trace(top=5),
        }
        return best


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


class ExploreInteraction(Interaction):
    """Graph-CoT's automatic exploration (sec. 4.2.2, algorithm 1): a thought per step, then entity
    extraction and linking and ``search_depth`` levels of LLM-pruned breadth-first search.

    Args:
        max_entities: at most this many unvisited entities explored per search level.
        max_relations: at most this many relations kept per entity.
        fanout_limit: at most this many neighbours read per (entity, relation).
        keep_entities: at most this many neighbours kept per (entity, relation).
        relation_chain: on the ranked route with a walk length of 2 hops or more, choose the relations
            as one chain of that length, ranked once from the topic entities (:meth:`_plan`), instead of
            per entity at each level.
        *args, **kwargs: those of :class:`Interaction`.
    """

    name = "graph_explore"

    def __init__(
        self,
        *args: Any,
        max_entities: int,
        max_relations: int,
        fanout_limit: int,
        keep_entities: int,
        relation_chain: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, relation_chain=relation_chain, **kwargs)
        self.max_entities = max_entities
        self.max_relations = max_relations
        self.fanout_limit = fanout_limit
        self.keep_entities = keep_entities

    def chain_text(self, branch: dict[str, Any]) -> str:
        lines = [f"Thought {i}: {st.get('thought', '')}" for i, st in enumerate(branch.get("steps") or [], 1)]
        lines.append("Knowledge Triples:\n" + self.triples_text(branch))
        return "\n".join(lines)

    def _thoughts(self, branch: dict[str, Any]) -> str:
        steps = branch.get("steps") or []
        return "\n".join(f"Thought {i}: {st.get('thought', '')}" for i, st in enumerate(steps, 1)) or "(none)"

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        msgs = self.prompts["explore_thought"].format_messages(
            graph_definition=self.graph_definition,
            question=question,
            triples=self.triples_text(branch),
            thoughts=self._thoughts(branch),
            attributes="; ".join(branch.get("attributes") or []) or "(none)",
        )
        return invoke_llm(self.model, msgs, **self.sampling(settings))

    def ground(
        self, branch: dict[str, Any], output: Any, question: str, settings: dict[str, Any]
    ) -> dict[str, Any]:
        text = str(getattr(output, "content", output) or "").strip()
        parsed = parse_action(text)
        thought = parse_thought(text)
        step: dict[str, Any] = {"thought": thought}
        trace: dict[str, Any] = {}
        ranked = settings.get("decide", "rank") == "rank"
        walk = settings.get("walk_hops")  # None on the papers' route (see nodes.walk_hops)
        if parsed.finish is not None:
            if not ranked or (not walk and ground_answers(parsed.finish, self.candidates(branch))[0]):
                step["action"] = f"Finish[{' | '.join(parsed.finish)}]"
                return {"step": step, "triples": [], "starts": [], "answers": parsed.finish}
            # ranked route: End? (or the walk's length) decides when to stop; a written Finish naming no
            # node the chain reached is dropped (traced) and the step explores as if it had not been written
            trace["thought_finish_dropped"] = parsed.finish
        linked: list[str] = []
        if ranked and branch.get("starts"):
            # ranked route: the search goes on from the nodes the chain has reached (the topic entities on
            # the first step), not from names the model writes in its thought
            trace["extracted"] = "reached entities" if branch.get("steps") else "topic entities"
        else:
            # Entity extraction: from the question on the first step, from the thought afterwards.
            source = thought if branch.get("steps") else f"{question}\n{thought}"
            msg = invoke_llm(self.model, self.prompts["explore_extract"].format_messages(text=source))
            names = parse_bracket_list(str(msg.content))
            for n in names:
                linked.extend(self.box.link(n)[:1])
            trace["extracted"] = names
        trace["linked"] = linked
        visited = list(branch.get("visited") or [])
        seen = list(dict.fromkeys([*(branch.get("seen") or []), *linked]))
        plan, length = branch.get("plan"), int(walk or 0)
        if ranked and self.relation_chain and length >= 2 and plan is None and not branch.get("depth"):
            plan = self._plan(question, seen[: self.max_entities], length, trace)
        ends = None  # a whole chain's ends, walked by the store: the answer's candidates
        if plan and len(plan) == length and not branch.get("depth") and joins_in_engine(self.kg):
            found, new_seen, search_trace, depth, ends = self._walk_plan(seen, visited, plan)
        else:
            found, new_seen, search_trace, depth = self._search(
                question, thought, seen, visited, {**branch, "plan": plan}, settings
            )
        trace["search"] = search_trace
        step["observation"] = "; ".join(kg_text(triple_text(self.kg, t)) for t in found) or "no new triples"
        answers = None
        if ranked and found and search_trace and search_trace[-1].get("end"):
            # End? said the knowledge suffices: the answer is ranked among the entities this step reached
            answers = self._ranked_answer(branch, question, thought, found, trace, ends)
            if answers:
                step["action"] = f"Finish[{' | '.join(map(kg_text, answers))}]"
        return {
            "step": step,
            "triples": found,
            "starts": linked,
            "answers": answers,
            "seen": new_seen,
            "visited": visited,
            "depth": depth,
            "plan": plan,
            "trace": trace,
        }

    def _walk_plan(
        self, seen: list[str], visited: list[str], plan: list[str]
    ) -> tuple[list[Triple], list[str], list[dict[str, Any]], int, list[str]]:
        """The whole relation chain walked by the store (:func:`~kg_agents.core.chains.walk_chain`): its
        ends from the unvisited entities (``fanout_limit`` per entity) with one walk to each, as
        :meth:`_search` returns them (its one level ends the walk), and the ends."""
        todo = [e for e in seen if e not in visited][: self.max_entities]
        visited.extend(todo)
        walk = walk_chain(self.kg, todo, plan, limit=self.fanout_limit)
        found = list(dict.fromkeys(h.triple for p in walk.paths for h in p.hops))
        reached = [h.target for p in walk.paths for h in p.hops]
        rec = {
            "level": 0,
            "entities": todo,
            "by": "whole chain",
            "ends": walk.ends,
            "truncated": walk.truncated,
        }
        return (
            found,
            list(dict.fromkeys([*seen, *reached])),
            [{**rec, "end": True, "end_by": "hops"}],
            len(plan),
            list(dict.fromkeys(p.end for p in walk.paths if p.end is not None)),
        )

    def _ranked_answer(
        self,
        branch: dict[str, Any],
        question: str,
        thought: str,
        found: list[Triple],
        trace: dict[str, Any],
        ends: list[str] | None = None,
    ) -> list[str] | None:
        """The best of the entities ``found`` reached (the ones it started from excluded; ``ends``: only
        these, a whole chain's ends), ranked."""
        origins = set(branch.get("seen") or []) | set(branch.get("starts") or [])
        reached = ends if ends is not None else [x for t in found for x in (t.head, t.tail)]
        labels = list(dict.fromkeys(entity_label(self.kg, x) for x in reached if x not in origins))
        if not labels:
            return None
        triples = [*(branch.get("triples") or []), *found][-self.max_context_triples :]
        chain = f"Thought: {thought}\nKnowledge Triples:\n" + "\n".join(
            kg_text(triple_text(self.kg, t)) for t in triples
        )
        msgs = self.prompts["final_answer"].format_messages(question=question, chain=chain)
        ranking = rank(self.model, msgs, labels, prefix="Answer: ", role="answer", keys=labels)
        trace["answer_ranking"] = ranking.as_trace(top=5)
        return [ranking.best] if ranking.best else None

    def _follow(
        self,
        ent: str,
        chosen: list[str],
        question: str,
        settings: dict[str, Any],
        rec: dict[str, Any],
        found: list[Triple],
        seen: list[str],
        then: str | None = None,
        before: frozenset[str] = frozenset(),
    ) -> None:
        """Follow the ``chosen`` relations of ``ent``, pruning each one's neighbours (entity pruning),
        into ``found`` and ``seen``; truncations and pruning fallbacks go in ``rec``.

        ``before``: the entities the branch reached before this level. A neighbour among them is no
        step forward (the film a writer was reached from, when the question asks for the writer's other
        films; answers never are those entities): it is left out before the pruning, unless every
        neighbour is one (counted in ``rec["turned_back"]``).

        ``then``: the relation chain's next relation. A neighbour without it is off the chain (a film
        with no genre, for a chain that asks its genre next), and so is one whose only neighbours by it
        are ``before`` and ``ent`` (a writer whose only film is the one the walk came from): it is left
        out before the pruning, unless no neighbour goes on (counted in ``rec["off_chain"]``)."""
        for rel in chosen:
            tl = self.kg.neighbors(ent, *toolbox_relation(rel), limit=self.fanout_limit)
            if tl.truncated:
                rec["truncated"].append(f"{ent} {rel}")
            tails = list(tl)
            forward = [t for t in tails if t.other(ent) not in before]
            if forward and len(forward) < len(tails):
                rec.setdefault("turned_back", {})[f"{ent} {rel}"] = len(tails) - len(forward)
                tails = forward
            if then is not None and tails:
                # one read for every neighbour: which of them go on by the next relation to a node the
                # walk has not been at (one more neighbour read than there are such nodes suffices)
                back = before | {ent}
                heads = [t.other(ent) for t in tails]
                limit = min(len(back) + 1, self.fanout_limit)
                nxt = self.kg.neighbors_many(heads, *toolbox_relation(then), limit=limit)
                on_chain = [
                    t
                    for t, h in zip(tails, heads, strict=True)
                    if any(x.other(h) not in back for x in nxt.get(h) or [])
                ]
                if on_chain and len(on_chain) < len(tails):
                    rec.setdefault("off_chain", {})[f"{ent} {rel}"] = len(tails) - len(on_chain)
                    tails = on_chain
            if len(tails) > 1:
                labels = [entity_label(self.kg, t.other(ent)) for t in tails]
                ent_prompt = self.prompts["explore_prune_entities"].format_messages(
                    question=question,
                    head_entity=kg_text(entity_label(self.kg, ent)),
                    relation=kg_text(rel),
                    tail_entities=", ".join(map(kg_text, labels)),
                )
                if settings.get("decide", "rank") == "rank":
                    distinct = list(dict.fromkeys(labels))
                    ranking = rank(
                        self.model,
                        ent_prompt,
                        [f"[{lab}]" for lab in distinct],
                        role="entity",
                        keys=distinct,
                    )
                    best = ranked_answers(ranking, max_answers=self.keep_entities, ratio=KEEP_RATIO)
                    wanted = {b[1:-1].casefold() for b in best}
                else:
                    msg = invoke_llm(self.model, ent_prompt)
                    wanted = {w.casefold() for w in parse_bracket_list(str(msg.content))}
                kept = [t for t, lab in zip(tails, labels, strict=True) if lab.casefold() in wanted]
                if not kept:  # nothing usable selected: keep a bounded prefix, say so
                    kept = tails[: self.keep_entities]
                    rec.setdefault("prune_fallback", []).append(f"{ent} {rel}")
                tails = kept[: self.keep_entities]
            for t in tails:
                found.append(t)
                other = t.other(ent)
                if other not in seen:
                    seen.append(other)

    def _search(
        self,
        question: str,
        thought: str,
        seen: list[str],
        visited: list[str],
        branch: dict[str, Any],
        settings: dict[str, Any],
    ) -> tuple[list[Triple], list[str], list[dict[str, Any]], int]:
        """Algorithm 1: ``search_depth`` BFS levels of relation then entity pruning, End? after each.

        Returns the triples found, the entities seen, a trace record per level, and the chain's depth
        (BFS levels run since its topic entities). With a walk length (``settings["walk_hops"]``, the
        ranked route's ``hops``) End? is not asked: the chain ends once its depth reaches that length.
        """
        found: list[Triple] = []
        trace: list[dict[str, Any]] = []
        depth = int(branch.get("depth") or 0)
        walk = settings.get("walk_hops")  # None on the papers' route
        for level in range(settings["search_depth"]):
            todo = [e for e in seen if e not in visited][: self.max_entities]
            if not todo:
                break
            depth += 1
            rec: dict[str, Any] = {"level": level, "entities": todo, "relations": {}, "truncated": []}
            before = frozenset(seen)  # reached before this level: no step forward (see _follow)
            plan = branch.get("plan") or []
            planned = then = None
            if 0 < depth <= len(plan):  # the ranked chain's relation at this depth, for every entity
                planned = plan[depth - 1]
                then = plan[depth] if depth < len(plan) else None
                rec["by"] = "chain"
            for ent in todo:
                visited.append(ent)
                rels = self.box.neighbor_types(ent)
                if not rels:
                    continue
                if planned is not None:
                    # an entity without the chain's relation is not on the chain: nothing to follow
                    rec["relations"][ent] = chosen = [planned] if planned in rels else []
                    self._follow(ent, chosen, question, settings, rec, found, seen, then, before)
                    continue
                rel_prompt = self.prompts["explore_prune_relations"].format_messages(
                    question=question,
                    entity=kg_text(entity_label(self.kg, ent)),
                    relations=", ".join(map(kg_text, rels)),
                )
                if settings.get("decide", "rank") == "rank":
                    keys = [((ent,), *toolbox_relation(r)) for r in rels]
                    ranking = rank(
                        self.model, rel_prompt, [f"[{r}]" for r in rels], role="relation", keys=keys
                    )
                    top_rels = ranked_answers(ranking, max_answers=self.max_relations, ratio=KEEP_RATIO)
                    chosen = [r[1:-1] for r in top_rels]
                else:
                    msg = invoke_llm(self.model, rel_prompt)
                    chosen = match_relations(parse_bracket_list(str(msg.content)), rels)[: self.max_relations]
                rec["relations"][ent] = chosen
                self._follow(ent, chosen, question, settings, rec, found, seen, before=before)
            trace.append(rec)
            if walk:  # the walk's length decides, not the model
                rec["end"], rec["end_by"] = depth >= walk, "hops"
                if rec["end"]:
                    break
                continue
            triples = [*(branch.get("triples") or []), *found][-self.max_context_triples :]
            end_prompt = self.prompts["explore_end"].format_messages(
                question=question,
                thoughts=thought,
                triples=kg_block(kg_text(triple_text(self.kg, t)) for t in triples) if triples else "(none)",
                attributes="(none)",
            )
            if settings.get("decide", "rank") == "rank":
                reached = tuple(
                    dict.fromkeys(entity_label(self.kg, x) for t in found for x in (t.head, t.tail))
                )
                rec["end"] = (
                    rank(
                        self.model,
                        end_prompt,
                        ["[Yes]", "[No]"],
                        role="end",
                        keys=[(True, reached), (False, reached)],
                    ).best
                    == "[Yes]"
                )
            else:
                rec["end"] = parse_yes(str(invoke_llm(self.model, end_prompt).content))
            if rec["end"]:
                break
        return list(dict.fromkeys(found)), seen, trace, depth

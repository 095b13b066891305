"""Graph-CoT, Graph-ToT and Graph-GoT: ``graph_agent`` and ``graph_explore``.

"Grounding LLM Reasoning with Knowledge Graphs" (Amayuelas et al.; seeds/003, sec. 4, app. B, E, F):
a reasoning strategy (4.1) combined with a way for the LLM to interact with the KG (4.2).

Interaction (what one *step* of a chain does):

- ``graph_agent`` (4.2.1, app. F "Agent"): one LLM call gives a thought and an action (ReAct); the
  action is one of Graph-CoT's ``RetrieveNode``, ``NodeFeature``, ``NeighborCheck``, ``NodeDegree``
  (the tools of :mod:`kg_agents.tools`) or ``Finish[answer]``; its result is the observation.
  A chat model that supports tool calling gets the tools bound (plus a ``Finish`` tool); any other
  model writes the paper's text actions, parsed robustly: a malformed action becomes an observation
  saying what is wrong, and the chain goes on.
- ``graph_explore`` (4.2.2, algorithm 1): one LLM call gives the next thought (or ``Finish[answer]``);
  the entities of the question (first step) or of the thought are extracted by the LLM and linked;
  then ``search_depth`` levels of breadth-first search: for every unvisited seen entity the LLM
  prunes its relations, then for every kept relation prunes the neighbour entities (skipped when
  there is only one); the kept triples are collected; after each level the LLM is asked "End?".

Strategy (how steps are organised), the same for both:

- ``cot``: one chain of at most ``max_steps`` steps (k = t = 1, no evaluation).
- ``tot``: from each kept state, ``k`` candidate next steps (one ``expand`` task each, fanned out
  with ``Send``); among the ``k`` children of a state, the ``t`` best are kept, by the *Selection*
  vote (one LLM call per parent: "The best choice is s") or the *Score* vote (one LLM call per
  candidate: a probability in [0, 1]); at most ``depth`` levels.
- ``got``: as ``tot``, and before evaluation the children of a state are merged pairwise
  ((1, 2), (3, 4), ...; one ``merge`` task and one LLM call per pair, eq. 3): the merged chain's next
  thought becomes a new candidate with both chains as parents.

A state ends when it gives ``Finish[...]``; finished states are not expanded. The run ends when no
kept state is unfinished or the level budget is spent; the answer is that of the best finished
state (highest score for ``score``; first in kept order otherwise), else one final LLM call answers
from the best chain ("the step budget ends the run with the best answer so far").

LLM calls, exactly, when no state finishes early and ``k > t`` (ToT/GoT), levels ``D``, ``S =
sum_{i<D} t**i`` states expanded (the paper's table 5: ``k (t**D - 1)/(t - 1)``):

- agent: ``k*S`` step calls; Selection ``S`` or Score ``k*S`` evaluation calls; GoT adds ``S*(k//2)``
  merge calls (and Score evaluates them: ``(k + k//2)*S``); plus 1 final answer call.
- CoT: ``n`` step calls (+1 final answer call when ``Finish`` never came).
- explore: each step and each merge adds its entity extraction, pruning and End? calls.

Reasoning paths: the triples a chain saw (``NeighborCheck`` results, explored triples) are searched for
paths from the chain's start entities (topic entities, retrieved nodes) to the answers; every path goes
through :func:`~kg_agents.core.nodes.verified_paths_update`.

Example:
    >>> from kg_agents import open_kg
    >>> from kg_agents.methods.graph_cot.graph import create_graph_agent_graph
    >>> kg = open_kg("metaqa")
    >>> g = create_graph_agent_graph(kg, strategy="tot", evaluator="score", k=3, t=1)  # doctest: +SKIP
    >>> g.invoke({"question": "who directed [Splash]"})["answers"]                    # doctest: +SKIP
"""

from __future__ import annotations

import operator
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import ToolException
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send
from pydantic import BaseModel, Field

from kg_agents.core.answers import parse_answers
from kg_agents.core.metering import MeteredKG, invoke_llm, metered
from kg_agents.core.models import default_llm
from kg_agents.core.nodes import resolve_entities, verified_paths_update
from kg_agents.core.prompts import as_prompt
from kg_agents.core.records import error_record, error_update, guarded
from kg_agents.core.state import ErrorRecord, ReasoningInput, ReasoningOutput, ReasoningState
from kg_agents.errors import ConfigError, EntityNotFound, KGAgentsError, KGError
from kg_agents.kg.base import INVERSE_PREFIX, KnowledgeGraph, Path, Triple
from kg_agents.tools.kg_tools import KGToolbox, kg_toolkit

__all__ = [
    "EVALUATORS",
    "STRATEGIES",
    "GraphCoTContext",
    "create_graph_agent_graph",
    "create_graph_explore_graph",
    "parse_action",
    "parse_bracket_list",
    "parse_score",
    "parse_selection",
]

STRATEGIES = ("cot", "tot", "got")
EVALUATORS = ("select", "score")
PROMPT_DIR = "graph_cot"
MAX_LEVELS = 60
_ROOT = "r"


# --------------------------------------------------------------------------- options
@dataclass
class GraphCoTContext:
    """Per-run overrides of the factory's options (``None`` keeps the factory's value).

    Attributes:
        strategy: ``cot``, ``tot`` or ``got``.
        evaluator: ``select`` (Selection vote) or ``score`` (Score vote).
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT).
        search_depth: KG search depth d (``graph_explore``).
    """

    strategy: str | None = None
    evaluator: str | None = None
    k: int | None = None
    t: int | None = None
    depth: int | None = None
    max_steps: int | None = None
    search_depth: int | None = None


def _settings(defaults: dict[str, Any], ctx: GraphCoTContext | None) -> dict[str, Any]:
    """Factory defaults overridden by the run's context, validated; ``ConfigError`` when invalid."""
    s = dict(defaults)
    if ctx is not None:
        for f in fields(GraphCoTContext):
            v = getattr(ctx, f.name, None)
            if v is not None:
                s[f.name] = v
    if s["strategy"] not in STRATEGIES:
        raise ConfigError(f"strategy must be one of {STRATEGIES}, got {s['strategy']!r}")
    if s["evaluator"] not in EVALUATORS:
        raise ConfigError(f"evaluator must be one of {EVALUATORS}, got {s['evaluator']!r}")
    for key in ("k", "t", "depth", "max_steps", "search_depth"):
        v = s[key]
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "search_depth" else 1):
            raise ConfigError(f"{key} must be a positive integer, got {v!r}")
    if s["strategy"] == "cot":
        s.update(k_eff=1, t_eff=1, levels=s["max_steps"])
    else:
        s.update(k_eff=s["k"], t_eff=s["t"], levels=s["depth"])
    if s["levels"] > MAX_LEVELS:
        raise ConfigError(f"at most {MAX_LEVELS} levels (depth/max_steps), got {s['levels']}")
    return s


# --------------------------------------------------------------------------- parsing
_ACTION_NAMES = ("RetrieveNode", "NodeFeature", "NeighborCheck", "NeighbourCheck", "NodeDegree", "Finish")
_ACTION_RE = re.compile(r"\b(" + "|".join(_ACTION_NAMES) + r")\s*[\[\(]([^\]\)\n]*)[\]\)]", re.IGNORECASE)
_LABEL_RE = re.compile(
    r"^\s*(?:\*\*)?\s*(thought|action)\s*\d*\s*(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*", re.IGNORECASE
)


@dataclass
class ParsedAction:
    """A text step, parsed: the thought, the actions ``(name, args)`` or the finish answers, or an error."""

    thought: str
    actions: list[tuple[str, list[str]]]
    finish: list[str] | None = None
    error: str | None = None


def _split_args(name: str, raw: str) -> list[str]:
    raw = raw.strip()
    if name.casefold() in ("retrievenode", "finish"):
        return [raw.strip().strip("'\"")]
    # Node names may contain commas; features and relations do not: split on the last comma.
    head, sep, tail = raw.rpartition(",")
    if not sep:
        return [raw.strip().strip("'\"")]
    return [head.strip().strip("'\""), tail.strip().strip("'\"")]


def parse_action(text: str, *, max_actions: int = 3) -> ParsedAction:
    """Parse a ReAct step ``Thought n: ... Action n: Name[args]`` written by any model.

    Robust to a missing ``Thought``/``Action`` label, parentheses instead of brackets, markdown bold,
    several actions on one line (at most ``max_actions`` are kept), and an imagined continuation
    (everything from ``Observation`` on is dropped). No action gives ``error`` set.

    Example:
        >>> p = parse_action("Thought 1: find it.\\nAction 1: NeighborCheck[Splash, directed_by]")
        >>> p.thought, p.actions
        ('find it.', [('NeighborCheck', ['Splash', 'directed_by'])])
        >>> parse_action("Action: Finish[Ron Howard]").finish
        ['Ron Howard']
    """
    text = str(text or "")
    cut = re.search(r"\n\s*(?:\*\*)?\s*observation\b", text, re.IGNORECASE)
    if cut:
        text = text[: cut.start()]
    matches = list(_ACTION_RE.finditer(text))
    first_action = re.search(r"(?im)^\s*(?:\*\*)?\s*action\s*\d*\s*(?:\*\*)?\s*[:：]", text)
    starts = [m.start() for m in matches[:1]] + ([first_action.start()] if first_action else [])
    stop = min([*starts, len(text)])
    thought = " ".join(_LABEL_RE.sub("", line).strip() for line in text[:stop].splitlines()).strip()
    if not matches:
        if first_action:
            line = text[first_action.start() :].splitlines()[0].strip()
            return ParsedAction(thought, [], error=f"Invalid action {line!r}.")
        return ParsedAction(thought, [], error="No action found.")
    name0 = matches[0].group(1)
    if name0.casefold() == "finish":
        raw = matches[0].group(2)
        answers = [a.strip().strip("'\"") for a in re.split(r"\s*\|\s*|\s*;\s*", raw) if a.strip()]
        return ParsedAction(thought, [], finish=answers)
    actions = [
        (m.group(1), _split_args(m.group(1), m.group(2)))
        for m in matches
        if m.group(1).casefold() != "finish"
    ][:max_actions]
    return ParsedAction(thought, actions)


def parse_bracket_list(text: str) -> list[str]:
    """The comma-separated items of the last ``[...]`` in ``text`` (else of its last non-empty line).

    Example:
        >>> parse_bracket_list("Relevant Entities: [Tom Hanks, Splash]")
        ['Tom Hanks', 'Splash']
    """
    text = str(text or "")
    found = re.findall(r"\[([^\[\]]*)\]", text)
    if found:
        raw = found[-1]
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        raw = re.sub(r"^[^:]*:\s*", "", lines[-1]) if lines else ""
    out = [p.strip().strip("'\"").strip() for p in re.split(r"[,|;]", raw)]
    return list(dict.fromkeys(p for p in out if p))


def parse_score(text: str) -> float | None:
    """The first number of ``text`` as a probability (``80%`` is 0.8; clipped to [0, 1]); None if none.

    Example:
        >>> parse_score("Score: 0.75"), parse_score("80%"), parse_score("no idea")
        (0.75, 0.8, None)
    """
    m = re.search(r"(\d+(?:\.\d+)?|\.\d+)\s*(%?)", str(text or ""))
    if not m:
        return None
    v = float(m.group(1))
    if m.group(2) or v > 1.0:
        v = v / 100.0 if v <= 100.0 else 1.0
    return max(0.0, min(1.0, v))


def parse_selection(text: str, n: int) -> list[int]:
    """Choice ids (1-based) ranked by a Selection vote: the id after "best choice is" first, then the other
    ids the text names, in order; ids outside ``1..n`` are ignored.

    Example:
        >>> parse_selection("Choice 2 looks good. The best choice is 3", 3)
        [3, 2]
    """
    text = str(text or "")
    ranked: list[int] = []
    best = re.findall(r"best choice is\D{0,5}(\d+)", text, re.IGNORECASE)
    if best:
        ranked.append(int(best[-1]))
    ranked += [int(x) for x in re.findall(r"\b(\d+)\b", text)]
    return list(dict.fromkeys(i for i in ranked if 1 <= i <= n))


# --------------------------------------------------------------------------- state
def _merge_dicts(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any]:
    return {**(a or {}), **(b or {})}


class GraphCoTState(ReasoningState, total=False):
    """State of ``graph_agent`` / ``graph_explore``.

    ``frontier``: the kept states (branches) of the current level; ``candidates``: every generated
    state (filtered by level); ``scores``/``votes``: evaluator results; ``finished``: states that gave
    an answer; ``level``: levels done; ``settings``: the validated options of this run.
    """

    settings: dict[str, Any]
    level: int
    frontier: list[dict[str, Any]]
    candidates: Annotated[list[dict[str, Any]], operator.add]
    finished: Annotated[list[dict[str, Any]], operator.add]
    scores: Annotated[dict[str, float], _merge_dicts]
    votes: Annotated[dict[str, list[str]], _merge_dicts]


class Finish(BaseModel):
    """End the task with the answers (node names, not ids or descriptions)."""

    answers: list[str] = Field(description="the answers to the question")


# --------------------------------------------------------------------------- rendering helpers
def _render_agent_steps(steps: Sequence[dict[str, Any]]) -> str:
    out = []
    for i, st in enumerate(steps, 1):
        out.append(f"Thought {i}: {st.get('thought', '')}")
        if st.get("action"):
            out.append(f"Action {i}: {st['action']}")
        if st.get("observation"):
            out.append(f"Observation {i}: {st['observation']}")
    return "\n".join(out)


def _graph_definition(kg: KnowledgeGraph, max_relations: int = 40) -> str:
    rels = list(kg.all_relations())[:max_relations]
    return (
        "nodes are entities (movies, people, genres, years, ...) identified by their names; "
        f"relations: {', '.join(rels)}; write ~relation to follow a relation backwards"
    )


def _triple_text(kg: Any, t: Triple) -> str:
    def lab(e: str) -> str:
        try:
            return str(kg.label(e))
        except EntityNotFound:  # (a failing endpoint is not hidden: it raises)
            return e

    return f"{lab(t.head)} -> {t.relation} -> {lab(t.tail)}"


# --------------------------------------------------------------------------- methods
class _Method:
    """What one step of a chain does; subclassed by the agent and the explorer."""

    name = "method"

    def __init__(
        self,
        model: Any,
        mkg: MeteredKG,
        box: KGToolbox,
        prompts: dict[str, Any],
        max_context_triples: int,
        temperature: float | None = None,
    ) -> None:
        self.model = model
        self.temperature = temperature
        self.kg = mkg
        self.box = box
        self.prompts = prompts
        self.graph_definition = _graph_definition(mkg)
        self.max_context_triples = max_context_triples

    def chain_text(self, branch: dict[str, Any]) -> str:
        raise NotImplementedError

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
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
        triples = branch.get("triples") or []
        triples = triples[-self.max_context_triples :]
        return "\n".join(_triple_text(self.kg, t) for t in triples) or "(none)"


class _AgentMethod(_Method):
    name = "graph_agent"

    def __init__(self, *args: Any, action_mode: str, max_actions: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tools = {
            t.name: t for t in kg_toolkit(self.kg, self.box.index, max_neighbors=self.box.max_neighbors)
        }
        self.bound = None
        self.max_actions = max_actions
        if action_mode not in ("auto", "tools", "text"):
            raise ConfigError(f"action_mode must be 'auto', 'tools' or 'text', got {action_mode!r}")
        if action_mode in ("auto", "tools"):
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
        return _render_agent_steps(branch.get("steps") or [])

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

    def think(self, branch: dict[str, Any], question: str, settings: dict[str, Any]) -> Any:
        if self.mode == "tools":
            return invoke_llm(self.bound, self._messages(branch, question), **self.sampling(settings))
        steps = branch.get("steps") or []
        scratch = _render_agent_steps(steps)
        msgs = self.prompts["agent_step"].format_messages(
            graph_definition=self.graph_definition,
            question=question,
            scratchpad=(scratch + "\n") if scratch else "",
            step=len(steps) + 1,
        )
        return invoke_llm(self.model, msgs, stop=["\nObservation"], **self.sampling(settings))

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
        observations = []
        for name, args in parsed.actions:
            obs, t_, f_ = self._run_action(name, args)
            observations.append(obs)
            triples += t_
            starts += f_
        step["action"] = ", ".join(f"{n}[{', '.join(a)}]" for n, a in parsed.actions)
        step["observation"] = " ".join(observations)
        return {"step": step, "triples": triples, "starts": starts, "answers": None}


class _ExploreMethod(_Method):
    name = "graph_explore"

    def __init__(
        self,
        *args: Any,
        max_entities: int,
        max_relations: int,
        fanout_limit: int,
        keep_entities: int,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
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
        thought = re.split(r"(?i)\b(?:action\s*\d*\s*:\s*)?finish\s*[\[\(]", text)[0].strip()
        thought = _LABEL_RE.sub("", thought).strip() or text
        step: dict[str, Any] = {"thought": thought}
        if parsed.finish is not None:
            step["action"] = f"Finish[{' | '.join(parsed.finish)}]"
            return {"step": step, "triples": [], "starts": [], "answers": parsed.finish}
        trace: dict[str, Any] = {}
        # Entity extraction: from the question on the first step, from the thought afterwards.
        source = thought if branch.get("steps") else f"{question}\n{thought}"
        msg = invoke_llm(self.model, self.prompts["explore_extract"].format_messages(text=source))
        names = parse_bracket_list(str(msg.content))
        linked: list[str] = []
        for n in names:
            linked.extend(self.box.link(n)[:1])
        trace["extracted"] = names
        trace["linked"] = linked
        visited = list(branch.get("visited") or [])
        seen = list(dict.fromkeys([*(branch.get("seen") or []), *linked]))
        found, new_seen, search_trace = self._search(question, thought, seen, visited, branch, settings)
        trace["search"] = search_trace
        step["observation"] = "; ".join(_triple_text(self.kg, t) for t in found) or "no new triples"
        return {
            "step": step,
            "triples": found,
            "starts": linked,
            "answers": None,
            "seen": new_seen,
            "visited": visited,
            "trace": trace,
        }

    def _search(
        self,
        question: str,
        thought: str,
        seen: list[str],
        visited: list[str],
        branch: dict[str, Any],
        settings: dict[str, Any],
    ) -> tuple[list[Triple], list[str], list[dict[str, Any]]]:
        """Algorithm 1: ``search_depth`` BFS levels of relation then entity pruning, End? after each."""
        found: list[Triple] = []
        trace: list[dict[str, Any]] = []
        for level in range(settings["search_depth"]):
            todo = [e for e in seen if e not in visited][: self.max_entities]
            if not todo:
                break
            rec: dict[str, Any] = {"level": level, "entities": todo, "relations": {}, "truncated": []}
            for ent in todo:
                visited.append(ent)
                rels = self.box.neighbor_types(ent)
                if not rels:
                    continue
                msg = invoke_llm(
                    self.model,
                    self.prompts["explore_prune_relations"].format_messages(
                        question=question, entity=self.box._label(ent), relations=", ".join(rels)
                    ),
                )
                chosen = _match_relations(parse_bracket_list(str(msg.content)), rels)[: self.max_relations]
                rec["relations"][ent] = chosen
                for rel in chosen:
                    inverse = rel.startswith(INVERSE_PREFIX)
                    base = rel[len(INVERSE_PREFIX) :] if inverse else rel
                    tl = self.kg.neighbors(ent, base, "in" if inverse else "out", limit=self.fanout_limit)
                    if tl.truncated:
                        rec["truncated"].append(f"{ent} {rel}")
                    tails = list(tl)
                    if len(tails) > 1:
                        labels = [self.box._label(t.other(ent)) for t in tails]
                        msg = invoke_llm(
                            self.model,
                            self.prompts["explore_prune_entities"].format_messages(
                                question=question,
                                head_entity=self.box._label(ent),
                                relation=rel,
                                tail_entities=", ".join(labels),
                            ),
                        )
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
            trace.append(rec)
            triples = [*(branch.get("triples") or []), *found][-self.max_context_triples :]
            msg = invoke_llm(
                self.model,
                self.prompts["explore_end"].format_messages(
                    question=question,
                    thoughts=thought,
                    triples="\n".join(_triple_text(self.kg, t) for t in triples) or "(none)",
                    attributes="(none)",
                ),
            )
            rec["end"] = bool(re.match(r"\W*yes", str(msg.content), re.IGNORECASE))
            if rec["end"]:
                break
        return list(dict.fromkeys(found)), seen, trace


def _match_relations(names: list[str], rels: list[str]) -> list[str]:
    norm = {r.casefold(): r for r in rels}
    out = []
    for n in names:
        key = n.strip().casefold().replace(" ", "_")
        if key in norm:
            out.append(norm[key])
        elif INVERSE_PREFIX + key in norm and key not in norm:
            out.append(norm[INVERSE_PREFIX + key])
    return list(dict.fromkeys(out))


# --------------------------------------------------------------------------- paths
def _paths_to_answers(
    kg: Any, box: KGToolbox, branch: dict[str, Any], answers: Sequence[str], max_hops: int = 4
) -> list[Path]:
    """Shortest paths, through the triples the chain saw, from its start entities to the answers."""
    triples = list(dict.fromkeys(branch.get("triples") or []))
    if not triples:
        return []
    adj: dict[str, list[Triple]] = {}
    for t in triples:
        adj.setdefault(t.head, []).append(t)
        adj.setdefault(t.tail, []).append(t)
    targets: set[str] = set()
    for a in answers:
        targets.update(box.lookup(a)[:3])
    paths: list[Path] = []
    for start in dict.fromkeys(branch.get("starts") or []):
        if start not in adj:
            continue
        prev: dict[str, tuple[str, Triple] | None] = {start: None}
        queue = deque([(start, 0)])
        while queue:
            node, d = queue.popleft()
            if d >= max_hops:
                continue
            for t in adj.get(node, []):
                nxt = t.other(node)
                if nxt not in prev:
                    prev[nxt] = (node, t)
                    queue.append((nxt, d + 1))
        for target in targets:
            if target == start or target not in prev:
                continue
            seq: list[Triple] = []
            cur = target
            while prev[cur] is not None:
                p, t = prev[cur]  # type: ignore[misc]
                seq.append(t)
                cur = p
            paths.append(Path.from_triples(start, list(reversed(seq))))
    return paths


# --------------------------------------------------------------------------- the graph
def _child(
    parent: dict[str, Any],
    cid: str,
    parents: list[str],
    group: str,
    order: tuple[int, int],
    grounded: dict[str, Any],
    steps: list[dict[str, Any]],
    triples: list[Triple],
) -> dict[str, Any]:
    answers = grounded.get("answers")
    return {
        "id": cid,
        "parents": parents,
        "group": group,
        "order": list(order),
        "level": parent.get("level", 0) + 1,
        "steps": [*steps, grounded["step"]],
        "triples": list(dict.fromkeys([*triples, *grounded.get("triples", [])])),
        "starts": list(dict.fromkeys([*(parent.get("starts") or []), *grounded.get("starts", [])])),
        "seen": grounded.get("seen", parent.get("seen") or []),
        "visited": grounded.get("visited", parent.get("visited") or []),
        "attributes": parent.get("attributes") or [],
        "answers": answers,
        "done": answers is not None,
    }


def _halt_prepare(error: Any, **extra: Any) -> dict[str, Any]:
    """The ``prepare`` update that ends a question before any thought: no answers, the error traced."""
    return {"answers": [], "paths": [], "frontier": [], "level": 0, **extra, **error_update("prepare", error)}


def _build_graph(method: _Method, defaults: dict[str, Any], *, index: Any, checkpointer: Any) -> Any:
    kg = method.kg
    box = method.box
    name = method.name

    @metered
    def prepare(state: GraphCoTState, runtime: Runtime[GraphCoTContext]) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        try:
            settings = _settings(defaults, runtime.context)
        except ConfigError as exc:
            return _halt_prepare(exc)
        if not question:
            return _halt_prepare("empty question", settings=settings)
        given = state.get("topic_entities") or []
        errors: list[ErrorRecord] = []
        ids: list[str] = []
        try:
            if given:
                ids, unknown = resolve_entities(kg, index, given)
                if unknown:
                    errors.append(
                        error_record("prepare", f"unknown topic entities {unknown}", type="NoEntity")
                    )
            else:
                for m in re.findall(r"\[([^\[\]]+)\]", question):  # MetaQA marks the topic entity [so]
                    ids.extend(box.lookup(m)[:1])
        except KGError as exc:  # the KG failed (e.g. its endpoint): the question ends here
            return _halt_prepare(exc, settings=settings)
        if not given and not ids and index is not None and hasattr(index, "topic_entities"):
            try:
                ids = list(index.topic_entities(question))
            except KGAgentsError as exc:
                errors.append(error_record("prepare", exc))
        root = {
            "id": _ROOT,
            "parents": [],
            "group": "",
            "order": [0, 0],
            "level": 0,
            "steps": [],
            "triples": [],
            "starts": ids,
            "seen": list(ids),
            "visited": [],
            "attributes": [],
            "answers": None,
            "done": False,
        }
        return {
            "topic_entities": ids,
            "settings": settings,
            "frontier": [root],
            "level": 0,
            "errors": errors,
            "trace": [
                {
                    "node": "prepare",
                    "topic_entities": ids,
                    "strategy": settings["strategy"],
                    "evaluator": settings["evaluator"],
                    "mode": getattr(method, "mode", None),
                }
            ],
        }

    def route_expand(state: GraphCoTState) -> Any:
        settings = state.get("settings")
        frontier = [b for b in state.get("frontier") or [] if not b.get("done")]
        if not settings or not frontier or state.get("level", 0) >= settings["levels"]:
            return "answer"
        return [
            Send(
                "expand",
                {"question": state["question"], "settings": settings, "parent": b, "pos": pos, "j": j},
            )
            for pos, b in enumerate(frontier)
            for j in range(settings["k_eff"])
        ]

    @metered
    def expand(payload: dict[str, Any]) -> dict[str, Any]:
        parent, settings, question = payload["parent"], payload["settings"], payload["question"]
        cid = f"{parent['id']}.{payload['j'] + 1}"
        try:
            out = method.think(parent, question, settings)
            grounded = method.ground(parent, out, question, settings)
        except KGAgentsError as exc:
            return error_update("expand", exc)
        child = _child(
            parent,
            cid,
            [parent["id"]],
            parent["id"],
            (payload["pos"], payload["j"]),
            grounded,
            parent.get("steps") or [],
            parent.get("triples") or [],
        )
        rec = {
            "node": "expand",
            "id": cid,
            "thought": grounded["step"].get("thought", ""),
            "action": grounded["step"].get("action"),
            "done": child["done"],
        }
        if grounded.get("malformed"):
            rec["malformed"] = True
        if grounded.get("trace"):
            rec.update(grounded["trace"])
        return {"candidates": [child], "trace": [rec]}

    def _level_candidates(state: GraphCoTState) -> dict[str, list[dict[str, Any]]]:
        lvl = state.get("level", 0) + 1
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in sorted(
            (c for c in state.get("candidates") or [] if c["level"] == lvl), key=lambda c: tuple(c["order"])
        ):
            groups.setdefault(c["group"], []).append(c)
        return groups

    def collect(state: GraphCoTState) -> dict[str, Any]:
        return {}

    def route_merge(state: GraphCoTState) -> Any:
        settings = state["settings"]
        if settings["strategy"] == "got":
            sends = []
            for group, cands in _level_candidates(state).items():
                firsts = [c for c in cands if len(c["parents"]) == 1 and not c["done"]]
                for m, i in enumerate(range(0, len(firsts) - 1, 2)):
                    sends.append(
                        Send(
                            "merge",
                            {
                                "question": state["question"],
                                "settings": settings,
                                "a": firsts[i],
                                "b": firsts[i + 1],
                                "m": m,
                                "group": group,
                            },
                        )
                    )
            if sends:
                return sends
        return route_evaluate(state)

    @metered
    def merge(payload: dict[str, Any]) -> dict[str, Any]:
        a, b, question, settings = payload["a"], payload["b"], payload["question"], payload["settings"]
        a_steps = a.get("steps") or []
        merged_steps = a_steps + [s for s in b.get("steps") or [] if s not in a_steps]
        base = {
            **a,
            "steps": merged_steps,
            "triples": list(dict.fromkeys([*(a.get("triples") or []), *(b.get("triples") or [])])),
            "starts": list(dict.fromkeys([*(a.get("starts") or []), *(b.get("starts") or [])])),
            "seen": list(dict.fromkeys([*(a.get("seen") or []), *(b.get("seen") or [])])),
            "visited": list(dict.fromkeys([*(a.get("visited") or []), *(b.get("visited") or [])])),
            "level": a["level"] - 1,
        }
        cid = f"{a['id']}+{b['id']}"
        try:
            msg = invoke_llm(
                method.model,
                method.prompts["merge"].format_messages(
                    question=question,
                    chain_1=method.chain_text(a),
                    chain_2=method.chain_text(b),
                    merged_chain=method.chain_text({**base, "steps": merged_steps}),
                ),
            )
            grounded = method.ground(base, msg, question, settings)
        except KGAgentsError as exc:
            return error_update("merge", exc)
        grounded["step"]["merged_from"] = [a["id"], b["id"]]
        child = _child(
            base,
            cid,
            [a["id"], b["id"]],
            payload["group"],
            (a["order"][0], settings["k_eff"] + payload["m"]),
            grounded,
            merged_steps,
            base["triples"],
        )
        return {
            "candidates": [child],
            "trace": [
                {
                    "node": "merge",
                    "id": cid,
                    "parents": [a["id"], b["id"]],
                    "thought": grounded["step"].get("thought", ""),
                    "done": child["done"],
                }
            ],
        }

    def collect_merged(state: GraphCoTState) -> dict[str, Any]:
        return {}

    def route_evaluate(state: GraphCoTState) -> Any:
        settings = state["settings"]
        sends = []
        for group, cands in _level_candidates(state).items():
            if len(cands) <= settings["t_eff"]:
                continue
            if settings["evaluator"] == "score":
                sends += [Send("score", {"question": state["question"], "cand": c}) for c in cands]
            else:
                sends.append(Send("vote", {"question": state["question"], "group": group, "cands": cands}))
        return sends or "select"

    @metered
    def score(payload: dict[str, Any]) -> dict[str, Any]:
        cand = payload["cand"]
        try:
            msg = invoke_llm(
                method.model,
                method.prompts["score_vote"].format_messages(
                    question=payload["question"], thoughts=method.chain_text(cand)
                ),
            )
        except KGAgentsError as exc:  # the state keeps score 0 and the run goes on
            return {"scores": {cand["id"]: 0.0}, **error_update("score", exc)}
        value = parse_score(str(msg.content))
        rec: dict[str, Any] = {"node": "score", "id": cand["id"], "score": value}
        if value is None:
            rec["unparsed"] = str(msg.content)[:200]
        return {"scores": {cand["id"]: 0.0 if value is None else value}, "trace": [rec]}

    @metered
    def vote(payload: dict[str, Any]) -> dict[str, Any]:
        cands = payload["cands"]
        choices = "\n\n".join(f"Choice {i}:\n{method.chain_text(c)}" for i, c in enumerate(cands, 1))
        try:
            msg = invoke_llm(
                method.model,
                method.prompts["select_vote"].format_messages(question=payload["question"], choices=choices),
            )
        except KGAgentsError as exc:  # generation order is kept and the run goes on
            return error_update("vote", exc)
        ranked = parse_selection(str(msg.content), len(cands))
        order = [cands[i - 1]["id"] for i in ranked]
        order += [c["id"] for c in cands if c["id"] not in order]
        return {
            "votes": {payload["group"]: order},
            "trace": [{"node": "vote", "group": payload["group"], "ranking": order, "parsed": bool(ranked)}],
        }

    def select(state: GraphCoTState) -> dict[str, Any]:
        settings = state["settings"]
        scores, votes = state.get("scores") or {}, state.get("votes") or {}
        frontier: list[dict[str, Any]] = []
        finished: list[dict[str, Any]] = []
        kept_ids: list[str] = []
        for group, cands in _level_candidates(state).items():
            if len(cands) > settings["t_eff"]:
                if settings["evaluator"] == "score":
                    cands = sorted(cands, key=lambda c: -scores.get(c["id"], 0.0))
                else:
                    rank = {cid: i for i, cid in enumerate(votes.get(group, []))}
                    cands = sorted(cands, key=lambda c: rank.get(c["id"], len(rank)))
            kept = cands[: settings["t_eff"]]
            for c in kept:
                c = {**c, "score": scores.get(c["id"])}
                kept_ids.append(c["id"])
                (finished if c["done"] else frontier).append(c)
        level = state.get("level", 0) + 1
        return {
            "frontier": frontier,
            "finished": finished,
            "level": level,
            "trace": [{"node": "select", "level": level, "kept": kept_ids}],
        }

    @metered
    @guarded("answer")
    def answer(state: GraphCoTState) -> dict[str, Any]:
        settings = state.get("settings") or {}
        if not (state.get("question") or "").strip() or not settings:
            return {"answers": [], "paths": []}
        finished = state.get("finished") or []
        frontier = state.get("frontier") or []
        use_score = settings.get("evaluator") == "score" and settings.get("strategy") != "cot"
        best: dict[str, Any] | None = None
        if finished:
            best = max(finished, key=lambda c: c.get("score") or 0.0) if use_score else finished[0]
            answers = list(best.get("answers") or [])
            how = "finished"
        else:
            pool = [b for b in frontier if b.get("steps")]
            answers = []
            how = "no state"
            if pool:
                best = max(pool, key=lambda c: c.get("score") or 0.0) if use_score else pool[0]
                chain = method.chain_text(best) or "(none)"
                how = "budget spent: final answer from the best chain"
                try:
                    msg = invoke_llm(
                        method.model,
                        method.prompts["final_answer"].format_messages(
                            question=state["question"], chain=chain
                        ),
                    )
                    answers = parse_answers(str(msg.content))
                except KGAgentsError as exc:
                    failed = error_update("answer", exc)
                    return {"answers": [], "paths": [], **failed}
        answers = [a for a in answers if a][:20]
        paths = _paths_to_answers(kg, box, best, answers) if best else []
        update = verified_paths_update(kg, paths)
        evidence = [_triple_text(kg, t) for t in (best.get("triples") or [])] if best else []
        update["trace"] = [
            {
                "node": "answer",
                "best": best["id"] if best else None,
                "how": how,
                "levels": state.get("level", 0),
            },
            *update["trace"],
        ]
        update.update(answers=answers, evidence=evidence[:100])
        if not answers:
            update["errors"] = [error_record("answer", f"no answer ({how})", type="NoAnswer")]
        return update

    g = StateGraph(
        GraphCoTState,
        context_schema=GraphCoTContext,
        input_schema=ReasoningInput,
        output_schema=ReasoningOutput,
    )
    g.add_node("prepare", prepare)
    g.add_node("expand", expand)
    g.add_node("collect", collect)
    g.add_node("merge", merge)
    g.add_node("collect_merged", collect_merged)
    g.add_node("score", score)
    g.add_node("vote", vote)
    g.add_node("select", select)
    g.add_node("answer", answer)
    g.add_edge(START, "prepare")
    g.add_conditional_edges("prepare", route_expand, ["expand", "answer"])
    g.add_edge("expand", "collect")
    g.add_conditional_edges("collect", route_merge, ["merge", "score", "vote", "select"])
    g.add_edge("merge", "collect_merged")
    g.add_conditional_edges("collect_merged", route_evaluate, ["score", "vote", "select"])
    g.add_edge("score", "select")
    g.add_edge("vote", "select")
    g.add_conditional_edges("select", route_expand, ["expand", "answer"])
    g.add_edge("answer", END)
    compiled = g.compile(checkpointer=checkpointer, name=name)
    return compiled.with_config(recursion_limit=8 * MAX_LEVELS + 20)


def _defaults(
    strategy: str, evaluator: str, k: int, t: int, depth: int, max_steps: int, search_depth: int
) -> dict[str, Any]:
    defaults = {
        "strategy": strategy,
        "evaluator": evaluator,
        "k": k,
        "t": t,
        "depth": depth,
        "max_steps": max_steps,
        "search_depth": search_depth,
    }
    _settings(defaults, None)  # validate now: a bad option is a ConfigError at build time
    return defaults


def _prompts(overrides: dict[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    overrides = dict(overrides or {})
    bad = sorted(set(overrides) - set(names))
    if bad:
        raise ConfigError(f"unknown prompt name(s) {bad}; valid: {', '.join(names)}")
    return {n: as_prompt(overrides.get(n), PROMPT_DIR, n) for n in names}


_COMMON = ("select_vote", "score_vote", "merge", "final_answer")


def create_graph_agent_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    index: Any = None,
    strategy: str = "cot",
    evaluator: str = "score",
    k: int = 3,
    t: int = 1,
    depth: int = 3,
    max_steps: int = 10,
    action_mode: str = "auto",
    max_neighbors: int = 30,
    max_actions: int = 3,
    max_context_triples: int = 40,
    temperature: float | None = 0.7,
    prompts: dict[str, Any] | None = None,
    checkpointer: Any = None,
) -> Any:
    """Graph-CoT/ToT/GoT *agent*: ReAct over the KG tools (sec. 4.2.1, app. F).

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        index: an ``EntityIndex`` for ``RetrieveNode`` and topic entity linking (optional).
        strategy: ``cot`` (one chain), ``tot`` or ``got``.
        evaluator: ``score`` (Score vote) or ``select`` (Selection vote), for ToT/GoT.
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT; the paper's default 10).
        action_mode: ``tools`` (bound tools; the model must support tool calling), ``text`` (the paper's
            ``Action: Name[args]`` lines), or ``auto`` (tools when the model supports them).
        max_neighbors: ``NeighborCheck`` lists at most this many neighbours.
        max_actions: at most this many actions run per step.
        max_context_triples: at most this many triples shown to evaluators and the final answer.
        temperature: sampling temperature of candidate thoughts when k > 1 (so that a greedy model gives
            different candidates); None leaves the model's own setting.
        prompts: overrides of the prompt files (``agent_step``, ``agent_tools``, ``select_vote``,
            ``score_vote``, ``merge``, ``final_answer``): template text, file path or template.
        checkpointer: a LangGraph checkpointer.

    Returns:
        A compiled graph; input ``{"question", "topic_entities"}``, output ``answers``, ``paths``
        (verified), ``evidence``, ``usage``, ``trace``, ``errors``.

    Example:
        >>> g = create_graph_agent_graph(kg, llm=chat, strategy="tot", evaluator="select")  # doctest: +SKIP
        >>> g.invoke({"question": "who directed [Splash]"}, context={"depth": 2})     # doctest: +SKIP
    """
    defaults = _defaults(strategy, evaluator, k, t, depth, max_steps, 0)
    mkg = MeteredKG(kg)
    box = KGToolbox(mkg, index, max_neighbors=max_neighbors)
    templates = _prompts(prompts, ("agent_step", "agent_tools", *_COMMON))
    method = _AgentMethod(
        default_llm(llm),
        mkg,
        box,
        templates,
        max_context_triples,
        temperature,
        action_mode=action_mode,
        max_actions=max_actions,
    )
    return _build_graph(method, defaults, index=index, checkpointer=checkpointer)


def create_graph_explore_graph(
    kg: KnowledgeGraph,
    *,
    llm: Any = None,
    index: Any = None,
    strategy: str = "cot",
    evaluator: str = "score",
    k: int = 3,
    t: int = 1,
    depth: int = 3,
    max_steps: int = 5,
    search_depth: int = 1,
    max_entities: int = 3,
    max_relations: int = 3,
    keep_entities: int = 5,
    fanout_limit: int = 50,
    max_context_triples: int = 40,
    temperature: float | None = 0.7,
    prompts: dict[str, Any] | None = None,
    checkpointer: Any = None,
) -> Any:
    """Graph-CoT/ToT/GoT with *automatic graph exploration* (sec. 4.2.2, algorithm 1).

    Args:
        kg: the knowledge graph.
        llm: a LangChain chat model (default: the embedded local model).
        index: an ``EntityIndex`` for linking (optional; exact and case-folded labels otherwise).
        strategy: ``cot``, ``tot`` or ``got``.
        evaluator: ``score`` or ``select`` (ToT/GoT).
        k: candidate thoughts per state (ToT/GoT).
        t: states kept per parent (ToT/GoT).
        depth: tree depth D (ToT/GoT).
        max_steps: chain length n (CoT).
        search_depth: KG search depth d per step (0 disables the search).
        max_entities: at most this many unvisited entities explored per search level.
        max_relations: at most this many relations kept per entity.
        keep_entities: at most this many neighbours kept per (entity, relation).
        fanout_limit: at most this many neighbours read per (entity, relation) (hubs are cut; traced).
        max_context_triples: at most this many triples shown in a prompt.
        temperature: sampling temperature of candidate thoughts when k > 1; None leaves the model's own.
        prompts: overrides of the prompt files (``explore_thought``, ``explore_extract``,
            ``explore_prune_relations``, ``explore_prune_entities``, ``explore_end``, ``select_vote``,
            ``score_vote``, ``merge``, ``final_answer``).
        checkpointer: a LangGraph checkpointer.

    Example:
        >>> g = create_graph_explore_graph(kg, llm=chat, strategy="got", k=2, t=1, depth=2)  # doctest: +SKIP
        >>> g.invoke({"question": "who directed [Splash]"})["paths"]                          # doctest: +SKIP
    """
    defaults = _defaults(strategy, evaluator, k, t, depth, max_steps, search_depth)
    for key, v in (
        ("max_entities", max_entities),
        ("max_relations", max_relations),
        ("keep_entities", keep_entities),
        ("fanout_limit", fanout_limit),
    ):
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"{key} must be a positive integer, got {v!r}")
    mkg = MeteredKG(kg)
    box = KGToolbox(mkg, index)
    names = (
        "explore_thought",
        "explore_extract",
        "explore_prune_relations",
        "explore_prune_entities",
        "explore_end",
        *_COMMON,
    )
    method = _ExploreMethod(
        default_llm(llm),
        mkg,
        box,
        _prompts(prompts, names),
        max_context_triples,
        temperature,
        max_entities=max_entities,
        max_relations=max_relations,
        fanout_limit=fanout_limit,
        keep_entities=keep_entities,
    )
    return _build_graph(method, defaults, index=index, checkpointer=checkpointer)


def expected_llm_calls(
    strategy: str, evaluator: str, k: int, t: int, depth: int, max_steps: int = 10, final_answer: bool = True
) -> dict[str, int]:
    """LLM calls of ``graph_agent`` when no state finishes early (appendix E, table 5, made exact).

    ``S = sum_{i<D} t**i`` states are expanded (``(t**D - 1)/(t - 1)``); each makes ``k`` step calls;
    GoT adds ``k//2`` merges per expanded state; Selection makes one call per expanded state, Score one
    per candidate (merges included); a final answer call when no chain finished.

    Example:
        >>> expected_llm_calls("tot", "score", k=3, t=2, depth=3)["step"]
        21
    """
    if strategy == "cot":
        out = {"step": max_steps, "merge": 0, "evaluate": 0}
    else:
        s = sum(t**i for i in range(depth))
        merges = s * (k // 2) if strategy == "got" else 0
        per_group = k + (k // 2 if strategy == "got" else 0)
        ev = 0 if per_group <= t else (s if evaluator == "select" else s * per_group)
        out = {"step": k * s, "merge": merges, "evaluate": ev}
    out["final"] = 1 if final_answer else 0
    out["total"] = sum(out.values())
    return out

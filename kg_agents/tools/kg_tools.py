"""LangChain tools over a knowledge graph (Graph-CoT's four actions) and a tool that runs a reasoning graph.

The four actions of Graph-CoT (Jin et al. 2024), as used by the ``graph_agent`` method
(Amayuelas et al., "Grounding LLM Reasoning with Knowledge Graphs", sec. 4.2.1):

- ``RetrieveNode(keyword)``: the id of the node whose label matches ``keyword`` (exact, case-folded,
  then the entity index's semantic search);
- ``NodeFeature(node, feature)``: one textual attribute of a node (``label`` always exists);
- ``NeighborCheck(node, neighbor_type)``: the neighbours of a node along a relation; ``~relation``
  follows the relation backwards (incoming edges);
- ``NodeDegree(node, neighbor_type)``: how many such neighbours.

Every node id, label, feature and relation a tool's text shows is KG text, rendered with
:func:`~kg_agents.untrusted.kg_text` (one line, chat-template tokens and prompt markers neutralised), and
a node may be named back as shown. A bad node id, feature or neighbour type raises a
:class:`~langchain_core.tools.ToolException` with a message the model can act on (valid types, closest
node labels); the tools are built with ``handle_tool_error=True``, so the model receives that message
as the observation, never a traceback.
Long neighbour lists are cut at ``max_neighbors`` and say how many there are.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.testing import CONTRACT_TRIPLES
    >>> tools = {t.name: t for t in kg_toolkit(MemoryKG(CONTRACT_TRIPLES))}
    >>> tools["NeighborCheck"].invoke({"node": "Splash", "neighbor_type": "directed_by"})
    "The directed_by neighbors of Splash are ['Ron Howard']."
    >>> tools["NodeDegree"].invoke({"node": "Tom Hanks", "neighbor_type": "~starred_actors"})
    'Tom Hanks has 4 ~starred_actors neighbors.'
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from kg_agents.core.records import error_text
from kg_agents.core.registry import create_graph
from kg_agents.errors import ConfigError, EntityNotFound, KGAgentsError
from kg_agents.kg.base import INVERSE_PREFIX, KnowledgeGraph, Triple
from kg_agents.untrusted import kg_text

__all__ = [
    "KGToolbox",
    "NeighborCheckInput",
    "NodeDegreeInput",
    "NodeFeatureInput",
    "ReasoningToolInput",
    "RetrieveNodeInput",
    "kg_toolkit",
    "reasoning_tool",
]


class RetrieveNodeInput(BaseModel):
    """Arguments of ``RetrieveNode``."""

    keyword: str = Field(description="the name or a description of the node to find, e.g. 'Tom Hanks'")


class NodeFeatureInput(BaseModel):
    """Arguments of ``NodeFeature``."""

    node: str = Field(description="a node id, as returned by RetrieveNode or NeighborCheck")
    feature: str = Field(description="the attribute to read, e.g. 'label'")


class NeighborCheckInput(BaseModel):
    """Arguments of ``NeighborCheck``."""

    node: str = Field(description="a node id, as returned by RetrieveNode or NeighborCheck")
    neighbor_type: str = Field(
        description="a relation, e.g. 'directed_by'; prefix it with '~' to follow it backwards "
        "(e.g. '~starred_actors' gives the movies an actor starred in)"
    )


class NodeDegreeInput(NeighborCheckInput):
    """Arguments of ``NodeDegree`` (the same as ``NeighborCheck``)."""


class KGToolbox:
    """The logic behind the four Graph-CoT tools, over one knowledge graph.

    Args:
        kg: the knowledge graph (wrap it in ``MeteredKG`` to count calls).
        index: an ``EntityIndex`` (``lookup(label)``, ``link(text, k)``) or None: then labels are
            matched exactly or case-folded, and close matches come from ``difflib``.
        max_neighbors: at most this many neighbours are listed by ``NeighborCheck``.
        max_suggestions: how many close matches an error message names.
    """

    def __init__(
        self, kg: KnowledgeGraph, index: Any = None, *, max_neighbors: int = 30, max_suggestions: int = 5
    ) -> None:
        if max_neighbors < 1:
            raise ValueError("max_neighbors must be >= 1")
        self.kg = kg
        self.index = index
        self.max_neighbors = max_neighbors
        self.max_suggestions = max_suggestions
        self._folded: dict[str, list[str]] | None = None
        self._display: dict[str, str] = {}

    # ------------------------------------------------------------------ linking helpers
    def _label_map(self) -> dict[str, list[str]]:
        if self._folded is None:
            folded: dict[str, list[str]] = {}
            for eid, label in self.kg.iter_labels():
                key = label.casefold().strip()
                folded.setdefault(key, []).append(eid)
                self._display.setdefault(key, label)
                shown = kg_text(label).casefold()  # the label as the tools show it names the node too
                if shown != key:
                    folded.setdefault(shown, []).append(eid)
            self._folded = folded
        return self._folded

    def lookup(self, text: str) -> list[str]:
        """Entity ids whose label is ``text`` (exact id, then index lookup or case-folded label)."""
        text = text.strip()
        if not text:
            return []
        if self.kg.has_entity(text):
            return [text]
        if self.index is not None:
            try:
                found = list(self.index.lookup(text))
            except KGAgentsError:
                found = []
            if found:
                return found
        return list(self._label_map().get(text.casefold(), []))

    def link(self, text: str, min_score: float = 0.8) -> list[str]:
        """:meth:`lookup`, else the index's best semantic match when its score is at least ``min_score``."""
        ids = self.lookup(text)
        if ids or self.index is None or not hasattr(self.index, "link") or not text.strip():
            return ids
        try:
            hits = self.index.link(text, 1)
        except KGAgentsError:
            return []
        return [str(getattr(h, "id", h)) for h in hits[:1] if float(getattr(h, "score", 1.0)) >= min_score]

    def suggestions(self, text: str) -> list[str]:
        """Labels of the nodes closest to ``text`` (index search when there is one, else difflib)."""
        if self.index is not None and hasattr(self.index, "link"):
            try:
                hits = self.index.link(text, self.max_suggestions)
            except KGAgentsError:
                hits = []
            out = []
            for h in hits:
                eid = h[0] if isinstance(h, tuple) else getattr(h, "id", h)
                out.append(self._label(str(eid)))
            if out:
                return out
        close = difflib.get_close_matches(
            text.casefold(), list(self._label_map()), n=self.max_suggestions, cutoff=0.6
        )
        return [self._display.get(c, c) for c in close]

    def _label(self, eid: str) -> str:
        try:
            return self.kg.label(eid)
        except EntityNotFound:  # (a failing endpoint is not hidden: it raises)
            return eid

    def _node(self, node: str) -> str:
        node = str(node).strip().strip("'\"").strip()
        if self.kg.has_entity(node):
            return node
        ids = self.lookup(node)
        if ids:
            return ids[0]
        close = self.suggestions(node)
        msg = f"There is no node {kg_text(node)!r} in the graph."
        if close:
            msg += " Closest nodes: " + ", ".join(repr(kg_text(c)) for c in close) + "."
        msg += " Use RetrieveNode to find a node id."
        raise ToolException(msg)

    def _relation(self, node: str, neighbor_type: str) -> tuple[str, str]:
        """``(relation, direction)`` for ``neighbor_type``; ToolException naming the valid types."""
        raw = str(neighbor_type).strip().strip("'\"").strip()
        inverse = raw.startswith(INVERSE_PREFIX)
        rel = raw[len(INVERSE_PREFIX) :].strip() if inverse else raw
        known = self.kg.all_relations()
        if rel not in known:
            norm = {r.casefold().replace(" ", "_").replace("-", "_"): r for r in known}
            rel = norm.get(rel.casefold().replace(" ", "_").replace("-", "_"), rel)
        if rel not in known:
            raise ToolException(
                f"Unknown neighbor type {kg_text(raw)!r}. The neighbor types of {kg_text(node)} are: "
                + ", ".join(map(kg_text, self.neighbor_types(node)))
                + "."
            )
        return rel, ("in" if inverse else "out")

    def neighbor_types(self, node: str) -> list[str]:
        """The relations of ``node``: outgoing ones, then incoming ones written ``~relation``."""
        out = list(self.kg.relations(node, "out"))
        inc = [INVERSE_PREFIX + r for r in self.kg.relations(node, "in")]
        return out + inc

    # ------------------------------------------------------------------ the four actions
    def retrieve_node(self, keyword: str) -> str:
        """RetrieveNode[keyword]."""
        keyword = str(keyword).strip().strip("'\"").strip()
        if not keyword:
            raise ToolException("RetrieveNode needs a non-empty keyword.")
        ids = self.lookup(keyword)
        if not ids and self.index is not None and hasattr(self.index, "link"):
            try:
                hits = self.index.link(keyword, 1)
            except KGAgentsError:
                hits = []
            ids = [str(h[0] if isinstance(h, tuple) else getattr(h, "id", h)) for h in hits]
        if not ids:
            close = self.suggestions(keyword)
            msg = f"No node matches {kg_text(keyword)!r}."
            if close:
                msg += " Closest nodes: " + ", ".join(repr(kg_text(c)) for c in close) + "."
            raise ToolException(msg)
        if len(ids) == 1:
            return f"The ID of the node is {kg_text(ids[0])}."
        return f"The IDs of the matching nodes are {[kg_text(i) for i in ids[: self.max_neighbors]]}."

    def node_feature(self, node: str, feature: str) -> str:
        """NodeFeature[node, feature]."""
        eid = self._node(node)
        feats = self.kg.features(eid)
        key = str(feature).strip().strip("'\"").strip()
        if key not in feats:
            alias = {"name": "label", "title": "label"}.get(key.casefold(), key.casefold())
            key = next((k for k in feats if k.casefold() == alias), key)
        if key not in feats:
            names = ", ".join(kg_text(f) for f in sorted(feats))
            raise ToolException(
                f"Node {kg_text(eid)} has no feature {kg_text(feature)!r}. Its features are: {names}."
            )
        return f"The {kg_text(key)} of {kg_text(eid)} is {kg_text(feats[key])}."

    def neighbor_check(self, node: str, neighbor_type: str) -> str:
        """NeighbourCheck[node, neighbor_type]."""
        return self.neighbor_triples(node, neighbor_type)[0]

    def neighbor_triples(self, node: str, neighbor_type: str) -> tuple[str, list[Triple]]:
        """NeighbourCheck's observation and the KG triples it shows (for reasoning paths)."""
        eid = self._node(node)
        rel, direction = self._relation(eid, neighbor_type)
        triples = self.kg.neighbors(eid, rel, direction, limit=self.max_neighbors)  # type: ignore[arg-type]
        names = [kg_text(t.other(eid)) for t in triples]
        label = kg_text((INVERSE_PREFIX if direction == "in" else "") + rel)
        shown = kg_text(eid)
        if not names:
            types = ", ".join(map(kg_text, self.neighbor_types(eid)))
            return f"{shown} has no {label} neighbors. Its neighbor types are: {types}.", []
        text = f"The {label} neighbors of {shown} are {names}"
        if triples.truncated:
            total = triples.total
            if total is None:
                total = self.kg.degree(eid, rel, direction)  # type: ignore[arg-type]
            text += f" (the first {len(names)} of {total})"
        return text + ".", list(triples)

    def node_degree(self, node: str, neighbor_type: str) -> str:
        """NodeDegree[node, neighbor_type]."""
        eid = self._node(node)
        rel, direction = self._relation(eid, neighbor_type)
        n = self.kg.degree(eid, rel, direction)  # type: ignore[arg-type]
        label = kg_text((INVERSE_PREFIX if direction == "in" else "") + rel)
        return f"{kg_text(eid)} has {n} {label} neighbors."

    def run(self, action: str, args: Sequence[str]) -> tuple[str, list[Triple]]:
        """Run an action by name; returns ``(observation, triples shown)``.

        Names: ``RetrieveNode``, ``NodeFeature``, ``NeighborCheck`` (or ``NeighbourCheck``), ``NodeDegree``.
        Raises ``ToolException`` for an unknown action, a wrong number of arguments or a bad argument.
        """

        def plain(fn: Callable[..., str]) -> Callable[..., tuple[str, list[Triple]]]:
            return lambda *a: (fn(*a), [])

        table: dict[str, tuple[Callable[..., tuple[str, list[Triple]]], int]] = {
            "retrievenode": (plain(self.retrieve_node), 1),
            "nodefeature": (plain(self.node_feature), 2),
            "neighborcheck": (self.neighbor_triples, 2),
            "neighbourcheck": (self.neighbor_triples, 2),
            "nodedegree": (plain(self.node_degree), 2),
        }
        key = action.strip().casefold()
        if key not in table:
            raise ToolException(
                f"Unknown action {action!r}. Valid actions: RetrieveNode[keyword], "
                "NodeFeature[node, feature], "
                "NeighborCheck[node, neighbor_type], NodeDegree[node, neighbor_type], Finish[answer]."
            )
        fn, arity = table[key]
        if arity == 1:
            args = [", ".join(args)]
        if len(args) != arity:
            raise ToolException(f"{action} takes {arity} arguments, got {len(args)}: {list(args)}.")
        return fn(*args)


def kg_toolkit(
    kg: KnowledgeGraph, index: Any = None, *, max_neighbors: int = 30, max_suggestions: int = 5
) -> list[BaseTool]:
    """The four Graph-CoT tools over ``kg``, as LangChain tools with pydantic argument schemas.

    Args:
        kg: the knowledge graph.
        index: an ``EntityIndex`` for ``RetrieveNode`` and close-match suggestions (optional).
        max_neighbors: ``NeighborCheck`` lists at most this many neighbours (and says how many there are).
        max_suggestions: how many close matches an error names.

    Returns:
        ``[RetrieveNode, NodeFeature, NeighborCheck, NodeDegree]``; errors the model can fix come back as
        the tool's output (``handle_tool_error=True``).

    Example:
        >>> from langgraph.prebuilt import create_react_agent         # doctest: +SKIP
        >>> agent = create_react_agent(chat_model, kg_toolkit(kg))    # doctest: +SKIP
    """
    box = KGToolbox(kg, index, max_neighbors=max_neighbors, max_suggestions=max_suggestions)
    specs: list[tuple[str, Callable[..., str], type[BaseModel], str]] = [
        (
            "RetrieveNode",
            box.retrieve_node,
            RetrieveNodeInput,
            "Find the node of the knowledge graph whose name matches the keyword; returns its id.",
        ),
        (
            "NodeFeature",
            box.node_feature,
            NodeFeatureInput,
            "Return one textual attribute (feature) of a node, e.g. its 'label'.",
        ),
        (
            "NeighborCheck",
            box.neighbor_check,
            NeighborCheckInput,
            "List the neighbours of a node along one relation (neighbor_type); "
            "'~relation' follows it backwards.",
        ),
        (
            "NodeDegree",
            box.node_degree,
            NodeDegreeInput,
            "Count the neighbours of a node along one relation (neighbor_type); "
            "'~relation' follows it backwards.",
        ),
    ]
    return [
        StructuredTool.from_function(
            func=fn, name=name, description=desc, args_schema=schema, handle_tool_error=True
        )
        for name, fn, schema, desc in specs
    ]


# --------------------------------------------------------------------------- reasoning_tool
class ReasoningToolInput(BaseModel):
    """Arguments of a reasoning tool."""

    question: str = Field(description="the question, in natural language")
    topic_entities: list[str] | None = Field(
        default=None, description="the names of the question's topic entities, when known"
    )


def reasoning_tool(
    graph: Any,
    *,
    name: str = "kg_reasoning",
    description: str = "Answer a question from the knowledge graph. Returns the answers and the reasoning "
    "paths in the graph that support them.",
    max_paths: int = 5,
    config: dict[str, Any] | None = None,
    kg: Any = None,
    **options: Any,
) -> BaseTool:
    """Wrap a reasoning graph (any registered method, compiled) as one tool for a chat agent.

    Args:
        graph: a compiled reasoning graph (``create_graph("graph_rag", kg, ...)``).
        name: the tool's name.
        description: the tool's description.
        max_paths: how many supporting paths the tool's text lists.
        config: a LangGraph run config passed to every invocation.
        kg: with ``graph`` given as a registered method name, the knowledge graph to build it over.
        **options: with ``graph`` given as a name, the method's options (``llm=...``, ``strategy=...``).

    Returns:
        A ``StructuredTool``; the text lists answers and paths; the full graph output is the artifact.
        A run that ends with no answer and recorded errors comes back as a ``ToolException`` message.

    Example:
        >>> tool = reasoning_tool("graph_agent", kg=kg, llm=chat_model, strategy="tot")  # doctest: +SKIP
        >>> tool.invoke({"question": "who directed [Splash]"})                    # doctest: +SKIP
        'Answers: Ron Howard\\nPaths:\\nSplash -> directed_by -> Ron Howard'
    """

    if isinstance(graph, str):
        if kg is None:
            raise ConfigError(f"reasoning_tool({graph!r}) needs kg=... to build the graph")
        graph = create_graph(graph, kg, **options)
    elif options or kg is not None:
        raise ConfigError("kg and options are only accepted with a method name, not a compiled graph")

    def _render(out: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        answers = list(out.get("answers") or [])
        errors = list(out.get("errors") or [])
        if not answers and errors:
            raise ToolException("The reasoning graph found no answer: " + "; ".join(map(error_text, errors)))
        text = "Answers: " + (" | ".join(map(kg_text, answers)) if answers else "(none found)")
        paths = [kg_text(p.to_text()) for p in (out.get("paths") or [])][:max_paths]
        if paths:
            text += "\nPaths:\n" + "\n".join(paths)
        return text, out

    def _inputs(question: str, topic_entities: list[str] | None) -> dict[str, Any]:
        if not question or not question.strip():
            raise ToolException("The question is empty.")
        return {"question": question, "topic_entities": topic_entities}

    def run(question: str, topic_entities: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        return _render(graph.invoke(_inputs(question, topic_entities), config))

    async def arun(question: str, topic_entities: list[str] | None = None) -> tuple[str, dict[str, Any]]:
        return _render(await graph.ainvoke(_inputs(question, topic_entities), config))

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=description,
        args_schema=ReasoningToolInput,
        response_format="content_and_artifact",
        handle_tool_error=True,
    )

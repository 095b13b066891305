"""What the agent and the explorer share: the prompts, the labels and triples as text, the
:class:`Interaction` base (its step protocol, candidates and relation-chain plan).

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
from typing import Any

from langchain_core.prompts import ChatPromptTemplate

from kg_agents.core.chains import chain_example as chain_prompt_example
from kg_agents.core.chains import chain_text as relation_chain_text
from kg_agents.core.chains import relation_chains, relation_path
from kg_agents.core.decide import answer_candidates, check_calibrate, rank
from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import PromptLike, prompt_templates
from kg_agents.core.support import support_paths
from kg_agents.errors import EntityNotFound
from kg_agents.kg.base import INVERSE_PREFIX, Direction, KnowledgeGraph, Path, Triple, labels_of
from kg_agents.tools.kg_tools import KGToolbox
from kg_agents.untrusted import kg_block, kg_text

__all__ = [
    "AGENT_PROMPTS",
    "COMMON_PROMPTS",
    "EXPLORE_PROMPTS",
    "PATH_HOPS",
    "PROMPT_DIR",
    "Interaction",
    "entity_label",
    "entity_labels",
    "graph_definition",
    "load_prompts",
    "toolbox_relation",
    "triple_text",
    "triple_texts",
]

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


def entity_labels(kg: Any, entities: Sequence[str]) -> list[str]:
    """:func:`entity_label` of each entity, in order, read in batches where the store reads labels so."""
    try:
        return labels_of(kg, entities)
    except EntityNotFound:
        return [entity_label(kg, e) for e in entities]


def triple_texts(kg: Any, triples: Sequence[Triple]) -> list[str]:
    """:func:`triple_text` of each triple, the entities' labels read in batches where the store reads
    labels so."""
    ends = list(dict.fromkeys(x for t in triples for x in (t.head, t.tail)))
    names = dict(zip(ends, entity_labels(kg, ends), strict=True))
    return [f"{names[t.head]} -> {t.relation} -> {names[t.tail]}" for t in triples]


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
    #: whether it takes the ``revisit`` setting (a relation chain walked as the graph executes it)
    revisits = False

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
        return kg_block(kg_text(x) for x in triple_texts(self.kg, triples)) if triples else "(none)"

    def candidates(self, branch: dict[str, Any]) -> dict[str, list[Path]]:
        """The nodes a branch's triples connect to its start entities (shortest paths), by label; a branch
        that walked a relation chain with ``revisit``: the chain's ends, each with its walk."""
        if branch.get("walks"):
            walks = [Path.from_text(t) for ts in branch["walks"].values() for t in ts]
            return answer_candidates(self.kg.label, walks)
        triples = list(dict.fromkeys(branch.get("triples") or []))
        starts = list(branch.get("starts") or [])
        ends = {x for t in triples for x in (t.head, t.tail)} - set(starts)
        paths = support_paths(starts, triples, ends, max_hops=PATH_HOPS, shortest=True)
        return answer_candidates(self.kg.label, paths, exclude=starts)

    def rank_chains(
        self, question: str, starts: list[str], lengths: Sequence[int], *, revisit: bool = False
    ) -> tuple[list[list[str]], dict[str, Any]]:
        """The relation chains of each of ``lengths`` hops from ``starts``, ranked against the whole
        ``question`` by the model (the ``explore_plan_relations`` prompt; calibrated with
        ``chain_calibrate``: each chain's score less its score when the question is only the entity),
        best first, as the toolbox names the relations (``~relation`` followed backwards), and what to
        trace of it; no chains when the graph has none of those lengths (no model call then). ``revisit``
        lists the chains as :func:`~kg_agents.core.chains.relation_chains` does with it.
        """
        chains: list[Any] = []
        truncated = False
        for length in lengths:
            found, cut = relation_chains(self.kg, starts, length, revisit=revisit)
            chains += found
            truncated = truncated or cut
        if not chains:
            return [], {"chains": 0}
        entity = ", ".join(kg_text(entity_label(self.kg, e)) for e in starts)
        tpl = self.prompts["explore_plan_relations"]
        example = chain_prompt_example(max(lengths), self.chain_example)
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
        ordered = [relation_path(chains[i]) for i in ranking.order()]
        info = {
            "chains": len(chains),
            "example": bool(example),
            "calibrated": bool(ranking.extra.get("calibrated", False)),
            "truncated": truncated,
            "chosen": ordered[0],
            "ranking": ranking.as_trace(top=5),
        }
        return ordered, info

    def _plan(
        self, question: str, starts: list[str], length: int, trace: dict[str, Any], revisit: bool = False
    ) -> list[str]:
        """The relation chain of ``length`` hops from ``starts`` the model ranks first
        (:meth:`rank_chains`); empty when the graph has no such chain (the levels then rank relations
        as usual).

        Ranked hop by hop, a small model takes the relation naming the answer's type first; ranked as
        a whole against the question, the chain's first hops are read with its last.
        """
        ordered, trace["plan"] = self.rank_chains(question, starts, [length], revisit=revisit)
        return ordered[0] if ordered else []

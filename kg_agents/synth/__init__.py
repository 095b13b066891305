"""Questions from a knowledge graph alone, to specialise every method to a user's own graph.

Relation paths are found by seeded random walks, executed for their complete answer sets, filtered,
balanced across paths and hop counts, and phrased from the relation names (optionally paraphrased by a
chat model, once per relation path). See ``docs/own_kg.md`` ("Questions from the graph").

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("Film", "directed_by", "Ann"), ("Film", "has_genre", "Drama")])
    >>> result = synthesise(kg, n=4, hops=(1,), min_topics=1, validation_fraction=0.0)
    >>> sorted(q.relation_path for q in result.questions)
    ['directed_by', 'has_genre', '~directed_by', '~has_genre']
    >>> [(q.question, q.answers) for q in result.questions if q.relation_path == "has_genre"]
    [('what is the genre of [Film]?', ('Drama',))]
"""

from kg_agents.synth.generate import FILTERS, SYNTHESISED_KINDS, check_chain, synthesise
from kg_agents.synth.labels import read_topic_labels
from kg_agents.synth.phrase import check_form, fill_form, generic_forms, humanise, paraphrase_forms, phrase
from kg_agents.synth.questions import (
    QUESTION_KINDS,
    SynthQuestion,
    SynthResult,
    read_questions,
    write_questions,
)
from kg_agents.synth.schemas import (
    PathSchema,
    execute,
    format_relation_path,
    parse_relation_path,
    sample_relation_paths,
)

__all__ = [
    "FILTERS",
    "QUESTION_KINDS",
    "SYNTHESISED_KINDS",
    "PathSchema",
    "SynthQuestion",
    "SynthResult",
    "check_chain",
    "check_form",
    "execute",
    "fill_form",
    "format_relation_path",
    "generic_forms",
    "humanise",
    "paraphrase_forms",
    "parse_relation_path",
    "phrase",
    "read_questions",
    "read_topic_labels",
    "sample_relation_paths",
    "synthesise",
    "write_questions",
]

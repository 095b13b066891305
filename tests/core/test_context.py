"""Per-run context merging: fields a run sets override the factory's; the rest keep the factory's values."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from kg_agents.core.context import merge_context, run_context
from kg_agents.errors import ConfigError


@dataclass
class Ctx:
    num_beams: int | None = None
    max_answers: int | None = None
    strategy: str | None = None


DEFAULTS = Ctx(num_beams=5, max_answers=10, strategy="cot")


def test_unset_fields_keep_the_factory_values():
    assert merge_context(DEFAULTS, {"max_answers": 3}) == Ctx(num_beams=5, max_answers=3, strategy="cot")
    assert merge_context(DEFAULTS, Ctx(max_answers=3)) == Ctx(num_beams=5, max_answers=3, strategy="cot")
    assert merge_context(DEFAULTS, None) is DEFAULTS
    assert merge_context(DEFAULTS, {"strategy": None}) == DEFAULTS  # None means "not set"


def test_run_context_reads_the_runtime():
    assert run_context(SimpleNamespace(context={"num_beams": 2}), DEFAULTS).num_beams == 2
    assert run_context(SimpleNamespace(context=None), DEFAULTS) is DEFAULTS
    assert run_context(None, DEFAULTS) is DEFAULTS


def test_unknown_fields_and_foreign_types_are_config_errors():
    with pytest.raises(ConfigError, match=r"unknown context field.*'beams'.*valid: max_answers, num_beams"):
        merge_context(DEFAULTS, {"beams": 3})

    @dataclass
    class Other:
        num_beams: int | None = None

    with pytest.raises(ConfigError, match="must be a Ctx or a mapping"):
        merge_context(DEFAULTS, Other(num_beams=1))

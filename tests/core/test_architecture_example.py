"""The "adding a method" skeleton in docs/architecture.md runs as written (with the fake chat model)."""

from __future__ import annotations

import re
from pathlib import Path

from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.fakes import FakeChat

DOC = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def test_the_skeleton_method_answers_with_a_verified_path():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    nodes = next(b for b in blocks if "class MyMethodDeps" in b)
    graph = next(b for b in blocks if "def create_my_method_graph" in b)
    ns: dict = {}
    exec(nodes, ns)
    exec(
        graph.replace("from kg_agents.methods.my_method.nodes import MyMethodDeps, answer, retrieve\n", ""),
        ns,
    )
    llm = FakeChat(default="Answer: Ron Howard")
    g = ns["create_my_method_graph"](
        MemoryKG(CONTRACT_TRIPLES), llm=llm, prompts={"answer": "{question}\n{knowledge}"}
    )
    out = g.invoke(
        {"question": "who directed Splash", "topic_entities": ["Splash"]}, context={"max_triples": 5}
    )
    assert out["answers"] == ["Ron Howard"] and out["usage"]["llm_calls"] == 1
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert "Splash" in llm.prompts[0] and llm.prompts[0].count("\n") <= 5  # max_triples came from the run

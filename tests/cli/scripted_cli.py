"""``python -m tests.cli.scripted_cli ARGS``: the ``kg-agents`` command with a scripted chat model.

The kill-and-resume tests run it as a subprocess so that they can SIGKILL or SIGINT it. Every model the
command resolves is a :class:`~tests.fakes.FakeChat` that answers each question about a film of the
contract KG with that film's director (so a run's answers are exact and known in advance).

``SCRIPTED_CLI_SLOW`` (comma-separated: ``predictions``, ``torch``, ``npz``) and
``SCRIPTED_CLI_PAUSE`` (seconds) make those writes slow: each writes its first half, flushes, pauses,
then writes the rest, so that a kill can land inside a write. Only this test helper does that; the
package has no such hook. ``SCRIPTED_CLI_BYTE_TOKENIZER=1`` gives ``build-tries`` :class:`ByteTokenizer`
instead of the local model's tokenizer (which takes seconds to load, on every restart), and
``SCRIPTED_CLI_HASH_ENCODER=1`` gives ``train dualr`` :class:`HashEncoder` instead of the sentence
encoder, for the same reason.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kg_agents.cli import commands as cli
from kg_agents.cli import setup as cli_setup
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.fakes import FakeChat

DIRECTORS = {h: t for h, r, t in CONTRACT_TRIPLES if r == "directed_by"}


def write_contract_kg(path: Path) -> Path:
    """The contract KG as a triples file at ``path`` (head, relation, tail by tabs, a triple a line)."""
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in CONTRACT_TRIPLES), encoding="utf-8")
    return path


def contract_questions(templates: Mapping[str, str]) -> list[tuple[str, str, list[str]]]:
    """``(question, topic entity, answers)`` for each (head, relation) of the contract KG whose relation has
    a question template (``"who directed [{}]"``, formatted with the head), in the triples' order."""
    gold: dict[tuple[str, str], list[str]] = defaultdict(list)
    for h, r, t in CONTRACT_TRIPLES:
        if r in templates:
            gold[(h, r)].append(t)
    return [(templates[r].format(h), h, ts) for (h, r), ts in gold.items()]


RULES = {f"[{film}]": f"Answer: {who}" for film, who in DIRECTORS.items()}
PAUSE = float(os.environ.get("SCRIPTED_CLI_PAUSE") or 0)
SLOW = {s.strip() for s in (os.environ.get("SCRIPTED_CLI_SLOW") or "").split(",") if s.strip()}


def _write_in_two(fh: Any, data: Any) -> None:
    half = len(data) // 2
    fh.write(data[:half])
    fh.flush()
    time.sleep(PAUSE)
    fh.write(data[half:])
    fh.flush()


class _SlowAppend:
    """A text file opened for appending whose every write is cut in two by a pause."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def write(self, text: str) -> int:
        _write_in_two(self._fh, text)
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> _SlowAppend:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._fh.close()


class ByteTokenizer:
    """A tokenizer whose tokens are the UTF-8 bytes of the text (what KG-Tries need of one)."""

    def __len__(self) -> int:
        return 256

    def __call__(self, text: str | list[str], add_special_tokens: bool = False) -> dict[str, Any]:
        texts = [text] if isinstance(text, str) else text
        ids = [list(t.encode("utf-8")) for t in texts]
        return {"input_ids": ids[0] if isinstance(text, str) else ids}


class HashEncoder:
    """A text encoder: the normalised sum of one fixed random vector per word (seeded by the word)."""

    name = "hash-words"
    dim = 32

    def __call__(self, texts: Any) -> Any:
        import zlib

        import numpy as np

        out = np.zeros((len(texts), self.dim), np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i] += np.random.default_rng(zlib.crc32(word.encode())).standard_normal(self.dim)
            out[i] /= max(float(np.linalg.norm(out[i])), 1e-6)
        return out


def _slow_down() -> None:
    if "predictions" in SLOW:
        from kg_agents.eval import runner

        def slow_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            fh = open(file, mode, *args, **kwargs)  # noqa: SIM115 - closed by the wrapper
            return _SlowAppend(fh) if "a" in mode else fh

        runner.open = slow_open  # type: ignore[attr-defined]
    if "torch" in SLOW:
        import torch

        save = torch.save

        def slow_save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> None:
            buf = io.BytesIO()
            save(obj, buf, *args, **kwargs)
            with open(f, "wb") as fh:
                _write_in_two(fh, buf.getvalue())

        torch.save = slow_save
    if "npz" in SLOW:
        import numpy as np

        savez = np.savez_compressed

        def slow_savez(file: Any, *args: Any, **kwargs: Any) -> None:
            buf = io.BytesIO()
            savez(buf, *args, **kwargs)
            _write_in_two(file, buf.getvalue())

        np.savez_compressed = slow_savez


def main() -> int:
    llm = FakeChat(rules=RULES, default="Answer: nobody")
    cli_setup.resolve_model = lambda spec, **options: llm  # type: ignore[assignment]
    _slow_down()
    if os.environ.get("SCRIPTED_CLI_BYTE_TOKENIZER"):
        from kg_agents.methods.gcr import build_tries

        build_tries.load_local_tokenizer = ByteTokenizer  # type: ignore[assignment]
    if os.environ.get("SCRIPTED_CLI_HASH_ENCODER"):
        from kg_agents.methods.dualr import train

        train.get_text_encoder = lambda name=None: HashEncoder()  # type: ignore[assignment]
    return cli.main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())

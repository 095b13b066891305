"""Prompt templates as files: ``kg_agents/methods/<method>/prompts/<name>.txt``.

A file is plain text with ``{placeholders}`` (f-string syntax, ``{{`` for a literal brace). It may be
split into chat roles with lines ``### system``, ``### human`` and ``### ai``; without them it is one
human message. Users override a prompt by passing their own template (a string, a file path, or a
LangChain ``ChatPromptTemplate``) to a graph factory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from langchain_core.prompts import ChatPromptTemplate

from kg_agents.errors import ConfigError

__all__ = ["METHODS_DIR", "PromptLike", "as_prompt", "load_prompt", "parse_prompt", "prompt_templates"]

#: A prompt a user gives a factory: template text, a ``.txt`` file path, or a ``ChatPromptTemplate``.
PromptLike = str | Path | ChatPromptTemplate

METHODS_DIR = Path(__file__).resolve().parent.parent / "methods"
_ROLE = re.compile(r"^###\s*(system|human|ai)\s*$", re.MULTILINE)


def parse_prompt(text: str) -> ChatPromptTemplate:
    """A ``ChatPromptTemplate`` from prompt-file text (see the module docstring)."""
    parts = _ROLE.split(text)
    if len(parts) == 1:
        return ChatPromptTemplate.from_messages([("human", text.strip("\n"))])
    if parts[0].strip():
        raise ConfigError("text before the first '### role' line in a prompt")
    messages = [(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]
    return ChatPromptTemplate.from_messages(messages)


def load_prompt(method: str, name: str) -> ChatPromptTemplate:
    """Load the bundled prompt ``<method>/<name>.txt``."""
    folder = METHODS_DIR / method / "prompts"
    path = folder / f"{name}.txt"
    if not path.is_file():
        have = sorted(p.stem for p in folder.glob("*.txt"))
        raise ConfigError(f"no prompt {method}/{name}; available for {method!r}: {have}")
    return parse_prompt(path.read_text(encoding="utf-8"))


def as_prompt(prompt: str | Path | ChatPromptTemplate | None, method: str, name: str) -> ChatPromptTemplate:
    """A user's prompt (template text, file path or template), or the bundled default."""
    if prompt is None:
        return load_prompt(method, name)
    if isinstance(prompt, ChatPromptTemplate):
        return prompt
    if isinstance(prompt, Path) or (
        isinstance(prompt, str) and "\n" not in prompt and prompt.endswith(".txt")
    ):
        return parse_prompt(Path(prompt).read_text(encoding="utf-8"))
    return parse_prompt(str(prompt))


def prompt_templates(
    method: str,
    names: Sequence[str],
    prompts: Mapping[str, PromptLike] | None = None,
    **keywords: PromptLike | None,
) -> dict[str, ChatPromptTemplate]:
    """The prompts ``names`` of ``method``: each the bundled file unless ``prompts`` gives it by name or
    a factory's own prompt keyword (``keywords``, by prompt name; None: not given) does.

    Raises:
        ConfigError: ``prompts`` names a prompt that ``names`` lacks (the message lists the valid ones),
            or one prompt is given both in ``prompts`` and by its keyword.

    Example:
        >>> sorted(prompt_templates("baselines", ["llm_only", "rag"], {"rag": "Q: {question}"}))
        ['llm_only', 'rag']
    """
    unknown = sorted(set(prompts or {}) - set(names))
    if unknown:
        raise ConfigError(f"unknown prompt name(s) {unknown}; valid: {', '.join(names)}")
    chosen: dict[str, PromptLike] = dict(prompts or {})
    for name, value in keywords.items():
        if value is not None:
            if name in chosen:
                raise ConfigError(f"prompt {name!r} given twice: by its keyword and in prompts=")
            chosen[name] = value
    return {name: as_prompt(chosen.get(name), method, name) for name in names}

"""Fine-tuning the KG-specialised path generator of GCR (eq. 8, appendix C) with LoRA.

Training data (:func:`gcr_training_examples`): for each question, all shortest paths from its topic
entities to its answer entities (:func:`~kg_agents.kg.paths.shortest_paths`), each formatted as the
figure-9 output ``<PATH> e0 -> r1 -> e1 </PATH>\\n# Answer:\\n<answer>``, paired with the decoding
prompt; one example per (question, path). Only MetaQA dev-*train* questions are used.

Training (:func:`train_gcr`, ``kg-agents train gcr``): LoRA adapters (peft) on the local model's
attention projections, loss on the target tokens only, AdamW with a cosine schedule and warm-up
(appendix E's recipe scaled down). The adapter is saved with a ``gcr_train.json`` describing the run;
:func:`load_gcr_decoder` builds a :class:`~kg_agents.methods.gcr.local_decoder.LocalConstrainedDecoder` over
the base model with the adapter merged (a separate copy: the shared chat model is not changed); the gcr
graph does it for ``create_gcr_graph(kg, adapter=DIR)`` (``--set adapter=DIR`` on the command line).

Example:
    >>> qs = load_metaqa(1, "train", limit=50)                                       # doctest: +SKIP
    >>> examples = gcr_training_examples(open_kg("metaqa"), qs)                     # doctest: +SKIP
    >>> train_gcr(hops="1,2,3", limit=300, epochs=1, lr=3e-4, out="runs/gcr-lora")          # doctest: +SKIP
    >>> graph = create_gcr_graph(open_kg("metaqa"), adapter="runs/gcr-lora")           # doctest: +SKIP
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path as FsPath
from typing import Any

from kg_agents.core.prompts import as_prompt
from kg_agents.errors import ConfigError
from kg_agents.eval.datasets import load_metaqa
from kg_agents.files import atomic_directory
from kg_agents.kg import open_kg
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.paths import chain_paths, shortest_paths
from kg_agents.llm.local_model import ensure_converted, load_local_tokenizer
from kg_agents.methods.gcr.adapter import BASE_MODEL
from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
from kg_agents.methods.gcr.trie import path_sentence
from kg_agents.untrusted import kg_text

__all__ = ["check_adapter_out", "gcr_training_examples", "train_gcr"]


def gcr_training_examples(
    kg: KnowledgeGraph,
    questions: Iterable[Any],
    *,
    max_hops: int = 2,
    max_paths_per_question: int = 5,
    prompt: Any = None,
    gold_paths: str = "shortest",
) -> list[dict[str, Any]]:
    """Figure-9 fine-tuning examples from questions with topic entities and answers.

    Args:
        kg: the knowledge graph.
        questions: objects with ``id``, ``question``, ``topic_entities``, ``answers``.
        max_hops: longest path searched.
        max_paths_per_question: at most this many (shortest) paths per question.
        prompt: the decoding prompt template (default ``prompts/gcr/decode_zero_shot.txt``).
        gold_paths: ``shortest`` (default; the paper's supervision): all shortest paths; ``hops``: where a
            question gives its hop count (MetaQA does) and it is at most ``max_hops``, the paths of that
            many hops along the relation chains that best explain its answers
            (:func:`~kg_agents.kg.paths.chain_paths`), so that a multi-hop question is not taught the
            shortcut to one of its answers; shortest paths for the others.

    Returns:
        Dicts ``{"id", "messages" (LangChain messages), "target" (the assistant text after the
        ``# Reasoning Path:`` prefix), "path"}``; questions without a path are skipped.
    """
    if gold_paths not in ("shortest", "hops"):
        raise ConfigError(f"gold_paths must be shortest or hops, got {gold_paths!r}")
    template = as_prompt(prompt, "gcr", "decode_zero_shot")
    out = []
    for q in questions:
        ents = list(q.topic_entities or [])
        golds = [a for a in q.answers if kg.has_entity(a)]
        if not ents or not golds:
            continue
        hops = getattr(q, "hops", None) if gold_paths == "hops" else None
        if hops is not None and 1 <= hops <= max_hops:
            paths = chain_paths(kg, ents, golds, hops, max_paths=max_paths_per_question)
        else:
            res = shortest_paths(kg, ents, golds, max_hops, max_paths=max_paths_per_question * 4)
            paths = res.paths[:max_paths_per_question]
        messages = template.format_messages(question=q.question, entities="\n".join(map(kg_text, ents)))
        for p in paths:
            out.append(
                {
                    "id": q.id,
                    "messages": messages,
                    "path": p.to_text(),
                    "target": f"{path_sentence(p)}\n# Answer:\n{kg_text(p.end)}",
                }
            )
    return out


def _encode(examples: list[dict[str, Any]], decoder: Any, max_len: int) -> list[tuple[list[int], int]]:
    tok = decoder.tokenizer
    eos = tok.eos_token or ""
    rows = []
    for ex in examples:
        prompt_ids = tok(decoder.render(ex["messages"]), add_special_tokens=False)["input_ids"]
        target_ids = tok(ex["target"] + eos, add_special_tokens=False)["input_ids"]
        if len(prompt_ids) >= max_len:  # nothing left to learn from: every label would be masked
            continue
        ids = (prompt_ids + target_ids)[:max_len]
        rows.append((ids, len(prompt_ids)))
    return rows


def train_gcr(
    *,
    hops: str = "1,2",
    limit: int = 400,
    epochs: int = 1,
    lr: float = 2e-4,
    batch_size: int = 8,
    lora_r: int = 8,
    lora_alpha: int = 16,
    max_hops: int = 2,
    max_paths_per_question: int = 1,
    max_len: int = 256,
    gold_paths: str = "shortest",
    bf16: bool = False,
    device: str = "cpu",
    seed: int = 0,
    log_every: int = 10,
    out: str = "runs/gcr-lora",
    kg: str = "metaqa",
    questions: str | None = None,
) -> dict[str, Any]:
    """Fine-tune the local model as GCR's path generator with LoRA on MetaQA dev-train questions, or on
    your own questions over your own KG.

    Args:
        hops: hop sets to draw questions from, comma-separated (e.g. ``"1,2"``): MetaQA's, or, with
            ``questions``, the records whose ``hops`` is one of them (records without ``hops`` are kept).
        limit: questions per hop set (a seeded sample of the train split; with ``questions``: the first
            this many of each hop count in the file).
        epochs: passes over the examples.
        lr: peak learning rate (cosine schedule, 3% warm-up).
        batch_size: examples per step.
        lora_r, lora_alpha: LoRA rank and scale (q/k/v/o projections).
        max_hops: longest training path (keep it equal to the graph's ``max_hops``, L).
        max_paths_per_question: shortest paths kept per question (one example each); with a small
            budget, more questions with one path each cover more question forms than more paths.
        max_len: examples are cut at this many tokens (an example whose prompt alone is longer is
            dropped).
        gold_paths: ``shortest`` (the paper's: all shortest paths) or ``hops`` (a question's own hop
            count along its best relation chains; see :func:`gcr_training_examples`).
        bf16: run forward and backward under bfloat16 autocast (faster on CPUs with AMX or AVX512-BF16,
            and on GPUs).
        device: ``cpu`` or ``cuda`` (the loop is :func:`~kg_agents.llm.adapters.fit_lora`).
        seed: data order and sampling seed.
        log_every: print the mean loss of the last this-many steps to stderr (0: silent).
        kg: the KG spec (:func:`~kg_agents.kg.open_kg`) the questions are asked over.
        questions: a questions file (JSONL or MetaQA lines, see ``kg-agents eval --questions``) used whole
            as training questions, e.g. ``kg-agents synth``'s ``train.jsonl``; None: MetaQA dev-train.
        out: directory for the adapter and ``gcr_train.json``: a new or empty one, or an adapter
            directory (it is replaced as a whole, once the adapter is saved in full).

    Returns:
        ``{"out", "examples", "questions", "steps", "seconds", "first_loss", "last_loss", "loss_curve",
        ...}`` (also written to ``out/gcr_train.json``); ``loss_curve`` holds ``[step, mean loss]``
        every ``log_every`` steps.

    Raises:
        ConfigError: bad ``hops`` or ``device``, no training example, or ``out`` holds other files than an
            adapter.

    Example:
        >>> train_gcr(hops="1,2,3", limit=350, epochs=1, out="runs/gcr-lora")            # doctest: +SKIP
        {'out': 'runs/gcr-lora', 'examples': 889, 'steps': 112, ...}
    """
    import torch
    from transformers import AutoModelForCausalLM

    from kg_agents.llm.adapters import fit_lora, save_adapter

    try:
        hop_list = [int(h) for h in str(hops).split(",") if h.strip()]
    except ValueError as exc:
        raise ConfigError(f"hops must be comma-separated integers, got {hops!r}") from exc
    check_adapter_out(out)
    if device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        raise ConfigError(f"device must be cpu or an available cuda, got {device!r}")
    torch.manual_seed(seed)
    graph_kg = open_kg(kg)
    if questions is None:
        if kg != "metaqa":
            raise ConfigError("kg= needs questions= (your own questions over your own KG)")
        train_qs = [q for h in hop_list for q in load_metaqa(h, "train", seed=seed, limit=limit)]
    else:
        from kg_agents.eval.runner import load_questions_file

        every = list(load_questions_file(questions, kg, split="dev"))
        train_qs = [q for q in every if q.hops is None] + [
            q for h in hop_list for q in [q for q in every if q.hops == h][:limit]
        ]
    examples = gcr_training_examples(
        graph_kg,
        train_qs,
        max_hops=max_hops,
        max_paths_per_question=max_paths_per_question,
        gold_paths=gold_paths,
    )
    if not examples:
        raise ConfigError("no training example: no question has a path to its answers")
    tok = load_local_tokenizer()
    model = AutoModelForCausalLM.from_pretrained(str(ensure_converted()), dtype=torch.float32)
    decoder = LocalConstrainedDecoder(model, tok)
    rows = _encode(examples, decoder, max_len)
    if not rows:
        raise ConfigError(f"every example's prompt is longer than max_len={max_len}")
    peft_model, losses, curve, seconds = fit_lora(
        model,
        rows,
        pad=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        epochs=epochs,
        lr=lr,
        batch_size=batch_size,
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        bf16=bf16,
        device=device,
        seed=seed,
        log_every=log_every,
        label="gcr train",
    )
    target = FsPath(out)
    info = {
        "out": str(target),
        "examples": len(rows),
        "questions": len(train_qs),
        "kg": kg,
        "question_file": questions,
        "hops": hop_list,
        "steps": len(losses),
        "seconds": seconds,
        "first_loss": losses[0] if losses else None,
        "last_loss": sum(losses[-10:]) / len(losses[-10:]) if losses else None,
        "lr": lr,
        "epochs": epochs,
        "lora_r": lora_r,
        "lora_alpha": lora_alpha,
        "batch_size": batch_size,
        "max_hops": max_hops,
        "max_paths_per_question": max_paths_per_question,
        "max_len": max_len,
        "gold_paths": gold_paths,
        "bf16": bf16,
        "device": device,
        "seed": seed,
        "split": "train",
        "base_model": BASE_MODEL,
        "loss_curve": curve,
    }
    # written whole or not at all: a kill during the save leaves the previous adapter (or none), never
    # a half-written one or new weights beside an old description
    with atomic_directory(target) as tmp:
        save_adapter(peft_model, tmp)
        (tmp / "gcr_train.json").write_text(json.dumps(info, indent=1))
    return info


def check_adapter_out(out: str | FsPath) -> None:
    """Refuse an ``out`` of :func:`train_gcr` that the saved adapter must not replace: a file, or a
    folder with other files than an adapter (one without ``adapter_config.json`` or ``gcr_train.json``)."""
    target = FsPath(out)
    if not target.exists():
        return
    if not target.is_dir():
        raise ConfigError(f"out={target} is a file; give a folder for the adapter")
    if any(target.iterdir()) and not any(
        (target / f).is_file() for f in ("adapter_config.json", "gcr_train.json")
    ):
        raise ConfigError(
            f"out={target} holds other files than an adapter, and the adapter replaces the whole folder; "
            "give a new folder"
        )

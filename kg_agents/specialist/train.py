"""Training the embedded model into a specialist for every ranked decision (one LoRA adapter).

Data (:func:`collect_examples`): each method's own graph runs on the training questions with the
:class:`~kg_agents.specialist.teacher.Teacher` as its model, so every decision is met with the exact prompt
and options the method writes; the right options (those a gold path supports) are the targets. Questions
whose answers no path of at most ``max_hops`` reaches are counted and skipped.

Training (:func:`train_specialist`, ``kg-agents train specialist``): LoRA on the attention projections of
the embedded SmolLM2-135M-Instruct, the loss on the right reply's tokens as the ranking scores them (the
chat template's reply plus its end-of-turn token, see :func:`kg_agents.llm.ranking.reply_token_ids`), so
training raises exactly the score the ranking reads. Resumable: the adapter, optimiser and position are
saved every ``checkpoint_every`` steps into ``out/last`` (a new folder renamed into place, so a half-written
checkpoint is never read); a rerun with the same ``out`` continues from there. ``specialist_train.json``
records the options, the data counts per role and method, the loss curve and the time.

Example:
    >>> info = train_specialist(hops="1,2,3", limit=200, out="runs/specialist")          # doctest: +SKIP
    >>> llm = resolve_chat_model("local:runs/specialist")                                # doctest: +SKIP
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path as FsPath
from typing import Any

from kg_agents.core.decide import ROLES
from kg_agents.errors import ConfigError
from kg_agents.files import atomic_directory, atomic_write
from kg_agents.specialist.teacher import Example, Teacher

__all__ = ["CHAIN_METHODS", "DEFAULT_METHODS", "collect_examples", "rank_loss", "train_specialist"]

#: How the teacher finds a question's gold paths (see :func:`collect_examples`).
GOLD_PATHS = ("hops", "shortest")


def _check_gold_paths(value: str) -> None:
    if value not in GOLD_PATHS:
        raise ConfigError(f"gold_paths must be one of {', '.join(GOLD_PATHS)}, got {value!r}")


#: The methods whose decisions the specialist learns by default. gcr's general reasoner is left out: its
#: data needs gcr's beam search for every training question (``methods=gcr``, its K set with
#: ``method_options=gcr.num_beams=5``; its bundled adapter was made so); its path generator has its own
#: adapter.
DEFAULT_METHODS = "knowledge_navigator,graph_explore,graph_agent,graph_rag,text_rag,dualr"


#: The methods that rank a whole relation chain (their ``relation_chain`` option: graph_agent from 1 hop,
#: the others from 2); the teacher runs them twice, once per hop and once for the chains (see
#: :func:`collect_examples`).
CHAIN_METHODS = ("graph_agent", "graph_explore", "knowledge_navigator")


def collect_examples(
    kg: Any,
    questions: Iterable[Any],
    methods: Sequence[str],
    *,
    max_hops: int = 3,
    options: dict[str, dict[str, Any]] | None = None,
    gold_paths: str = "hops",
) -> tuple[list[Example], Counter[str]]:
    """Run each method on ``questions`` with the teacher; return the decisions met and the counts.

    Args:
        kg: the knowledge graph.
        questions: objects with ``id``, ``question``, ``topic_entities``, ``answers``.
        methods: registered method names.
        max_hops: longest gold path (questions with none are skipped and counted).
        options: per-method factory options.
        gold_paths: ``hops``: a question's gold paths follow its own hop count where it has one (see
            :meth:`Teacher.set_question`); ``shortest``: all shortest paths, whatever the hop count.

    Constraint questions (kind ``constraint``: a chain's answers filtered by an attribute) are skipped and
    counted (``skipped_constraint``): the methods walk chains, and a teacher that marks only the filtered
    answers right would teach them to drop answers for a fact their prompts do not show.

    Returns:
        ``(examples, counts)``; counts hold ``questions``, ``skipped_constraint``, ``unreachable``,
        ``failed`` (a method's run raised), and per method ``METHOD/ROLE`` and ``METHOD/ROLE:no_right``.
    """
    from kg_agents.core.registry import create_graph
    from kg_agents.eval.runner import question_kind

    _check_gold_paths(gold_paths)
    given = list(questions)
    qs = [q for q in given if question_kind(q) != "constraint"]
    examples: list[Example] = []
    counts: Counter[str] = Counter(questions=len(qs), skipped_constraint=len(given) - len(qs))
    golds: dict[Any, Any] = {}  # each question's gold paths, found once for every method

    def hops_of(q: Any) -> int | None:
        return getattr(q, "hops", None) if gold_paths == "hops" else None

    for method in methods:
        teacher = Teacher(kg, max_hops=max_hops, method=method, golds=golds)
        kwargs = dict((options or {}).get(method, {}))
        if method in CHAIN_METHODS:
            # the hops' own relation choices: the method ranks them where it has no chain (1 hop, or
            # relation_chain=False); the chain's decisions come from a second pass, below
            kwargs.setdefault("relation_chain", False)
        graph = create_graph(method, kg, llm=teacher, **kwargs)
        unreachable, failed = _teach(graph, teacher, qs, hops_of)
        counts[f"{method}/unreachable"] += unreachable
        counts[f"{method}/failed"] += failed
        examples.extend(teacher.examples)
        for k, v in teacher.counts.items():
            counts[f"{method}/{k}"] += v
        if method in CHAIN_METHODS and "relation_chain" not in (options or {}).get(method, {}):
            # a second pass with the chain on, for the chain decisions alone (the first pass made the
            # hops' decisions): an adapter that learns them can rank the whole chain
            chain_teacher = Teacher(
                kg, max_hops=max_hops, method=method, golds=golds, roles=frozenset({"chain"})
            )
            # the chain prompt as a specialist sees it: without the zero-shot model's worked example
            chain_options = {"plan_example": False, **kwargs, "relation_chain": True}
            graph = create_graph(method, kg, llm=chain_teacher, **chain_options)
            # every question again (the unreachable were counted above): a method that ranks no chain
            # for a walk's length (graph_explore and knowledge_navigator at 1 hop) records nothing there
            counts[f"{method}/failed"] += _teach(graph, chain_teacher, qs, hops_of)[1]
            examples.extend(chain_teacher.examples)
            for k, v in chain_teacher.counts.items():
                if k.startswith("chain"):
                    counts[f"{method}/{k}"] += v
    return examples, counts


def _teach(graph: Any, teacher: Teacher, questions: Sequence[Any], hops_of: Any) -> tuple[int, int]:
    """Run ``graph`` (whose model is ``teacher``) on each question the teacher finds gold paths for;
    returns how many had none (unreachable) and how many runs raised (a method's own error on one
    question: counted, never trained on)."""
    unreachable = failed = 0
    for q in questions:
        topics = list(q.topic_entities or [])
        if not teacher.set_question(q.id, topics, list(q.answers), hops_of(q)):
            unreachable += 1
            continue
        try:
            graph.invoke({"question": q.question, "topic_entities": topics})
        except Exception:
            failed += 1
    return unreachable, failed


def _rows(
    examples: Sequence[Example], tok: Any, max_len: int, rights_per_decision: int
) -> tuple[list[tuple[list[int], int]], int]:
    from kg_agents.llm.ranking import reply_token_ids

    rows = []
    too_long = 0
    for ex in examples:
        replies = [ex.replies[i] for i in ex.right[:rights_per_decision]]
        prompt, conts = reply_token_ids(tok, ex.chat, replies, complete=ex.complete)
        for c in conts:
            if len(prompt) + len(c) > max_len:
                too_long += 1
                continue
            rows.append((prompt + c, len(prompt)))
    return rows, too_long


def _rank_rows(
    examples: Sequence[Example], tok: Any, max_len: int, max_options: int, seed: int
) -> tuple[list[tuple[list[int], list[list[int]], list[int]]], int]:
    """The rows of the ``rank`` objective: ``(prompt ids, option reply ids, indices of the right ones)``
    per decision, with every right option and a seeded sample of the wrong ones (``max_options`` in all,
    at least one wrong); decisions whose prompt and longest option exceed ``max_len`` are dropped
    (counted)."""
    from kg_agents.llm.ranking import reply_token_ids

    rng = random.Random(seed)
    rows = []
    too_long = 0
    for ex in examples:
        right = sorted(set(ex.right))
        wrong = [i for i in range(len(ex.replies)) if i not in right]
        rng.shuffle(wrong)
        keep = sorted(right + wrong[: max(1, max_options - len(right))])
        prompt, conts = reply_token_ids(tok, ex.chat, [ex.replies[i] for i in keep], complete=ex.complete)
        if len(prompt) + max(len(c) for c in conts) > max_len:
            too_long += 1
            continue
        rows.append((prompt, conts, [keep.index(i) for i in right]))
    return rows, too_long


def rank_loss(model: Any, prompt: list[int], conts: list[list[int]], right: list[int], device: str) -> Any:
    """The listwise loss of one decision: minus the log of the probability that the model's ranking gives
    the right options, the options' scores (each reply's summed log-probability, as
    :func:`kg_agents.llm.ranking.score_local` reads them) taken as a softmax over the options.

    The prompt runs once; the options run as one batch on its cache (the gradient flows through both), so
    a decision costs its prompt plus its options' tokens, not one prompt per option."""
    import torch

    out = model(input_ids=torch.tensor([prompt], device=device), use_cache=True, logits_to_keep=1)
    first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
    cache = out.past_key_values
    cache.batch_repeat_interleave(len(conts))
    width = max(len(c) for c in conts)
    ids = torch.zeros((len(conts), width), dtype=torch.long)
    mask = torch.zeros((len(conts), width))
    for r, c in enumerate(conts):
        ids[r, : len(c)] = torch.tensor(c)
        mask[r, : len(c)] = 1.0
    ids, mask = ids.to(device), mask.to(device)
    logits = model(input_ids=ids, past_key_values=cache, use_cache=True).logits
    logp = torch.log_softmax(logits.float(), dim=-1)
    # token j of an option is predicted after token j-1 (the first one after the prompt)
    later = logp[:, :-1].gather(-1, ids[:, 1:, None])[..., 0] * mask[:, 1:]
    scores = first[ids[:, 0]] + later.sum(dim=1)
    return torch.logsumexp(scores, 0) - torch.logsumexp(scores[right], 0)


def _row_tokens(row: Any) -> int:
    """Tokens a training row runs: prompt + reply (``lm``), prompt + every option's reply (``rank``)."""
    if len(row) == 3:
        return len(row[0]) + sum(len(c) for c in row[1])
    return len(row[0])


def _load_questions(
    questions: str | None,
    kg_file: str | None,
    hops: list[int],
    limit: int,
    seed: int,
    hop_limits: dict[str, int] | None = None,
) -> Any:
    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.kg import open_kg

    if questions:
        from kg_agents.eval.runner import load_questions_file

        spec = kg_file or "metaqa"
        qs = list(load_questions_file(questions, spec, split="train", seed=seed, limit=limit or None))
        return open_kg(spec), qs
    if kg_file:
        raise ConfigError("kg= needs questions= (your own questions over your own KG)")
    kg = open_kg("metaqa")
    per_hop = hop_limits or {}
    return kg, [q for h in hops for q in load_metaqa(h, "train", seed=seed, limit=per_hop.get(str(h), limit))]


#: The settings that decide the training decisions (the rest only change the optimisation).
DATA_SETTINGS = (
    "methods",
    "hops",
    "limit",
    "hop_limits",
    "kg",
    "questions",
    "max_hops",
    "gold_paths",
    "max_per_role",
    "role_limits",
    "method_options",
    "seed",
    "split",
    "data_version",
)
#: Raised whenever the teacher keeps other decisions from the same questions (cached decisions of an
#: older version are collected again).
DATA_VERSION = 5


def _init_folder(init: str) -> FsPath | None:
    """The adapter folder ``init`` names (None for ``""``): ``specialist`` is the bundled shared one.

    Raises:
        ConfigError: not a string, or no adapter there.
    """
    from kg_agents.core.models import BUNDLED_SPECIALIST
    from kg_agents.llm.adapters import adapter_folder

    if not isinstance(init, str):
        raise ConfigError(f"init must be an adapter folder or 'specialist', got {init!r}")
    if not init:
        return None
    return adapter_folder(BUNDLED_SPECIALIST if init == "specialist" else init)


def _items(spec: str) -> list[str]:
    """The non-empty entries of a comma-separated option, stripped."""
    return [x for x in (y.strip() for y in str(spec or "").split(",")) if x]


def _limit_entries(spec: str, option: str, form: str) -> list[tuple[str, int, str]]:
    """The ``KEY=N`` entries of ``spec`` (separated by commas) as ``(key, N, entry)``; an entry without
    ``=`` or with N not an integer >= 0 is a :class:`ConfigError` naming ``option`` and its ``form``."""
    entries = []
    for item in _items(spec):
        key, sep, value = (x.strip() for x in item.partition("="))
        try:
            n = int(value)
        except ValueError:
            n = -1
        if not sep or n < 0:
            raise ConfigError(f"{option} entries are {form}=N (N >= 0), got {item!r}")
        entries.append((key, n, item))
    return entries


def _hop_limits(spec: str, hops: Sequence[int]) -> dict[str, int]:
    """``"1=1200,2=150"`` as a dict keyed by the hop set (a string, as the JSON record keeps it); a
    malformed entry, a hop set not in ``hops`` or a negative limit is a :class:`ConfigError`."""
    limits: dict[str, int] = {}
    for key, n, _ in _limit_entries(spec, "hop_limits", "HOPS"):
        if not key.isdigit() or int(key) not in hops:
            raise ConfigError(f"hop_limits names the hop set {key!r}, which is not in hops={hops}")
        limits[str(int(key))] = n
    return limits


def _method_options(spec: str, methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``"gcr.num_beams=5,graph_explore.width=3"`` as ``{method: {option: value}}``, each value typed by
    the method's factory; a malformed entry, a method not in ``methods`` or an option its factory does
    not take is a :class:`ConfigError`."""
    from kg_agents.core.registry import get_method
    from kg_agents.options import keyword_options, parse_options

    out: dict[str, dict[str, Any]] = {}
    for item in _items(spec):
        key, sep, value = item.partition("=")
        method, dot, name = key.strip().partition(".")
        if not sep or not dot or not method or not name.strip():
            raise ConfigError(f"method_options entries are METHOD.OPTION=VALUE, got {item!r}")
        if method not in methods:
            raise ConfigError(f"method_options names {method!r}, which is not in methods={','.join(methods)}")
        factory = get_method(method).load()
        parsed = parse_options(
            [f"{name.strip()}={value.strip()}"], keyword_options(factory), what=f"method {method!r}"
        )
        out.setdefault(method, {}).update(parsed)
    return out


def _role_limits(spec: str, methods: Sequence[str]) -> dict[str, int]:
    """``"graph_explore/end=700,graph_agent/action=500"`` as a dict; a malformed entry, an unknown role,
    a method not trained or a negative limit is a :class:`ConfigError`."""
    limits: dict[str, int] = {}
    for key, n, item in _limit_entries(spec, "role_limits", "METHOD/ROLE"):
        method, slash, role = (x.strip() for x in key.partition("/"))
        if not slash or not role:
            raise ConfigError(f"role_limits entries are METHOD/ROLE=N (N >= 0), got {item!r}")
        if role not in ROLES:
            raise ConfigError(f"role_limits names the role {role!r}; roles: {', '.join(ROLES)}")
        if method not in methods:
            raise ConfigError(f"role_limits names {method!r}, which is not in methods={','.join(methods)}")
        limits[f"{method}/{role}"] = n
    return limits


def _training_decisions(
    target: FsPath, settings: dict[str, Any]
) -> tuple[list[Example], Counter[str], float]:
    """The decisions to train on, their counts and the seconds it took to collect them: read from
    ``target/decisions.json`` when an earlier run with the same data settings wrote it, else collected
    with the teacher (a seeded sample of at most ``max_per_role`` per method and role, or the role's own
    limit in ``role_limits``) and written there."""
    wanted = {k: settings[k] for k in DATA_SETTINGS}
    cache = target / "decisions.json"
    if cache.is_file():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        if saved["settings"] == wanted:
            decisions = [Example.from_json(d) for d in saved["decisions"]]
            return decisions, Counter(saved["counts"]), saved["data_seconds"]
    t0 = time.perf_counter()
    kg_obj, qs = _load_questions(
        settings["questions"],
        settings["kg"],
        settings["hops"],
        settings["limit"],
        settings["seed"],
        settings["hop_limits"],
    )
    examples, counts = collect_examples(
        kg_obj,
        qs,
        settings["methods"],
        max_hops=settings["max_hops"],
        options=settings["method_options"],
        gold_paths=settings["gold_paths"],
    )
    rng = random.Random(settings["seed"])
    by_key: dict[tuple[str, str], list[Example]] = {}
    for ex in examples:
        by_key.setdefault((ex.method, ex.role), []).append(ex)
    kept: list[Example] = []
    for key in sorted(by_key):
        group = by_key[key]
        rng.shuffle(group)
        cap = settings["role_limits"].get(f"{key[0]}/{key[1]}", settings["max_per_role"])
        kept.extend(group[:cap])
        counts[f"{key[0]}/{key[1]}:kept"] = len(group[:cap])
    data_seconds = round(time.perf_counter() - t0, 1)
    target.mkdir(parents=True, exist_ok=True)
    record = {
        "settings": wanted,
        "counts": dict(counts),
        "data_seconds": data_seconds,
        "decisions": [ex.to_json() for ex in kept],
    }
    atomic_write(cache, json.dumps(record))
    return kept, counts, data_seconds


def train_specialist(
    *,
    methods: str = DEFAULT_METHODS,
    hops: str = "1,2,3",
    limit: int = 100,
    hop_limits: str = "",
    kg: str | None = None,
    questions: str | None = None,
    max_hops: int = 3,
    gold_paths: str = "hops",
    max_per_role: int = 400,
    role_limits: str = "",
    method_options: str = "",
    rights_per_decision: int = 3,
    objective: str = "rank",
    max_options: int = 8,
    epochs: int = 1,
    lr: float = 3e-4,
    batch_size: int = 8,
    lora_r: int = 16,
    lora_alpha: int = 32,
    lora_layers: int = 0,
    init: str = "",
    max_len: int = 1024,
    bf16: bool = False,
    device: str = "cpu",
    seed: int = 0,
    log_every: int = 10,
    checkpoint_every: int = 25,
    resume: bool = True,
    out: str = "runs/specialist",
) -> dict[str, Any]:
    """Train one LoRA adapter on the embedded model for every ranked decision of ``methods``.

    Args:
        methods: comma-separated registered methods whose decisions are learnt.
        hops: MetaQA hop sets to draw training questions from (the seeded dev-train split).
        limit: questions per hop set (or from ``questions``).
        hop_limits: per-hop-set limits instead of ``limit``, as ``HOPS=N`` separated by commas
            (``1=1200,2=150,3=150``: many 1-hop questions, and a few of the others so that their
            decisions are rehearsed); MetaQA's hop sets only, not with ``questions``.
        kg, questions: your own KG file and questions file instead of MetaQA (see ``kg-agents eval
            --kg/--questions`` for the formats).
        max_hops: longest gold path.
        gold_paths: ``hops`` (default): each question's gold paths are the walks of its own hop count
            along the relation chains that best explain its answers, where the question gives a hop count
            (MetaQA does); ``shortest``: all shortest paths (how the bundled adapter's data was made).
        max_per_role: at most this many decisions per (method, role), a seeded sample, so that no role's
            volume drowns the others.
        role_limits: per-role limits instead of ``max_per_role``, as ``METHOD/ROLE=N`` separated by commas
            (``graph_explore/end=700``): more decisions for a role the model finds hard.
        method_options: the methods' factory options while the teacher runs them, as
            ``METHOD.OPTION=VALUE`` separated by commas (``gcr.num_beams=5``: the K the adapter will
            answer with), each typed by the method's factory.
        rights_per_decision: right replies trained per decision (several gold answers, say; the ``lm``
            objective).
        objective: ``rank`` (default): the listwise loss of :func:`rank_loss`, a softmax over each
            decision's options, which teaches exactly what the ranking reads (the right option above the
            wrong ones); ``lm``: the language-model loss on the right replies' tokens alone (it raises the
            right reply, and with it often the wrong ones that share its words).
        max_options: options per decision in the ``rank`` objective (every right one, then a seeded sample
            of the wrong ones).
        epochs, lr, batch_size: the optimisation (AdamW, cosine schedule with 3% warm-up); ``batch_size``
            rows per step (a row is a right reply for ``lm``, a decision for ``rank``).
        lora_r, lora_alpha: LoRA rank and scale on q/k/v/o.
        lora_layers: put the adapter on the last this many decoder layers only (0: every layer); the
            backward pass stops at the lowest adapted layer, so fewer layers train faster.
        init: go on training an adapter instead of a new one: a folder from this command, or
            ``specialist`` (the bundled shared MetaQA adapter); its own rank and layers then hold, and
            ``lora_r``, ``lora_alpha`` and ``lora_layers`` are not used. Empty (default): a new adapter.
        max_len: rows longer than this many tokens are dropped (counted).
        bf16: run forward and backward under bfloat16 autocast (faster on CPUs with AMX or AVX512-BF16,
            and on GPUs).
        device: ``cpu`` or ``cuda``.
        seed: data sampling and order.
        log_every: print the mean loss every this many steps (0: silent).
        checkpoint_every: save the resumable state every this many steps.
        resume: continue from ``out/last`` when it exists (with the same options).
        out: the adapter's folder.

    Returns:
        The training record (also ``out/specialist_train.json``).

    Raises:
        ConfigError: bad options, no example, or a checkpoint in ``out`` written with other options.
    """
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, get_cosine_schedule_with_warmup

    from kg_agents.llm.adapters import BASE_MODEL, lm_loss, new_lora, save_adapter
    from kg_agents.llm.local_model import ensure_converted, load_local_tokenizer

    try:
        hop_list = [int(h) for h in str(hops).split(",") if h.strip()]
    except ValueError as exc:
        raise ConfigError(f"hops must be comma-separated integers, got {hops!r}") from exc
    method_list = [m.strip() for m in methods.split(",") if m.strip()]
    if not method_list:
        raise ConfigError("methods= names no method")
    if objective not in ("rank", "lm"):
        raise ConfigError(f"objective must be rank or lm, got {objective!r}")
    if lora_layers < 0:
        raise ConfigError(f"lora_layers (top_layers) must be >= 0, got {lora_layers}")
    if max_options < 2:
        raise ConfigError(f"max_options must be at least 2, got {max_options}")
    limits = _role_limits(role_limits, method_list)
    per_method = _method_options(method_options, method_list)
    per_hop = _hop_limits(hop_limits, hop_list)
    if per_hop and questions:
        raise ConfigError("hop_limits picks MetaQA's hop sets; with questions= use limit")
    _check_gold_paths(gold_paths)
    start_from = _init_folder(init)
    if device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        raise ConfigError(f"device must be cpu or an available cuda, got {device!r}")
    settings = {
        "methods": method_list,
        "hops": hop_list,
        "limit": limit,
        "hop_limits": per_hop,
        "kg": kg,
        "questions": questions,
        "max_hops": max_hops,
        "gold_paths": gold_paths,
        "max_per_role": max_per_role,
        "role_limits": limits,
        "method_options": per_method,
        "rights_per_decision": rights_per_decision,
        "objective": objective,
        "max_options": max_options,
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "lora_r": lora_r,
        "lora_alpha": lora_alpha,
        "lora_layers": lora_layers,
        "init": init,
        "max_len": max_len,
        "bf16": bf16,
        "seed": seed,
        "split": "train",
        "data_version": DATA_VERSION,
        "base_model": BASE_MODEL,
    }
    target = FsPath(out)
    last = target / "last"
    state: dict[str, Any] | None = None
    if resume and (last / "state.json").is_file():
        state = json.loads((last / "state.json").read_text())
        if state["settings"] != settings:
            raise ConfigError(f"{last} was written with other options; use a new out= or resume=false")

    kept, counts, data_seconds = _training_decisions(target, settings)
    tok = load_local_tokenizer()
    rows: list[Any]
    if objective == "rank":
        decision_rows, too_long = _rank_rows(kept, tok, max_len, max_options, seed)
        rows = list(decision_rows)
    else:
        reply_rows, too_long = _rows(kept, tok, max_len, rights_per_decision)
        rows = list(reply_rows)
    counts["rows_too_long"] = too_long
    if not rows:
        raise ConfigError("no training example: no decision of these methods has a right option")

    torch.manual_seed(seed)
    base = AutoModelForCausalLM.from_pretrained(str(ensure_converted()), dtype=torch.float32)
    if state is not None:
        model = PeftModel.from_pretrained(base, str(last), is_trainable=True)
    elif init:
        model = PeftModel.from_pretrained(base, str(start_from), is_trainable=True)
    else:
        model = new_lora(base, r=lora_r, alpha=lora_alpha, top_layers=lora_layers)
    model.to(device)
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    per_epoch = math.ceil(len(rows) / batch_size)
    total = epochs * per_epoch
    tokens = sum(_row_tokens(r) for r in rows)
    print(
        f"specialist train: {len(kept)} decisions, {len(rows)} rows, {tokens} tokens, {total} steps",
        file=sys.stderr,
        flush=True,
    )
    sched = get_cosine_schedule_with_warmup(opt, max(1, int(0.03 * total)), total)
    step = 0
    curve: list[list[float]] = []
    train_seconds = 0.0
    if state is not None:
        opt_state = torch.load(last / "optimizer.pt", map_location=device, weights_only=True)
        opt.load_state_dict(opt_state["optimizer"])
        sched.load_state_dict(opt_state["scheduler"])
        step, curve, train_seconds = state["step"], state["loss_curve"], state["train_seconds"]
        print(f"specialist train: resumed at step {step}/{total}", file=sys.stderr, flush=True)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    orders: list[list[int]] = []
    order_rng = random.Random(seed + 1)
    for _ in range(epochs):
        o = list(range(len(rows)))
        order_rng.shuffle(o)
        if objective == "lm":  # batches of similar lengths (little padding), in a seeded random order
            o.sort(key=lambda j: _row_tokens(rows[j]))
        # (``rank`` runs its decisions one at a time, so nothing is padded: its batches stay mixed, each
        # holding decisions of several roles, which keeps one role's labels from swinging a step)
        batches = [o[i : i + batch_size] for i in range(0, len(o), batch_size)]
        order_rng.shuffle(batches)
        orders.extend(batches)

    def save(where: FsPath) -> None:
        with atomic_directory(where) as tmp:
            save_adapter(model, tmp)
            torch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()}, tmp / "optimizer.pt")
            (tmp / "state.json").write_text(
                json.dumps(
                    {"settings": settings, "step": step, "loss_curve": curve, "train_seconds": train_seconds}
                )
            )

    target.mkdir(parents=True, exist_ok=True)
    window: list[float] = []
    t_start = time.perf_counter() - train_seconds
    while step < total:
        if objective == "rank":  # one decision at a time (each has its own prompt), mean over the batch
            batch = orders[step]
            total_loss = 0.0
            for j in batch:
                with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
                    prompt, conts, right = rows[j]
                    one = rank_loss(model, prompt, conts, right, device) / len(batch)
                one.backward()
                total_loss += float(one.item())
            loss = torch.tensor(total_loss)
        else:
            loss = lm_loss(model, [rows[j] for j in orders[step]], pad, device, bf16)
            loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
        step += 1
        window.append(float(loss.item()))
        train_seconds = time.perf_counter() - t_start
        if log_every > 0 and len(window) >= log_every:
            curve.append([step, sum(window) / len(window)])
            window = []
            print(
                f"specialist train: step {step}/{total} loss {curve[-1][1]:.4f} ({train_seconds:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        if checkpoint_every > 0 and step % checkpoint_every == 0 and step < total:
            save(last)
    # the adapter's files come in through a finished folder, its config last: a folder with an
    # adapter_config.json (what loaders look for) always has the whole adapter beside it
    done = target / "adapter.new"
    with atomic_directory(done) as tmp:
        save_adapter(model, tmp)
    (target / "adapter_config.json").unlink(missing_ok=True)
    for f in sorted(done.iterdir(), key=lambda f: f.name == "adapter_config.json"):
        os.replace(f, target / f.name)
    done.rmdir()
    roles = Counter({k: v for k, v in counts.items() if k.endswith(":kept")})
    info = {
        **settings,
        "out": str(target),
        "device": device,
        "rows": len(rows),
        "tokens": tokens,
        "decisions": len(kept),
        "counts": dict(sorted(counts.items())),
        "decisions_per_role": dict(sorted(roles.items())),
        "steps": step,
        "data_seconds": round(data_seconds, 1),
        "train_seconds": round(train_seconds, 1),
        "first_loss": curve[0][1] if curve else None,
        "last_loss": curve[-1][1] if curve else None,
        "loss_curve": curve,
        "adapter_bytes": sum(f.stat().st_size for f in target.glob("adapter_model.*")),
    }
    atomic_write(target / "specialist_train.json", json.dumps(info, indent=1))
    shutil.rmtree(last, ignore_errors=True)
    return info

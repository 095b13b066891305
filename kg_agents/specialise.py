"""``kg-agents specialise``: build a KG pack for a graph from the graph alone.

Stages, each also runnable alone and each resumable (a stage whose record is in the pack with the same
settings is not run again; a killed trainer goes on from its own checkpoint):

1. ``synth``: questions synthesised from the KG (:mod:`kg_agents.synth`), split into train and validation;
2. ``hops``: the hop classifier on the synthesised questions' exact hop counts;
3. ``dualr``: dualr's GNN explorer;
4. ``gcr``: gcr's LoRA path generator;
5. ``specialist``: one specialist adapter for the embedded model, taught the ranked decisions of the
   methods (the teacher runs their graphs on the training questions, with the pack built so far, so the
   decisions are the ones the methods will meet);
6. ``evaluate``: every method with the pack on the synthesised validation questions, and on the user's
   own questions when given, there also with no pack (the zero-shot peer, in the same run).

After each stage the manifest (``pack.json``) is rewritten whole with the component it made. One
``budget`` sizes the run (:data:`BUDGETS`).

Example:
    >>> from kg_agents.specialise import specialise
    >>> specialise("kb.tsv", "packs/my-kb", budget="small")        # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.files import atomic_write
from kg_agents.packs.manifest import CHAIN, NO_ADAPTER

__all__ = ["BUDGETS", "PACK_METHODS", "STAGES", "Budget", "specialise"]

#: The stages in the order they run; ``train`` names hops, dualr, gcr and specialist together.
STAGES = ("synth", "hops", "dualr", "gcr", "specialist", "evaluate")
STAGE_GROUPS = {"train": ("hops", "dualr", "gcr", "specialist")}
#: The budget fields (by prefix) each stage's work depends on: a rerun with another budget redoes only the
#: stages whose sizes changed (and a stage after a redone one, whose input changed, see ``specialise``).
STAGE_SIZES = {
    "synth": ("questions",),
    "hops": ("hop_",),
    "dualr": ("dualr_",),
    "gcr": ("gcr_",),
    "specialist": ("specialist_",),
    "evaluate": ("eval_",),
}

#: The methods the evaluate stage runs with the pack (dualr with its answer step).
PACK_METHODS = ("knowledge_navigator", "graph_explore", "graph_agent", "gcr", "dualr", "graph_rag")
#: The evaluate stage's name for the user's own questions answered with no pack (the zero-shot peer).
OWN_NO_PACK = "own_no_pack"


@dataclass(frozen=True)
class Budget:
    """How much a pack build does.

    Attributes:
        questions: questions synthesised in all (train and validation).
        hop_questions: at most this many training questions per hop for the hop classifier.
        dualr_questions: training questions for the GNN (all hops together).
        dualr_epochs: the GNN's epochs (early stopping on the validation questions).
        gcr_questions: training questions per hop for gcr's path generator.
        gcr_epochs: passes over gcr's examples.
        specialist_questions: training questions per hop the teacher runs the methods on.
        specialist_epochs: passes over the specialist's decisions.
        specialist_layers: the specialist's LoRA sits on the last this many decoder layers (the backward
            pass stops at the lowest: a decision costs about its forward pass and this share of a backward).
        eval_questions: validation questions per method in the evaluate stage.
    """

    name: str
    questions: int
    hop_questions: int
    dualr_questions: int
    dualr_epochs: int
    gcr_questions: int
    gcr_epochs: int
    specialist_questions: int
    specialist_epochs: int
    eval_questions: int
    specialist_layers: int = 12


#: The budgets by name. ``tiny`` is for tests (a pack in a few minutes, whose figures mean little).
BUDGETS = {
    "tiny": Budget("tiny", 90, 30, 40, 1, 2, 1, 1, 1, 3),
    "small": Budget("small", 600, 200, 400, 10, 10, 1, 2, 1, 10),
    "default": Budget("default", 2000, 600, 1500, 20, 20, 1, 4, 1, 20),
    "large": Budget("large", 6000, 2000, 5000, 30, 200, 2, 60, 2, 200),
}


def _budget(spec: str | Budget) -> Budget:
    if isinstance(spec, Budget):
        return spec
    if spec not in BUDGETS:
        raise ConfigError(f"budget must be one of {', '.join(BUDGETS)}, got {spec!r}")
    return BUDGETS[spec]


def _stages(spec: str | Sequence[str] | None) -> list[str]:
    """The stages ``spec`` names (comma-separated names, ``train`` for the four trainers; None: all)."""
    if spec is None:
        return list(STAGES)
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    out: list[str] = []
    for n in names:
        group = STAGE_GROUPS.get(n, (n,))
        for s in group:
            if s not in STAGES:
                raise ConfigError(f"unknown stage {n!r}; stages: {', '.join(STAGES)} (or train)")
            if s not in out:
                out.append(s)
    if not out:
        raise ConfigError("no stage named")
    return sorted(out, key=STAGES.index)


def _settings_key(settings: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


class _Log:
    """Progress lines on stderr (``quiet``: none)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)


def specialise(
    kg: str,
    out: str | Path,
    *,
    budget: str | Budget = "default",
    stages: str | Sequence[str] | None = None,
    seed: int = 0,
    hops: Sequence[int] = (1, 2, 3),
    device: str = "cpu",
    paraphrase: bool = False,
    model: str | None = None,
    examples: str | None = None,
    relation_noise: float = 0.0,
    balance: str = "path",
    questions: str | None = None,
    methods: Sequence[str] = PACK_METHODS,
    register: bool = True,
    quiet: bool = False,
) -> dict[str, Any]:
    """Build (or go on building) the pack of ``kg`` in ``out``.

    Args:
        kg: the KG, an :func:`~kg_agents.kg.open_kg` spec (a bundled name, a triples file).
        out: the pack folder (created; a rerun goes on where a killed one stopped).
        budget: a name of :data:`BUDGETS` or a :class:`Budget`.
        stages: the stages to run, comma-separated (``synth``, ``train``, ``evaluate`` or single trainers);
            None: every stage. A stage needs the ones before it done (``synth`` before any trainer).
        seed: seeds the questions and every trainer.
        hops: the hop counts synthesised and learnt.
        device: ``cpu`` or ``cuda`` for the trainers.
        paraphrase: rephrase each relation path's question form once with a chat model (``model``).
        model: the chat model that paraphrases (a :func:`~kg_agents.llm.resolve_chat_model` spec; None:
            the embedded model).
        examples: a file of a few real questions, one a line, shown to the paraphrasing model as style.
        relation_noise: the share of synthesised chains of 2 or more hops that name one inner hop by a
            common word instead of its relation's name (:func:`~kg_agents.synth.synthesise`).
        balance: how the synthesiser shares a hop count's chains: ``"path"`` (by relation path) or
            ``"direction"`` (by direction pattern, then path; :func:`~kg_agents.synth.synthesise`).
        questions: your own questions over ``kg`` (JSONL or MetaQA lines) to evaluate the pack on as well,
            each method also with no pack on them; never trained on.
        methods: the methods the evaluate stage runs.
        register: register the pack for ``kg``'s fingerprint once it is written, so ``pack="auto"`` finds it.
        quiet: no progress lines.

    Returns:
        The manifest as written.

    Raises:
        ConfigError: a bad budget, stage, device or input, or a stage whose input stage has not run.
    """
    from kg_agents.kg import open_kg

    b = _budget(budget)
    todo = _stages(stages)
    if device not in ("cpu", "cuda"):
        raise ConfigError(f"device must be cpu or cuda, got {device!r}")
    hop_list = sorted({int(h) for h in hops})
    if not hop_list or hop_list[0] < 1:
        raise ConfigError(f"hops must be positive integers, got {list(hops)!r}")
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"out={root} is a file; give a folder for the pack")
    root.mkdir(parents=True, exist_ok=True)
    log = _Log(quiet)
    graph = open_kg(kg)
    ctx = _Context(kg, graph, root, b, seed, hop_list, device, log)
    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "synth": lambda: ctx.synth(paraphrase, model, examples, relation_noise, balance),
        "hops": ctx.hops,
        "dualr": ctx.dualr,
        "gcr": ctx.gcr,
        "specialist": ctx.specialist,
        "evaluate": lambda: ctx.evaluate(methods, questions),
    }
    # options at their defaults stay out of the settings, so that a pack built before them resumes
    optional: dict[str, Any] = {"relation_noise": relation_noise} if relation_noise else {}
    if balance != "path":
        optional["balance"] = balance
    settings: dict[str, dict[str, Any]] = {
        "synth": {"paraphrase": paraphrase, "model": model, "examples": examples, **optional},
        # with your questions the stage also runs the zero-shot peer on them (``peer``); a pack evaluated
        # before the peer existed, or with other routes, evaluates again
        "evaluate": {
            "methods": list(methods),
            "questions": questions,
            **({"peer": True} if questions else {}),
        },
    }
    t_all = time.perf_counter()
    ran: list[tuple[str, float, bool]] = []
    for stage in todo:
        sizes: dict[str, Any] = {k: v for k, v in asdict(b).items() if k.startswith(STAGE_SIZES[stage])}
        # a stage's input is the questions (and, for the specialist and the evaluation, the components
        # trained before): their records' keys are part of its settings
        sizes["after"] = [
            (s, (ctx.manifest.stage(s) or {}).get("settings_key")) for s in STAGES[: STAGES.index(stage)]
        ]
        stage_settings = {"budget": sizes, "seed": seed, "hops": hop_list, **settings.get(stage, {})}
        if stage == "evaluate":  # the methods run the pack's routes
            stage_settings["routes"] = {m: dict(r) for m, r in ctx.manifest.manifest.routes.items()}
        key = _settings_key(stage_settings)
        done = ctx.manifest.stage(stage)
        if done and done.get("settings_key") == key:
            log(f"[{stage}] done before ({done.get('seconds', 0):.0f} s); skipped")
            ran.append((stage, 0.0, False))
            continue
        ctx.require_before(stage)
        if done and stage == "evaluate":  # done with other settings: its runs would resume, stale
            shutil.rmtree(root / "eval", ignore_errors=True)
        log(f"[{stage}] starting")
        t0 = time.perf_counter()
        record = runners[stage]()
        seconds = round(time.perf_counter() - t0, 1)
        ctx.manifest.finish_stage(stage, {**record, "seconds": seconds, "settings_key": key})
        log(f"[{stage}] done in {seconds:.0f} s")
        ran.append((stage, seconds, True))
    if register and ctx.manifest.components():
        from kg_agents.packs import register_pack

        register_pack(root)
    total = round(time.perf_counter() - t_all, 1)
    log(_summary(root, ran, total, ctx.manifest.data))
    return ctx.manifest.data


def _summary(root: Path, ran: list[tuple[str, float, bool]], total: float, data: dict[str, Any]) -> str:
    lines = [f"pack {root}: {total:.0f} s"]
    for stage, seconds, fresh in ran:
        lines.append(f"  {stage:<10} " + (f"{seconds:.0f} s" if fresh else "done before"))
    comps = data.get("components", {})
    if comps:
        lines.append("  components: " + ", ".join(sorted(comps)))
    figures = ((data.get("stages") or {}).get("evaluate") or {}).get("validation") or {}
    ev = figures.get("synthesised", {})
    if ev:
        lines.append(
            "  validation hits@1: "
            + ", ".join(f"{m} {v.get('hits@1', 0):.3f}" for m, v in sorted(ev.items()))
        )
    own, peer = figures.get("own", {}), figures.get(OWN_NO_PACK, {})
    if own:
        lines.append(
            "  your questions, hits@1 with the pack / with none: "
            + ", ".join(
                f"{m} {v.get('hits@1', 0):.3f} / "
                + (f"{peer[m].get('hits@1', 0):.3f}" if m in peer else "not run")
                for m, v in sorted(own.items())
            )
        )
    return "\n".join(lines)


class _Context:
    """What every stage needs: the KG, the pack folder, the budget, the manifest being written."""

    def __init__(
        self,
        spec: str,
        graph: Any,
        root: Path,
        budget: Budget,
        seed: int,
        hops: list[int],
        device: str,
        log: _Log,
    ) -> None:
        self.spec, self.graph, self.root, self.budget = spec, graph, root, budget
        self.seed, self.hop_list, self.device, self.log = seed, hops, device, log
        self.manifest = _BuildManifest.open_or_create(root, graph, source=spec)
        self.train_file = root / "questions" / "train.jsonl"
        self.val_file = root / "questions" / "validation.jsonl"

    def require_before(self, stage: str) -> None:
        if stage != "synth" and not (self.train_file.is_file() and self.val_file.is_file()):
            raise ConfigError(f"stage {stage!r} needs the synthesised questions: run the synth stage first")

    # ------------------------------------------------------------------ stages
    def synth(
        self, paraphrase: bool, model: str | None, examples: str | None, noise: float, balance: str
    ) -> dict[str, Any]:
        from kg_agents.synth import synthesise, write_questions
        from kg_agents.synth.phrase import read_examples

        llm = None
        if paraphrase:
            from kg_agents.llm import resolve_chat_model

            llm = resolve_chat_model(model or "local")
        example_lines = read_examples(examples) if examples else None
        result = synthesise(
            self.graph,
            n=self.budget.questions,
            hops=tuple(self.hop_list),
            seed=self.seed,
            llm=llm,
            paraphrase=paraphrase,
            examples=example_lines,
            relation_noise=noise,
            balance=balance,
        )
        write_questions(result, self.root / "questions")
        stats = result.stats
        self.log(f"[synth] {len(result.questions)} questions; " + json.dumps(_headline(stats)))
        return {"questions": _headline(stats)}

    def hops(self) -> dict[str, Any]:
        from kg_agents.methods.knowledge_navigator.train import train_hop_classifier

        metrics = train_hop_classifier(
            out_dir=self.root / "hop_classifier",
            hops=tuple(self.hop_list),
            seed=self.seed,
            limit_per_hop=self.budget.hop_questions,
            val_limit_per_hop=None,
            questions=str(self.train_file),
            val_questions=str(self.val_file),
        )
        self.log(f"[hops] validation accuracy {metrics['validation_accuracy']:.3f}")
        val = {"accuracy": metrics["validation_accuracy"], "per_hop": metrics["validation_accuracy_per_hop"]}
        self.manifest.add_component("hop_classifier", "hop_classifier", record=metrics, validation=val)
        return {"validation_accuracy": metrics["validation_accuracy"]}

    def dualr(self) -> dict[str, Any]:
        from kg_agents.methods.dualr.train import train_explorer

        res = train_explorer(
            kg=self.spec,
            questions=str(self.train_file),
            val=str(self.val_file),
            limit=self.budget.dualr_questions,
            val_limit=max(50, self.budget.dualr_questions // 5),
            out=str(self.root / "dualr"),
            epochs=self.budget.dualr_epochs,
            seed=self.seed,
            device=self.device,
            progress=not self.log.quiet,
        )
        self.log(f"[dualr] validation hits@1 {res['val_hits1']:.3f}")
        record = {k: v for k, v in res.items() if k != "best"}
        self.manifest.add_component(
            "dualr", "dualr/best.pt", record=record, validation={"gnn_hits@1": res["val_hits1"]}
        )
        return {"val_hits1": res["val_hits1"]}

    def _training_options(self, stage: str) -> dict[str, Any]:
        """The options the gcr and specialist trainings share: the KG, the training questions and their hop
        counts, the device and its precision, the seed, the log and the stage's folder in the pack."""
        return {
            "kg": self.spec,
            "questions": str(self.train_file),
            "hops": ",".join(map(str, self.hop_list)),
            "bf16": _bf16(self.device),
            "device": self.device,
            "seed": self.seed,
            "log_every": 0 if self.log.quiet else 10,
            "out": str(self.root / stage),
        }

    def gcr(self) -> dict[str, Any]:
        from kg_agents.methods.gcr.train import train_gcr

        info = train_gcr(
            **self._training_options("gcr"),
            limit=self.budget.gcr_questions,
            epochs=self.budget.gcr_epochs,
            gold_paths="hops",
        )
        self.log(f"[gcr] {info['examples']} examples, {info['steps']} steps, last loss {info['last_loss']}")
        self.manifest.add_component("gcr_path_generator", "gcr", record=_drop(info, "loss_curve", "out"))
        return {"examples": info["examples"], "steps": info["steps"]}

    def specialist(self) -> dict[str, Any]:
        from kg_agents.specialist.train import DEFAULT_METHODS, train_specialist

        # the teacher runs the methods with the pack built so far, so that the decisions it collects are
        # the ones the methods meet with the pack (its hop classifier sets their walks' length)
        pack_opts = ",".join(f"{m}.pack={self.root.resolve()}" for m in DEFAULT_METHODS.split(","))
        info = train_specialist(
            **self._training_options("specialist"),
            limit=self.budget.specialist_questions * len(self.hop_list),
            method_options=pack_opts,
            epochs=self.budget.specialist_epochs,
            lora_layers=self.budget.specialist_layers,
        )
        self.log(f"[specialist] {info.get('decisions', '?')} decisions, {info.get('steps', '?')} steps")
        self.manifest.add_component("specialist", "specialist", record=_drop(info, "loss_curve", "out"))
        return {k: info[k] for k in ("decisions", "steps") if k in info}

    def evaluate(self, methods: Sequence[str], questions: str | None) -> dict[str, Any]:
        """Every method with the pack on the synthesised validation questions; with ``questions`` (the
        user's own), every method on them with the pack (``own``) and with none (``own_no_pack``, the
        zero-shot peer in the same run). The synthesised questions get no peer: phrased as the pack
        learnt, they favour it where people's questions need not (the own-KG guide measures it)."""
        runs = [("synthesised", str(self.val_file), True)]
        if questions:
            runs += [("own", questions, True), (OWN_NO_PACK, questions, False)]
        figures: dict[str, dict[str, Any]] = {}
        for name, path, with_pack in runs:
            figures[name] = {}
            for method in methods:
                summary = self._eval_one(method, path, name, with_pack=with_pack)
                figures[name][method] = {
                    k: summary.get(k) for k in ("n", "hits@1", "f1", "avg_llm_calls", "avg_seconds", "errors")
                }
                h1, n = summary.get("hits@1", 0), summary.get("n")
                self.log(f"[evaluate] {name} {method}: hits@1 {h1:.3f} (n={n})")
        return {"validation": figures}

    def _eval_one(self, method: str, questions: str, name: str, *, with_pack: bool = True) -> dict[str, Any]:
        """``kg-agents eval`` of ``method`` with the pack (or, not ``with_pack``, with none), in its own
        process (its models are freed when it ends, and the command's own resumable run folder is reused
        by a rerun)."""
        import os
        import subprocess

        from kg_agents.eval.runner import load_summary

        out = self.root / "eval" / f"{name}-{method}"
        argv = [
            sys.executable,
            "-m",
            "kg_agents.cli",
            "eval",
            "--method",
            method,
            "--questions",
            questions,
            "--kg",
            self.spec,
            "--split",
            "dev",
            "--limit",
            str(self.budget.eval_questions),
            "--seed",
            str(self.seed),
            "--concurrency",
            "8",
            "--set",
            f"pack={self.root.resolve()}" if with_pack else "pack=none",
            "--out",
            str(out),
            "--no-progress",
        ]
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), check=False)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise ConfigError(
                f"evaluating {method} on {questions} failed (exit {done.returncode}): {' | '.join(tail)}"
            )
        return load_summary(out)


def _bf16(device: str) -> bool:
    """bfloat16 autocast for training where the hardware has it (a GPU, or a CPU with bfloat16)."""
    if device == "cuda":
        return True
    from kg_agents.llm.local_model import resolve_dtype

    return resolve_dtype("auto") == "bfloat16"


def _drop(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def _headline(stats: dict[str, Any]) -> dict[str, Any]:
    keep = ("questions", "train", "validation", "per_hop", "per_kind", "schemas", "filtered", "seconds")
    noise = (
        {"relation_noise": stats["relation_noise"]} if stats.get("relation_noise", {}).get("share") else {}
    )
    return {**{k: stats[k] for k in keep if k in stats}, **noise}


def budget_with(name: str, **changes: int) -> Budget:
    """A named budget with some sizes changed (for a curve of accuracy against budget).

    Example:
        >>> budget_with("small", dualr_epochs=3).dualr_epochs
        3
    """
    return replace(_budget(name), **changes)  # type: ignore[arg-type]


def write_json(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


#: The route changes of a pack built here: the same routes as the bundled MetaQA pack's, except where a
#: depth comes from and which chat model ranks. The bundled pack's hop classifier learnt from MetaQA's own
#: questions; one trained on synthesised questions learns the generic forms' wording and names the depth
#: of few of people's multi-hop questions (it says 1 hop for most of MetaQA's 2-hop ones), so a walk here
#: is as long as the relation chain closest to the question (``"chain"``,
#: :func:`~kg_agents.core.hops.chain_hops`), and gcr's trie holds every path of 1..L hops (a trie of one
#: depth leaves gcr no right path wherever the depth is wrong). The specialist learnt its decisions in the
#: generic forms' words, and the three methods whose every step it ranks answer fewer of people's
#: questions with it than with the zero-shot model (calibrated): their routes say ``adapter="none"``.
#: Each option is declared once the component it needs is in (``chain`` and ``none`` need none).
_ZERO_SHOT = {"adapter": NO_ADAPTER, "hops": CHAIN}
ROUTES: dict[str, tuple[str, dict[str, str]]] = {
    "knowledge_navigator": (
        "the question's depth is the length of the relation chain closest to the question; the zero-shot "
        "model ranks (not the pack's specialist)",
        _ZERO_SHOT,
    ),
    "graph_explore": (
        "the walk is as long as the relation chain closest to the question: the relation chain is ranked "
        "once from the topic entities and End? is not asked; the zero-shot model ranks (not the pack's "
        "specialist)",
        _ZERO_SHOT,
    ),
    "graph_agent": (
        "Finish comes once the ranked relation chain has walked as many hops as the relation chain "
        "closest to the question has; the zero-shot model ranks (not the pack's specialist)",
        _ZERO_SHOT,
    ),
    "gcr": (
        "the pack's path generator decodes in a KG-Trie of every path of 1..L hops, as with no pack (a trie "
        "of only one depth has no right path wherever that depth is wrong); the general reasoner runs the "
        "pack's specialist",
        {"adapter": "gcr_path_generator", "general_adapter": "specialist"},
    ),
    "dualr": (
        "the pack's GNN explores and the pack's specialist picks the answer",
        {"checkpoint": "dualr", "adapter": "specialist"},
    ),
}
_RAG_ROUTE = (
    "the candidates are the entities as far from the topic entities as the relation chain closest to the "
    "question is long; the pack's specialist ranks them",
    {"adapter": "specialist", "answer_hops": CHAIN},
)
ROUTES.update(graph_rag=_RAG_ROUTE, text_rag=_RAG_ROUTE)


class _BuildManifest:
    """The manifest of a pack being built (:class:`~kg_agents.packs.PackManifest`), written whole after
    every change; a method's route changes are declared once every component they need is in."""

    def __init__(self, root: Path, manifest: Any) -> None:
        self.root, self.manifest = root, manifest

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.manifest.to_json())

    @classmethod
    def open_or_create(cls, root: Path, graph: Any, *, source: str) -> _BuildManifest:
        from kg_agents.packs import PackManifest, kg_summary
        from kg_agents.packs.manifest import MANIFEST

        summary = kg_summary(graph)
        if summary is None:
            raise ConfigError(
                f"cannot fingerprint the KG {source!r} (too large to read whole); no pack for it"
            )
        if (root / MANIFEST).is_file():
            manifest = PackManifest.read(root)
            if manifest.kg.get("fingerprint") != summary.fingerprint:
                raise ConfigError(
                    f"{root} is the pack of another KG (fingerprint {manifest.kg.get('fingerprint')}, this "
                    f"one {summary.fingerprint}); give a new folder"
                )
            out = cls(root, manifest)
            out.declare_routes()  # a pack built by another version takes this one's routes
            return out
        kg = {**asdict(summary), "source": source}
        out = cls(root, PackManifest(root.name, kg))
        out.save()
        return out

    def save(self) -> None:
        from kg_agents.packs import write_manifest

        write_manifest(self.root, self.manifest)

    def stage(self, name: str) -> dict[str, Any] | None:
        return self.manifest.stages.get(name)

    def finish_stage(self, name: str, record: dict[str, Any]) -> None:
        self.manifest.stages[name] = json.loads(json.dumps(record, default=str))
        self.save()

    def components(self) -> dict[str, Any]:
        return dict(self.manifest.components)

    def add_component(
        self, name: str, path: str, *, record: dict[str, Any], validation: dict[str, Any] | None = None
    ) -> None:
        record = json.loads(json.dumps(record, default=str))
        self.manifest.add_component(name, path, record=record, validation=validation)
        self.declare_routes()

    def declare_routes(self) -> None:
        """Declare :data:`ROUTES`' changes (and only those) as far as the pack's components allow; save."""
        have = set(self.manifest.components)
        self.manifest.routes.clear()
        for method, (summary, changes) in ROUTES.items():
            kept = {k: v for k, v in changes.items() if v in (CHAIN, NO_ADAPTER) or v in have}
            if kept:
                self.manifest.set_route(method, summary, **kept)
        self.save()

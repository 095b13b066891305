"""The ``kg-agents`` command: ``methods``, ``ask``, ``eval``, ``report``, ``demo``, ``train``,
``build-tries``, ``pack``, ``prepare``, ``specialise``, ``synth``, ``version``. ``eval`` lives in
:mod:`kg_agents.cli.eval`, ``report`` in :mod:`kg_agents.cli.report`.

Examples::

    kg-agents methods
    kg-agents ask "who directed [Splash]" --method graph_rag --json
    kg-agents ask "who directed [Splash]" --method graph_rag --set max_triples=30
    kg-agents ask "who directed [Splash]" --method dualr --stream
    kg-agents eval --method graph_rag --dataset metaqa-1hop --limit 50 --out runs/graph_rag-1hop
    kg-agents eval --compare runs/llm_only-1hop runs/graph_rag-1hop --chart compare.png
    kg-agents eval --grid docs/results/metaqa.toml --out docs/results/runs
    kg-agents report docs/results/runs --out docs/results.md --chart docs/results/chart.png
    kg-agents train dualr --set epochs=3
    kg-agents build-tries --dataset metaqa-2hop --hops 2 --out tries/metaqa-2hop
    kg-agents synth pq-2h --out runs/synth-pq --n 500
    kg-agents pack show auto --kg metaqa
    kg-agents prepare          # convert and cache the local model's weights (make setup runs it)
    kg-agents specialise pq-2h --out packs/pq-2h --budget small

``--set KEY=VALUE`` (repeatable) sets one of the method's factory options or a field of its per-run
context, typed from the annotation; an unknown key is an error listing the valid ones. Errors a user
can act on (unknown names, bad values, unreachable servers) print one line and exit non-zero:
2 for a bad command line or input file, 1 for a failure while running.

Ctrl-C ends a command with status 130 and one line: what was kept (the questions of ``eval`` already in
``predictions.jsonl``, the last training checkpoint, the tries already built) and the exact command
that resumes the run.

Model loading is quiet: no weight-loading or conversion progress bars and no library warnings (``-v`` shows
them); the progress bars of long runs (``eval``, ``train``) are kg-agents' own and stay.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kg_agents.cli.eval import add_eval_parser, cmd_eval
from kg_agents.cli.report import add_report_parser, cmd_report
from kg_agents.cli.setup import MethodSetup, open_kg_spec, resolve_model
from kg_agents.core.records import error_text, run_level_errors
from kg_agents.errors import ConfigError, DataFormatError, KGAgentsError, KGError, ModelError
from kg_agents.llm.local_model import CACHED_DTYPES, prepare_local_model, set_loading_progress

__all__ = [
    "DEMO_QUESTION",
    "LOADING_LIBRARIES",
    "MethodSetup",
    "build_parser",
    "cmd_ask",
    "cmd_build_tries",
    "cmd_demo",
    "cmd_eval",
    "cmd_methods",
    "cmd_prepare",
    "cmd_report",
    "cmd_synth",
    "cmd_train",
    "cmd_version",
    "format_update",
    "interrupted_message",
    "main",
    "open_kg_spec",
    "output_to_json",
    "quiet_loading",
    "resolve_model",
]

DEMO_QUESTION = "who directed [Splash]"

#: Libraries whose warnings ``quiet_loading`` hides (matched against the warning's module).
LOADING_LIBRARIES = (
    "transformers",
    "torch",
    "sentence_transformers",
    "huggingface_hub",
    "accelerate",
    "peft",
    "torch_geometric",
    "faiss",
)


def quiet_loading() -> None:
    """Hide model-loading noise: Hugging Face progress bars ("Loading weights") and library warnings.

    Set before the libraries are imported (environment variables), and on them when they already are.
    kg-agents' own progress bars (``eval``, ``train``) use tqdm directly and are not affected.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    pattern = "|".join(LOADING_LIBRARIES)
    warnings.filterwarnings("ignore", module=rf"({pattern})(\.|$)")
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()


# --------------------------------------------------------------------------- building blocks
def _check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise ConfigError("empty question: give the question text")
    return question.strip()


def _raise_run_level(errors: Sequence[Any]) -> None:
    for e in run_level_errors(errors):
        raise (ModelError if e["type"] == "ModelError" else KGError)(error_text(e))


def output_to_json(out: dict[str, Any], question: str) -> dict[str, Any]:
    """The output contract as JSON-able data (paths as ``e0 -> r1 -> e1`` text)."""
    return {
        "question": question,
        "topic_entities": out.get("topic_entities"),
        "answers": list(out.get("answers") or []),
        "paths": [p.to_text() for p in out.get("paths") or []],
        "evidence": list(out.get("evidence") or []),
        "usage": dict(out.get("usage") or {}),
        "errors": list(out.get("errors") or []),
        "trace": _jsonable(out.get("trace") or []),
    }


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x, default=lambda o: o.to_text() if hasattr(o, "to_text") else str(o)))


def _print_answer(out: dict[str, Any], kg: Any) -> None:
    answers = out.get("answers") or []
    print("Answers:" if answers else "Answers: (none)")
    for a in answers:
        print(f"  {a}")
    paths = out.get("paths") or []
    print("Reasoning paths:" if paths else "Reasoning paths: (none)")
    for p in paths:
        print(f"  {p.to_text(label=kg.label) if kg is not None else p.to_text()}")
    u = out.get("usage") or {}
    print(
        f"Usage: {u.get('llm_calls', 0)} LLM calls, {u.get('input_tokens', 0)} input / "
        f"{u.get('output_tokens', 0)} output tokens, {u.get('kg_calls', 0)} KG calls, "
        f"{float(u.get('seconds', 0.0)):.2f} s"
    )
    for e in out.get("errors") or []:
        print(f"Note: {error_text(e)}")


# --------------------------------------------------------------------------- commands
def cmd_methods(args: argparse.Namespace) -> int:
    from kg_agents.core.registry import list_methods

    methods = list_methods()
    width = max((len(m.name) for m in methods), default=0)
    for m in methods:
        print(f"{m.name.ljust(width)}  {m.description}")
    return 0


def format_update(node: str, update: Mapping[str, Any] | None) -> str:
    """One line for a node that finished (``kg-agents ask --stream``): what its trace says, its cost."""
    update = update or {}
    parts = []
    for step in update.get("trace") or []:
        details = ", ".join(
            f"{k}={_short(v)}" for k, v in step.items() if k != "node" and not isinstance(v, Mapping)
        )
        if details:
            parts.append(details)
    u = update.get("usage") or {}
    cost = [f"{float(u.get('seconds', 0.0)):.2f} s"]
    if u.get("llm_calls"):
        cost.append(f"{u['llm_calls']} LLM calls")
    if u.get("kg_calls"):
        cost.append(f"{u['kg_calls']} KG calls")
    if update.get("answers"):
        parts.append(f"answers={_short(update['answers'])}")
    text = "; ".join(parts)
    return f"[{node}] {text}  ({', '.join(cost)})" if text else f"[{node}] ({', '.join(cost)})"


def _short(value: Any, width: int = 80) -> str:
    text = f"[{', '.join(map(str, value))}]" if isinstance(value, (list, tuple)) else str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _ask(
    question: str,
    method: str,
    kg_spec: str,
    model: str | None,
    settings: Sequence[str],
    as_json: bool,
    topic_entities: list[str] | None = None,
    max_tokens: int | None = None,
    stream: bool = False,
) -> int:
    question = _check_question(question)
    setup = MethodSetup.from_args(method, settings, model, max_tokens)
    kg = open_kg_spec(kg_spec)
    graph = setup.build(kg)
    ctx = setup.context(graph)
    inp = {"question": question, "topic_entities": topic_entities}
    if stream:
        out: dict[str, Any] = {}
        shown = sys.stderr if as_json else sys.stdout
        for mode, chunk in graph.stream(inp, context=ctx, stream_mode=["updates", "values"]):
            if mode == "values":
                out = dict(chunk)
                continue
            for node, update in chunk.items():
                print(format_update(node, update), file=shown, flush=True)
    else:
        out = graph.invoke(inp, context=ctx) if ctx is not None else graph.invoke(inp)
    _raise_run_level(out.get("errors") or [])
    if as_json:
        print(json.dumps(output_to_json(out, question), indent=2, ensure_ascii=False))
    else:
        _print_answer(out, kg)
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    return _ask(
        args.question,
        args.method,
        args.kg,
        args.model,
        args.set or [],
        args.json,
        args.topic or None,
        args.max_tokens,
        args.stream,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    print(f"Question: {args.question}  (method {args.method}, MetaQA KG, model {args.model})")
    return _ask(args.question, args.method, "metaqa", args.model, [], False, max_tokens=args.max_tokens)


def cmd_train(args: argparse.Namespace) -> int:
    from kg_agents.core.registry import get_trainer, list_trainers, run_trainer

    if not args.what:
        trainers = list_trainers()
        if not trainers:
            print("no trainers registered")
        for t in trainers:
            print(f"{t.name}  {t.description}")
        return 0
    get_trainer(args.what)
    result = run_trainer(args.what, args.set or [])
    print(json.dumps(_jsonable(result), indent=2))
    return 0


def cmd_prepare(args: argparse.Namespace) -> int:
    for w in prepare_local_model(args.dtypes, verify=args.verify):
        if args.verbose:
            done = f"converted in {w.seconds:.1f} s: {w.reason}" if w.converted else "cached, whole"
            print(f"{w.dtype}: {w.path} ({done})", file=sys.stderr)
    return 0


def cmd_build_tries(args: argparse.Namespace) -> int:
    """Offline KG-Tries (GCR, appendix B) for a file of entities or a dataset's topic entities."""
    from kg_agents.methods.gcr.build_tries import build_tries_command

    if (args.entities is None) == (args.dataset is None):
        raise ConfigError("build-tries needs exactly one of --entities FILE or --dataset NAME")
    if args.hops < 1 or args.max_paths < 1 or args.fanout_limit < 1:
        raise ConfigError("--hops, --max-paths and --fanout-limit must be >= 1")
    if args.entities is not None and not Path(args.entities).is_file():
        raise ConfigError(f"no entities file at {args.entities}")
    summary = build_tries_command(
        kg=args.kg,
        entities=args.entities,
        dataset=args.dataset,
        split=args.split,
        limit=args.limit,
        out=args.out,
        max_hops=args.hops,
        fanout_limit=args.fanout_limit,
        max_paths=args.max_paths,
        overwrite=args.overwrite,
        prepare_labels=args.prepare_labels,
    )
    out = Path(args.out)
    files = [f for f in out.glob("*.npz") if not f.name.startswith(".")]  # not a temporary file
    summary["total_bytes"] = sum(f.stat().st_size for f in files)
    summary["files"] = len(files)
    if args.json:
        print(json.dumps(_jsonable(summary), indent=2))
        return 0
    print(
        f"built {summary['n_built']} KG-Tries (L={args.hops}) in {out}; "
        f"{summary['n_skipped_existing']} already there; {summary['files']} files, "
        f"{summary['total_bytes'] / 1e6:.2f} MB in all"
    )
    if summary["n_built"]:
        print(
            f"per entity: build median {summary['seconds_median'] * 1000:.1f} ms, "
            f"p95 {summary['seconds_p95'] * 1000:.1f} ms; "
            f"file median {summary['bytes_median'] / 1024:.1f} KB, "
            f"p95 {summary['bytes_p95'] / 1024:.1f} KB"
        )
    if summary["truncated"]:
        print(
            f"limits hit (fan-out {args.fanout_limit} per entity and hop, or {args.max_paths} paths per "
            f"entity) for {summary['n_truncated']} entities: {', '.join(summary['truncated'][:10])}"
            + (" ..." if summary["n_truncated"] > 10 else "")
        )
    else:
        print("limits hit: none")
    if summary["unknown"]:
        print(
            f"{summary['n_unknown']} entities not in the KG, skipped: {', '.join(summary['unknown'][:10])}"
            + (" ..." if summary["n_unknown"] > 10 else "")
        )
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """Questions from a KG alone (the body is :func:`kg_agents.synth.cli.synth_command`)."""
    from kg_agents.synth.cli import synth_command

    return synth_command(args)


def cmd_version(args: argparse.Namespace) -> int:
    from kg_agents import __version__

    print(__version__)
    return 0


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    """The ``kg-agents`` argument parser."""
    verbose_help = "show model loading: progress bars and library warnings"
    # -v before or after the command: the command's own flag leaves the value alone when not given
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=verbose_help)
    p = argparse.ArgumentParser(prog="kg-agents", description="Faithful LLM reasoning over knowledge graphs.")
    p.add_argument("-v", "--verbose", action="store_true", help=verbose_help)
    sub = p.add_subparsers(dest="cmd", required=True)

    def add_parser(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[verbose], **kwargs)

    add_parser("version", help="print the version").set_defaults(func=cmd_version)
    add_parser("methods", help="list the registered reasoning methods").set_defaults(func=cmd_methods)

    def method_args(sp: argparse.ArgumentParser, *, default_method: str | None) -> None:
        sp.add_argument(
            "--method", default=default_method, help="a registered method (see `kg-agents methods`)"
        )
        sp.add_argument(
            "--model",
            default="local",
            help=(
                "chat model: local (default), local:DIR (a checkpoint or a LoRA adapter folder) or "
                "openai:<model> (server URL in "
                "$OPENAI_BASE_URL)"
            ),
        )
        sp.add_argument("--max-tokens", type=int, default=None, help="most new tokens per model call")
        sp.add_argument(
            "--set",
            action="append",
            metavar="KEY=VALUE",
            help="a method option (factory keyword or per-run context field); repeatable",
        )

    a = add_parser("ask", help="answer one question")
    a.add_argument("question")
    method_args(a, default_method="graph_rag")
    a.add_argument(
        "--kg", default="metaqa", help="bundled name, triples file or SPARQL URL (default: metaqa)"
    )
    a.add_argument("--topic", action="append", metavar="ENTITY", help="a topic entity (else linked)")
    a.add_argument("--json", action="store_true", help="print the output contract as JSON")
    a.add_argument("--stream", action="store_true", help="print each node's step as it finishes")
    a.set_defaults(func=cmd_ask)

    d = add_parser("demo", help="answer a sample MetaQA question with the local model")
    d.add_argument("--method", default="dualr", help="a registered method (default: dualr)")
    d.add_argument("--model", default="local")
    d.add_argument("--max-tokens", type=int, default=None, help="most new tokens per model call")
    d.add_argument("--question", default=DEMO_QUESTION)
    d.set_defaults(func=cmd_demo)

    add_eval_parser(add_parser, method_args, build_parser)
    add_report_parser(add_parser)

    t = add_parser("train", help="train a component (run without a name to list trainers)")
    t.add_argument("what", nargs="?")
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="a trainer option; repeatable")
    t.set_defaults(func=cmd_train)

    b = add_parser("build-tries", help="build KG-Tries offline for a set of entities (GCR)")
    b.add_argument(
        "--kg", default="metaqa", help="bundled name, triples file or SPARQL URL (default: metaqa)"
    )
    b.add_argument("--entities", metavar="FILE", help="a text file with one entity id per line")
    b.add_argument("--dataset", metavar="NAME", help="build tries for this dataset's topic entities instead")
    b.add_argument(
        "--split",
        default="validation",
        choices=["dev", "train", "validation"],
        help="the dataset's split (default: validation, as `eval`)",
    )
    b.add_argument("--limit", type=int, default=None, help="the dataset's first N questions")
    b.add_argument("--hops", type=int, default=2, help="L, path length in hops (default: 2)")
    b.add_argument("--out", required=True, metavar="DIR", help="the trie directory (gcr's trie_dir)")
    b.add_argument("--max-paths", type=int, default=20_000, help="paths per entity (default: 20000)")
    b.add_argument(
        "--fanout-limit", type=int, default=500, help="neighbours per entity and hop (default: 500)"
    )
    b.add_argument("--overwrite", action="store_true", help="rebuild tries that exist, or other settings")
    b.add_argument(
        "--prepare-labels",
        action="store_true",
        help="tokenise every id and relation of the KG once first (many entities, an in-memory KG)",
    )
    b.add_argument("--json", action="store_true", help="print the summary as JSON")
    b.set_defaults(func=cmd_build_tries)

    from kg_agents.synth.cli import add_synth_arguments

    s = add_parser("synth", help="synthesise questions with their answers from a KG alone")
    add_synth_arguments(s)
    s.set_defaults(func=cmd_synth)

    from kg_agents.cli.specialise import add_specialise_parser

    add_specialise_parser(add_parser)

    from kg_agents.packs.cli import add_pack_commands

    add_pack_commands(add_parser("pack", help="show, list or register KG packs (see docs/packs.md)"))
    w = add_parser("prepare", help="convert and cache the local model's weights in each dtype (once)")
    w.add_argument("--dtypes", nargs="+", default=list(CACHED_DTYPES), choices=CACHED_DTYPES)
    w.add_argument("--verify", action="store_true", help="check every cached file's SHA-256, not its size")
    w.set_defaults(func=cmd_prepare)
    return p


def _endpoint_hint(exc: BaseException) -> str:
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    return f" ({url})" if url is not None and str(url) not in str(exc) else ""


def interrupted_message(args: argparse.Namespace, argv: Sequence[str]) -> str:
    """The line ``kg-agents`` prints when Ctrl-C ends a command: what was kept, and how to go on.

    ``argv`` is the command line (without the program name); the resume command repeats it exactly.
    """
    again = "kg-agents " + shlex.join(argv)
    if args.cmd == "eval" and args.grid:
        return (
            f"kg-agents: interrupted; the grid's finished runs are kept, and its current run's finished "
            f"questions; to resume, run: {again}"
        )
    if args.cmd == "eval" and not args.compare and args.out:
        from kg_agents.eval.runner import PREDICTIONS, read_predictions

        path = Path(args.out) / PREDICTIONS
        try:
            n = sum(1 for r in read_predictions(path).values() if not r.get("error"))
        except (OSError, KGAgentsError):
            n = 0
        return f"kg-agents: interrupted; {n} finished questions are in {path}; to resume, run: {again}"
    if args.cmd == "train" and args.what:
        from kg_agents.core.registry import get_trainer

        try:
            resumes = "resume" in get_trainer(args.what).options()
        except KGAgentsError:
            resumes = False
        if resumes:
            return f"kg-agents: interrupted; to resume from the last checkpoint, run: {again}"
        return f"kg-agents: interrupted; this trainer does not resume; to train again, run: {again}"
    if args.cmd == "synth":
        return (
            f"kg-agents: interrupted; synth writes its files at the end (stats.json last); run again: {again}"
        )
    if args.cmd == "build-tries":
        return f"kg-agents: interrupted; the tries built so far are kept; to resume, run: {again}"
    return "kg-agents: interrupted"


def _raised_over_an_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a ``KeyboardInterrupt`` unwound (a library's cleanup failing
    because Ctrl-C landed inside it): the run was interrupted, whatever the last error says."""
    seen: set[int] = set()
    ctx = exc.__context__
    while ctx is not None and id(ctx) not in seen:
        if isinstance(ctx, KeyboardInterrupt):
            return True
        seen.add(id(ctx))
        ctx = ctx.__context__
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; return the exit status (0 ok, 1 failure while running, 2 bad input, 130 Ctrl-C)."""
    from kg_agents.eval.runner import is_run_level_error

    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if not args.verbose:
        quiet_loading()
    set_loading_progress(args.verbose)
    try:
        try:
            return int(args.func(args))
        except Exception as exc:
            if _raised_over_an_interrupt(exc):
                raise KeyboardInterrupt from exc
            raise
    except KeyboardInterrupt:
        sys.stderr.write("\n" + interrupted_message(args, argv) + "\n")
        sys.stderr.flush()
        return 130
    except (ConfigError, DataFormatError, FileNotFoundError) as exc:
        print(f"kg-agents: error: {exc}", file=sys.stderr)
        return 2
    except KGAgentsError as exc:
        print(f"kg-agents: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        if not is_run_level_error(exc):
            raise
        print(f"kg-agents: error: {type(exc).__name__}: {exc}{_endpoint_hint(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

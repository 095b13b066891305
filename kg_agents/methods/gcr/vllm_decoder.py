"""Graph-constrained decoding against a vLLM server (GCR, section 4.3), through its OpenAI-compatible API.

vLLM 0.32 silently ignores ``structured_outputs`` under beam search, so
:class:`VLLMConstrainedDecoder` never asks the server for beam search. It gets the K best paths of the
KG-Trie one of two ways, chosen per question by the trie's size:

- ``exact`` (tries of at most ``score_limit`` paths): every path sentence, followed by EOS, is scored
  with prompt log-probabilities in batched ``/v1/completions`` requests, and the K best are returned
  (exact top-K; no search error).
- ``beam`` (larger tries): beam search over the trie, driven by the client. At each step the running
  beams are one ``max_tokens=1`` request that asks for the log-probabilities of exactly their trie
  children (vLLM's ``logprob_token_ids``); the server's prefix cache reuses the prompt and the beams'
  shared prefixes. (With ``forced_runs=True`` a beam entering a run of forced tokens, e.g. the rest of
  an entity name, gets the whole run scored at once by prompt log-probabilities instead.) The search
  itself follows transformers' beam search (K running beams, EOS candidates finish when among the top
  K, early stopping once K paths are finished), so it returns what
  :class:`~.local_decoder.LocalConstrainedDecoder` returns for the same model and trie, up to
  floating-point differences between the two runtimes.

Scores are transformers' beam scores: the sum of the model's log-probabilities (full-vocabulary
softmax, not renormalised over the allowed tokens) of the path's tokens and the EOS after it, divided
by ``(tokens + 1) ** length_penalty``. Every returned path is a whole sentence of the trie by
construction, and is looked up in the trie again before it is returned (no fallback to the vocabulary).
Hypothesis answers come from one batched greedy request: each path, ``\\n# Answer:\\n``, one line.

The prompt is rendered and tokenised locally with ``tokenizer`` (the trie must use the same one) and
sent as token ids, so prompt, path and answer boundaries are exactly those of the local decoder. The
first call checks that the server's ``/tokenize`` agrees with ``tokenizer`` on probe texts.

Example:
    >>> from kg_agents.methods.gcr.vllm_decoder import VLLMConstrainedDecoder
    >>> dec = VLLMConstrainedDecoder("http://127.0.0.1:8000/v1")          # doctest: +SKIP
    >>> out = dec.generate(messages, trie, num_beams=5)                  # doctest: +SKIP
    >>> out[0].path_text, out[0].continuation, dec.last_stats["route"]   # doctest: +SKIP
    ('Splash -> directed_by -> Ron Howard', 'Ron Howard', 'beam')
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.local_model import ensure_converted
from kg_agents.llm.resolve import check_server
from kg_agents.llm.vllm_client import VLLMClient
from kg_agents.methods.gcr.decoding import (
    ASSISTANT_PREFIX,
    DecodedPath,
    TrieDecoder,
    candidates_of,
    check_num_beams,
    decoded_path,
    renormalised,
)
from kg_agents.methods.gcr.trie import END, PATH_END, PATH_START, KGTrie

__all__ = [
    "MAX_LOGPROB_TOKEN_IDS",
    "PROBE_TEXTS",
    "NextLogprobs",
    "Route",
    "VLLMConstrainedDecoder",
    "batched",
    "beam_score",
    "load_default_tokenizer",
    "rank_top_k",
    "trie_beam_search",
]

T = TypeVar("T")
Route = Literal["auto", "exact", "beam"]
#: vLLM's upper bound on ``logprob_token_ids`` per request.
MAX_LOGPROB_TOKEN_IDS = 128
#: Texts whose tokenisation must agree between the local tokenizer and the server's.
PROBE_TEXTS = (
    f"{PATH_START} Tom Hanks -> ~starred_actors -> Big, The (1988) -> release_year -> 1988 {PATH_END}",
    "Émile Zola -> ~written_by -> Ça ira\n# Answer:\n",
)


# --------------------------------------------------------------------------- pure parts
def batched(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive chunks of at most ``size`` (the last may be shorter).

    Example:
        >>> list(batched([1, 2, 3, 4, 5], 2))
        [[1, 2], [3, 4], [5]]
    """
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


def beam_score(logprob_sum: float, n_tokens: int, length_penalty: float = 1.0) -> float:
    """transformers' finished-beam score: ``logprob_sum / n_tokens ** length_penalty``.

    ``n_tokens`` counts the generated tokens including the final EOS.

    Example:
        >>> beam_score(-6.0, 3)
        -2.0
    """
    return logprob_sum / (max(n_tokens, 1) ** length_penalty)


def rank_top_k(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the ``k`` highest finite scores, best first; ties keep the earlier index first.

    Example:
        >>> rank_top_k([-1.0, -0.5, float("-inf"), -0.5], 2)
        [1, 3]
    """
    order = sorted((i for i, s in enumerate(scores) if math.isfinite(s)), key=lambda i: (-scores[i], i))
    return order[:k]


NextLogprobs = Callable[[list[tuple[int, ...]], list[list[int]]], list[list[float]]]


def trie_beam_search(
    trie: KGTrie,
    next_logprobs: NextLogprobs,
    num_beams: int,
    eos_token_id: int,
    *,
    length_penalty: float = 1.0,
    max_steps: int | None = None,
) -> tuple[list[tuple[tuple[int, ...], float]], int]:
    """Beam search over the sentences of ``trie`` (transformers' semantics, ``early_stopping=True``).

    At each step every running beam offers its trie children (and EOS where a sentence ends), scored
    by ``next_logprobs``; the ``2 * num_beams`` best candidates by accumulated log-probability are
    considered: EOS candidates among the first ``num_beams`` finish with :func:`beam_score`, the
    ``num_beams`` best others keep running. The search stops when ``num_beams`` sentences are finished
    or no beam can go on.

    Args:
        trie: the KG-Trie.
        next_logprobs: ``(prefixes, candidates) -> logprobs``: for each beam's token prefix, the model's
            log-probability of each candidate next token (same order).
        num_beams: K.
        eos_token_id: the token that ends a sentence.
        length_penalty: as transformers.
        max_steps: at most this many steps (default: the trie's longest sentence + 1).

    Returns:
        ``(finished, steps)``: up to K ``(sentence tokens, score)``, best first, and the steps taken.
    """
    check_num_beams(num_beams)
    limit = (trie.max_len + 1) if max_steps is None else max_steps
    running: list[tuple[tuple[int, ...], float]] = [((), 0.0)]
    finished: list[tuple[tuple[int, ...], float]] = []
    steps = 0
    while running and len(finished) < num_beams and steps < limit:
        steps += 1
        prefixes = [p for p, _ in running]
        cands = [candidates_of(trie, p, eos_token_id) for p in prefixes]
        live = [i for i, c in enumerate(cands) if c]
        lps = next_logprobs([prefixes[i] for i in live], [cands[i] for i in live]) if live else []
        pool: list[tuple[float, int, int]] = []  # (accumulated logprob, beam, token)
        for i, row in zip(live, lps, strict=True):
            base = running[i][1]
            for tok, lp in zip(cands[i], row, strict=True):
                if math.isfinite(lp):
                    pool.append((base + lp, i, tok))
        pool.sort(key=lambda x: -x[0])
        new_running: list[tuple[tuple[int, ...], float]] = []
        for rank, (acc, i, tok) in enumerate(pool[: 2 * num_beams]):
            prefix = running[i][0]
            if tok == eos_token_id and trie.is_complete(prefix):
                if rank < num_beams:
                    finished.append((prefix, beam_score(acc, len(prefix) + 1, length_penalty)))
            elif len(new_running) < num_beams:
                new_running.append(((*prefix, tok), acc))
        running = new_running
    finished.sort(key=lambda x: -x[1])
    return finished[:num_beams], steps


def trie_renormalised(
    trie: KGTrie, sentences: Sequence[Sequence[int]], rows: Sequence[Sequence[float]], eos_token_id: int
) -> list[list[float]]:
    """Each sentence's token log-probabilities renormalised over the tokens the trie allows at each step
    (``"trie"`` path scores), from the full-vocabulary ones of every sentence of the trie (each followed
    by EOS): every allowed token at every step lies on some sentence, so its log-probability is known.

    Raises:
        ModelError: a step's allowed token has no log-probability (``sentences`` is not the whole trie).
    """
    seen: dict[tuple[int, ...], dict[int, float]] = {}
    for sent, row in zip(sentences, rows, strict=True):
        for j, lp in enumerate(row):
            seen.setdefault(tuple(sent[:j]), {}).setdefault(sent[j], lp)
    out = []
    for sent, row in zip(sentences, rows, strict=True):
        new = []
        for j in range(len(row)):
            prefix = tuple(sent[:j])
            allowed = candidates_of(trie, prefix, eos_token_id)
            try:
                lps = [seen[prefix][t] for t in allowed]
            except KeyError as exc:
                raise ModelError(
                    f"no log-probability for an allowed token after {list(prefix)[:8]}..."
                ) from exc
            new.append(renormalised(lps)[allowed.index(sent[j])])
        out.append(new)
    return out


def _renormalising(next_logprobs: NextLogprobs) -> NextLogprobs:
    def renormalised_logprobs(prefixes: list[tuple[int, ...]], cands: list[list[int]]) -> list[list[float]]:
        return [renormalised(r) for r in next_logprobs(prefixes, cands)]

    return renormalised_logprobs


# --------------------------------------------------------------------------- the decoder
def load_default_tokenizer() -> Any:
    """The embedded SmolLM2-135M-Instruct tokenizer (what :class:`~kg_agents.llm.vllm_server.VLLMServer`
    serves by default), without loading the model's weights."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ensure_converted()))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


class VLLMConstrainedDecoder(TrieDecoder):
    """KG-Trie-constrained decoding with a model served by vLLM (``ConstrainedDecoder`` protocol).

    Args:
        base_url: the server's OpenAI-compatible base URL, ``http://HOST:PORT/v1``.
        model: the served model name (None: the server's only, or first, model).
        tokenizer: the served model's Hugging Face tokenizer, used locally to render prompts and build
            tries (None: the embedded SmolLM2 tokenizer). Checked against the server's ``/tokenize``.
        api_key: bearer token (local servers accept anything).
        timeout: seconds per HTTP request.
        max_answer_tokens: at most this many tokens for a hypothesis answer.
        path_scores: ``"model"`` (default; transformers' beam scores, as above) or ``"trie"`` (each token's
            log-probability renormalised over the tokens the trie allows there, as
            :class:`~.local_decoder.LocalConstrainedDecoder` does with the same option).
        length_penalty: beam score length penalty (transformers' meaning); default 1.0 with ``"model"``
            scores, 0.0 with ``"trie"`` scores.
        route: ``"auto"`` (``exact`` when the trie has at most ``score_limit`` paths, else ``beam``),
            ``"exact"`` or ``"beam"``.
        score_limit: the largest trie scored exactly under ``route="auto"``. Exact scoring costs one full
            prompt per path (vLLM does not prefix-cache prompt log-probabilities): measured here
            (``benchmarks/gcr/vllm_routes.py``), 0.3-0.45 s per path against 3-9 s for the beam route at
            K=3-10, so the two meet at about 10-25 paths.
        batch_size: prompts per scoring request of the exact route.
        max_workers: concurrent requests.
        forced_runs: in the beam route, score a run of forced tokens (one way on through the trie) in one
            prompt-log-probability request instead of one step request per token. Fewer requests, but
            vLLM recomputes the whole prompt for them (no prefix cache with prompt log-probabilities):
            worth it only when the server's prefix cache cannot hold the prompt (CPU's default 128-token
            blocks with a prompt shorter than that). Measured here with 32-token blocks (what
            :class:`~kg_agents.llm.vllm_server.VLLMServer` starts): K=10, 9.9 s without, 30.5 s with.

    Attributes:
        tokenizer: the tokenizer (graphs build the question's KG-Trie with it).
        signature: its :func:`~kg_agents.methods.gcr.trie.tokenizer_signature`.
        last_stats: figures of the last call: ``route``, ``prompt_tokens``, ``output_tokens``,
            ``steps`` (beam route), ``requests``, ``scored_paths`` (exact route), ``seconds``.

    Raises:
        ModelError: the server is unreachable or answers an error (the message names its URL).
        ConfigError: the server tokenizes differently from ``tokenizer``; a bad option.

    Examples:
        >>> dec = VLLMConstrainedDecoder("http://127.0.0.1:8000/v1", route="beam")  # doctest: +SKIP
        >>> trie = build_trie(kg, ["Splash"], dec.tokenizer)                       # doctest: +SKIP
        >>> [d.path_text for d in dec.generate(messages, trie, num_beams=3)]        # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        tokenizer: Any = None,
        api_key: str = "EMPTY",
        timeout: float = 300.0,
        max_answer_tokens: int = 24,
        path_scores: str = "model",
        length_penalty: float | None = None,
        route: Route = "auto",
        score_limit: int = 16,
        batch_size: int = 64,
        max_workers: int = 16,
        forced_runs: bool = False,
    ) -> None:
        if route not in ("auto", "exact", "beam"):
            raise ConfigError(f"route must be 'auto', 'exact' or 'beam', got {route!r}")
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"the vLLM base URL must start with http:// or https://, got {base_url!r}")
        if score_limit < 0 or batch_size < 1 or max_workers < 1:
            raise ConfigError("score_limit must be >= 0, batch_size and max_workers >= 1")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        super().__init__(
            tokenizer if tokenizer is not None else load_default_tokenizer(),
            max_answer_tokens=max_answer_tokens,
            path_scores=path_scores,
            length_penalty=length_penalty,
        )
        self.eos = int(self.tokenizer.eos_token_id)
        self.route = route
        self.score_limit = score_limit
        self.batch_size = batch_size
        self.max_workers = max_workers
        self.forced_runs = forced_runs
        self.client = VLLMClient(self.base_url, model or "", api_key=api_key, timeout=timeout)
        self._checked = False
        self._requests = 0

    def __repr__(self) -> str:
        return f"VLLMConstrainedDecoder({self.base_url!r}, model={self.model!r}, route={self.route!r})"

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()

    # ------------------------------------------------------------------ checks
    def check(self) -> None:
        """Find the served model and check that the server tokenizes like ``self.tokenizer`` (once).

        Raises:
            ModelError: the server is unreachable or does not serve ``model``.
            ConfigError: the server's tokenizer differs.
        """
        with self._lock:
            if self._checked:
                return
            names = check_server(self.base_url, self.model, self.api_key)
            if self.model is None:
                if not names:
                    raise ModelError(f"the vLLM server at {self.base_url} serves no model")
                self.model = names[0]
            self.client.model = self.model
            probes = [*PROBE_TEXTS, str(self.tokenizer.eos_token)]
            for text in probes:
                local = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                remote = self.client.tokenize(text)
                if list(local) != remote:
                    raise ConfigError(
                        f"the vLLM server at {self.base_url} ({self.model}) tokenizes {text!r} as "
                        f"{remote[:12]}..., the local tokenizer as {list(local)[:12]}...; "
                        "pass the served model's tokenizer="
                    )
            self._checked = True

    # ------------------------------------------------------------------ server calls
    def _completions(self, prompt: Any, **kwargs: Any) -> dict[str, Any]:
        with self._lock:
            self._requests += 1
        return self.client.completions(prompt, **kwargs)

    def score_sentences(self, prompt_ids: Sequence[int], sentences: Sequence[Sequence[int]]) -> list[float]:
        """Sum of log-probabilities of each ``sentence`` + EOS after ``prompt_ids`` (batched requests).

        Args:
            prompt_ids: the rendered prompt's token ids.
            sentences: token ids of path sentences (e.g. every sentence of a trie).

        Returns:
            One log-probability sum per sentence (its tokens and the EOS after it), in order.
        """
        rows = self.continuation_logprobs(prompt_ids, [[*s, self.eos] for s in sentences])
        return [float(sum(r)) for r in rows]

    def continuation_logprobs(
        self, prompt_ids: Sequence[int], continuations: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """Log-probability of every token of each continuation after ``prompt_ids`` (prompt log-probabilities,
        ``batch_size`` prompts per request, requests in parallel)."""
        rows = [[*prompt_ids, *c] for c in continuations]
        n = len(prompt_ids)
        chunks = list(batched(rows, self.batch_size))

        def run(chunk: list[list[int]]) -> list[list[float]]:
            data = self._completions(chunk, max_tokens=1, prompt_logprobs=0)
            choices = sorted(data["choices"], key=lambda c: c["index"])
            out = []
            for row, choice in zip(chunk, choices, strict=True):
                entries = choice.get("prompt_logprobs") or []
                if len(entries) != len(row):
                    raise ModelError(
                        f"the vLLM server at {self.base_url} returned {len(entries)} prompt "
                        f"log-probabilities for {len(row)} tokens"
                    )
                out.append([float(e[str(t)]["logprob"]) for t, e in zip(row[n:], entries[n:], strict=True)])
            return out

        with ThreadPoolExecutor(max_workers=min(self.max_workers, max(len(chunks), 1))) as pool:
            results = list(pool.map(run, chunks))
        return [r for res in results for r in res]

    def beam_logprobs(self, trie: KGTrie, prompt_ids: Sequence[int]) -> NextLogprobs:
        """The ``next_logprobs`` of :func:`trie_beam_search` for one question, with a memo.

        A beam at a branching node asks for its children's log-probabilities (:meth:`next_logprobs`). A
        beam at a node with one way on (a run of forced tokens, e.g. the rest of an entity name, or the
        EOS at a sentence's end) gets the log-probabilities of the whole run in one prompt-log-probability
        request, remembered for the steps that follow: the search is unchanged, the requests are fewer.
        """
        memo: dict[tuple[int, ...], dict[int, float]] = {}

        def forced_run(prefix: tuple[int, ...]) -> list[int]:
            node = trie.node(prefix)
            run: list[int] = []
            while node is not None:
                kids = [t for t in node if t != END]
                if END in node:
                    if not kids:
                        run.append(self.eos)
                    break
                if len(kids) != 1:
                    break
                run.append(kids[0])
                node = node[kids[0]]
            return run

        def next_logprobs(prefixes: list[tuple[int, ...]], cands: list[list[int]]) -> list[list[float]]:
            runs: list[tuple[tuple[int, ...], list[int]]] = []
            branches: list[tuple[tuple[int, ...], list[int]]] = []
            for p, c in zip(prefixes, cands, strict=True):
                if all(t in memo.get(p, {}) for t in c):
                    continue
                (runs if len(c) == 1 and self.forced_runs else branches).append((p, c))
            chains = [[*p, *forced_run(p)] for p, _ in runs]
            with ThreadPoolExecutor(max_workers=2) as pool:  # both kinds of request at once
                rows_f = pool.submit(self.continuation_logprobs, prompt_ids, chains) if runs else None
                lps_f = (
                    pool.submit(
                        self.next_logprobs, prompt_ids, [p for p, _ in branches], [c for _, c in branches]
                    )
                    if branches
                    else None
                )
                rows = rows_f.result() if rows_f is not None else []
                lps = lps_f.result() if lps_f is not None else []
            for (p, _), chain, row in zip(runs, chains, rows, strict=True):
                for j in range(len(p), len(chain)):
                    memo.setdefault(tuple(chain[:j]), {})[chain[j]] = row[j]
            for (p, c), row in zip(branches, lps, strict=True):
                memo.setdefault(p, {}).update(zip(c, row, strict=True))
            return [[memo[p][t] for t in c] for p, c in zip(prefixes, cands, strict=True)]

        return next_logprobs

    def next_logprobs(
        self,
        prompt_ids: Sequence[int],
        prefixes: Sequence[Sequence[int]],
        candidates: Sequence[Sequence[int]],
    ) -> list[list[float]]:
        """For each prefix, the log-probability of each of its candidate next tokens.

        ``max_tokens=1`` requests with ``logprob_token_ids`` (the server returns the raw, full-vocabulary
        log-probabilities of exactly those tokens): one request holds every prefix, asking for the union
        of their candidates, 128 tokens at a time (vLLM's limit); such requests run in parallel.
        """
        union = list(dict.fromkeys(t for c in candidates for t in c))
        jobs: list[tuple[list[int], list[int]]] = []  # (prefix indices, token chunk)
        for chunk in batched(union, MAX_LOGPROB_TOKEN_IDS):
            members = set(chunk)
            idx = [i for i, c in enumerate(candidates) if members.intersection(c)]
            for part in batched(idx, self.batch_size):
                jobs.append((part, chunk))

        def run(job: tuple[list[int], list[int]]) -> list[dict[int, float]]:
            idx, chunk = job
            data = self._completions(
                [[*prompt_ids, *prefixes[i]] for i in idx],
                max_tokens=1,
                logprobs=len(chunk),
                logprob_token_ids=chunk,
                return_tokens_as_token_ids=True,
            )
            try:
                choices = sorted(data["choices"], key=lambda c: c["index"])
                tops = [c["logprobs"]["top_logprobs"][0] for c in choices]
                return [{t: float(top[f"token_id:{t}"]) for t in chunk} for top in tops]
            except (KeyError, IndexError, TypeError) as exc:
                raise ModelError(
                    f"the vLLM server at {self.base_url} did not return the requested token "
                    f"log-probabilities (logprob_token_ids needs vLLM >= 0.32): {exc!r}"
                ) from exc

        with ThreadPoolExecutor(max_workers=min(self.max_workers, max(len(jobs), 1))) as pool:
            results = list(pool.map(run, jobs))
        merged: list[dict[int, float]] = [{} for _ in candidates]
        for (idx, _), res in zip(jobs, results, strict=True):
            for i, lp in zip(idx, res, strict=True):
                merged[i].update(lp)
        return [[merged[i][t] for t in cands] for i, cands in enumerate(candidates)]

    def _answers(
        self, prompt_ids: Sequence[int], sentences: Sequence[Sequence[int]]
    ) -> tuple[list[str], int]:
        """Greedy one-line hypothesis answers after each sentence, in one batched request."""
        rows = self.answer_rows(prompt_ids, sentences)
        data = self._completions(rows, max_tokens=self.max_answer_tokens, temperature=0.0, stop=["\n"])
        choices = sorted(data["choices"], key=lambda c: c["index"])
        answers = [str(c["text"]).split("\n", 1)[0].strip() for c in choices]
        return answers, int((data.get("usage") or {}).get("completion_tokens", 0))

    # ------------------------------------------------------------------ protocol
    def generate(
        self,
        prompt: str | Sequence[Any],
        trie: KGTrie | None,
        num_beams: int = 10,
        *,
        answer: bool = True,
        assistant_prefix: str = ASSISTANT_PREFIX,
        route: Route | None = None,
        **kwargs: Any,
    ) -> list[DecodedPath]:
        """The ``num_beams`` best reasoning paths of ``trie``, each with a hypothesis answer, best first.

        Args:
            prompt: text, or chat messages (rendered with the chat template, see :meth:`render`).
            trie: the question's KG-Trie, built with :attr:`tokenizer`.
            num_beams: K.
            answer: also generate a hypothesis answer after each path.
            assistant_prefix: text appended after the generation prompt when ``prompt`` is messages.
            route: overrides the decoder's route for this call.

        Returns:
            Up to ``num_beams`` ``DecodedPath`` s with distinct paths, every one a whole sentence of the
            trie (``meta["in_trie"]`` True, ``meta["route"]``).

        Raises:
            ModelError: the server failed (names its URL), or the trie was built with another tokenizer.
            ConfigError: ``trie`` is None (the unconstrained ablation runs on the local decoder), or the
                server tokenizes differently.
            ValueError: ``num_beams < 1``.
        """
        check_num_beams(num_beams)
        if trie is None:
            raise ConfigError(
                "VLLMConstrainedDecoder needs a KG-Trie; the unconstrained ablation "
                "(constrained=False) runs on LocalConstrainedDecoder"
            )
        self.check_trie(trie)
        use = route or self.route
        if use not in ("auto", "exact", "beam"):
            raise ConfigError(f"route must be 'auto', 'exact' or 'beam', got {use!r}")
        if use == "auto":
            use = "exact" if len(trie) <= self.score_limit else "beam"
        self.last_stats = {
            "route": use,
            "prompt_tokens": 0,
            "output_tokens": 0,
            "steps": 0,
            "requests": 0,
            "scored_paths": 0,
            "seconds": 0.0,
        }
        if len(trie) == 0:
            return []
        self.check()
        t0 = time.perf_counter()
        self._requests = 0
        prompt_ids = self.tokenizer(self.render(prompt, assistant_prefix), add_special_tokens=False)[
            "input_ids"
        ]
        steps = 0
        if use == "exact":
            sentences = [[*seq, self.eos] for seq in trie.sequences]
            rows = self.continuation_logprobs(prompt_ids, sentences)
            if self.path_scores == "trie":
                rows = trie_renormalised(trie, sentences, rows, self.eos)
            scores = [
                beam_score(sum(r), len(seq) + 1, self.length_penalty)
                for r, seq in zip(rows, trie.sequences, strict=True)
            ]
            best = [(trie.sequences[i], scores[i]) for i in rank_top_k(scores, num_beams)]
        else:
            next_logprobs = self.beam_logprobs(trie, prompt_ids)
            if self.path_scores == "trie":
                next_logprobs = _renormalising(next_logprobs)
            best, steps = trie_beam_search(
                trie,
                next_logprobs,
                num_beams,
                self.eos,
                length_penalty=self.length_penalty,
            )
        ranked: list[tuple[tuple[int, ...], str, float]] = []
        for seq, score in best:
            text = trie.path_text_of(seq)
            if text is None:  # cannot happen by construction; never return a path off the trie
                raise ModelError(f"internal error: decoded tokens {list(seq)[:12]}... are not a trie path")
            ranked.append((tuple(seq), text, score))
        answers, n_ans = (
            self._answers(prompt_ids, [s for s, _, _ in ranked]) if answer and ranked else ([], 0)
        )
        results = [
            decoded_path(
                text,
                score,
                answers[j] if answer else "",
                answer=answer,
                meta={"in_trie": True, "route": use, "tokens": len(seq)},
            )
            for j, (seq, text, score) in enumerate(ranked)
        ]
        self.last_stats = {
            "route": use,
            "prompt_tokens": len(prompt_ids),
            "output_tokens": sum(len(s) for s, _, _ in ranked) + n_ans,
            "steps": steps,
            "requests": self._requests,
            "scored_paths": len(trie) if use == "exact" else 0,
            "seconds": time.perf_counter() - t0,
        }
        return results

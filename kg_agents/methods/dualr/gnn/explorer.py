"""DualR's semantic-aware knowledge explorer (paper section 3.2, algorithms 1 and 2).

- :class:`ExplorationGraph` is the explorer's view of a :class:`~kg_agents.kg.base.KnowledgeGraph`:
  it fetches neighbours in batches through the protocol (``neighbors_many``, both directions, with a
  fan-out limit), keeps what it fetched as integer arrays, and encodes each relation once.
- :class:`DualRExplorer` is the GNN: the topic entities start from the question encoding, each layer
  expands the entities that entered the candidate set at the previous layer, weighs every edge with
  :class:`~.conv.DualRConv` (eq. 1), keeps the top-K edges of each question (K per layer),
  propagates (eq. 2), and scores every candidate with an MLP and a softmax (eq. 3). An identity edge lets
  each candidate keep its state, so the candidates are :math:`\\tilde C^0 \\cup \\dots \\cup \\tilde C^L`.
- :class:`Exploration` holds the result of one batch: candidate probabilities, the kept edges of each
  layer with their weights (for the greedy path backtracking of algorithm 2), and the candidate-set size
  before and after pruning (appendix C.1).

Pruning keeps, for each expanded (head) entity, its top-K edges by attention weight (section 3.2: "for
each head node e_s, we select the top-K edges"), so a hub contributes at most K new candidates.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.testing import CONTRACT_TRIPLES
    >>> kg = MemoryKG(CONTRACT_TRIPLES)
    >>> _ = torch.manual_seed(0)  # a fixed untrained model (the example must not depend on earlier draws)
    >>> model = DualRExplorer(ExplorerConfig(hidden=16, layers=2, top_k=(10, 10), encoder_dim=8))
    >>> graph = ExplorationGraph(kg, encoder=None, relation_dim=8)
    >>> q = torch.randn(1, 8)
    >>> ex = model.explore(q, [["Splash"]], graph)
    >>> ex.chain(0, ex.top_candidates(0, 1)[0][0]).start
    'Splash'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path as FsPath
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.files import atomic_target
from kg_agents.kg.base import Hop, KnowledgeGraph, Path
from kg_agents.kg.text import relation_words
from kg_agents.methods.dualr.gnn.conv import DualRConv
from kg_agents.methods.dualr.gnn.encoding import DEFAULT_ENCODER, Encoder, encode_cached, encoder_dim

__all__ = [
    "DualRExplorer",
    "Exploration",
    "ExplorationGraph",
    "ExplorerConfig",
    "backtrack",
    "topk_per_group",
]

_KEY = 1 << 32  # node key = question index * _KEY + entity id


@dataclass
class ExplorerConfig:
    """Architecture of a :class:`DualRExplorer` (saved with its checkpoint).

    Args:
        hidden: the GNN size :math:`d`.
        layers: exploration steps :math:`L`.
        top_k: edges kept per expanded entity at each layer (one value per layer, table 8's K).
        encoder: name of the frozen text encoder the checkpoint was trained with.
        encoder_dim: its output size :math:`d_L`.
    """

    hidden: int = 64
    layers: int = 3
    top_k: tuple[int, ...] = (100, 100, 100)
    encoder: str = DEFAULT_ENCODER
    encoder_dim: int = 384

    def __post_init__(self) -> None:
        self.top_k = tuple(int(k) for k in self.top_k)
        if self.hidden < 1 or self.layers < 1:
            raise ConfigError(f"hidden and layers must be >= 1, got {self.hidden} and {self.layers}")
        if len(self.top_k) == 1 and self.layers > 1:
            self.top_k = self.top_k * self.layers
        if len(self.top_k) != self.layers or min(self.top_k) < 1:
            raise ConfigError(f"top_k needs {self.layers} values >= 1 (one per layer), got {self.top_k}")


def _intern(ids: dict[str, int], names: list[str], name: str) -> int:
    """The id of ``name`` in ``ids``; the first time, the next one (``name`` appended to ``names``)."""
    i = ids.get(name)
    if i is None:
        i = ids[name] = len(names)
        names.append(name)
    return i


class ExplorationGraph:
    """The explorer's batched, cached view of a knowledge graph.

    Entities are given small integer ids as they are met; their neighbour lists (both directions, at
    most ``fanout_limit`` per entity) are fetched with one ``neighbors_many`` call per expansion and
    kept as arrays (at most ``max_cached`` entities; the cache is cleared when full). Relations are
    encoded once with ``encoder`` (cached on disk by :func:`~.encoding.encode_cached`).

    Args:
        kg: any :class:`~kg_agents.kg.base.KnowledgeGraph`.
        encoder: the frozen text encoder for relations (None: random fixed encodings, for tests only
            when ``relation_dim`` is given).
        fanout_limit: at most this many edges per entity and expansion; hits are counted in
            ``truncated``.
        max_cached: neighbour lists kept in memory.
        relation_dim: the encoding size when ``encoder`` is None.
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        encoder: Encoder | None,
        *,
        fanout_limit: int = 1000,
        max_cached: int = 200_000,
        relation_dim: int | None = None,
    ) -> None:
        if fanout_limit < 1:
            raise ConfigError(f"fanout_limit must be >= 1, got {fanout_limit}")
        if encoder is None and relation_dim is None:
            raise ConfigError("ExplorationGraph needs a text encoder (or relation_dim for random encodings)")
        self.kg = kg
        self.encoder = encoder
        self.fanout_limit = fanout_limit
        self.max_cached = max_cached
        self.ent2id: dict[str, int] = {}
        self.id2ent: list[str] = []
        self.rel2id: dict[str, int] = {}
        self.id2rel: list[str] = []
        dim = encoder_dim(encoder) if encoder is not None else int(relation_dim or 0)
        self._rel_enc = np.zeros((0, dim), np.float32)
        self._adj: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.truncated = 0
        self._rng = np.random.default_rng(0)
        self._rel_tensor: Tensor | None = None

    # -- ids
    def entity_id(self, name: str) -> int:
        return _intern(self.ent2id, self.id2ent, name)

    def _relation_id(self, name: str) -> int:
        return _intern(self.rel2id, self.id2rel, name)

    def relation_encodings(self) -> Tensor:
        """``(num_relations, d_L)`` encodings of the relations met so far (new ones encoded now)."""
        have = self._rel_enc.shape[0]
        if have < len(self.id2rel):
            new = self.id2rel[have:]
            if self.encoder is not None:
                enc = encode_cached(self.encoder, [relation_words(r) for r in new], tag="relations")
            else:
                enc = self._rng.standard_normal((len(new), self._rel_enc.shape[1])).astype(np.float32)
            self._rel_enc = np.concatenate([self._rel_enc, enc], 0)
            self._rel_tensor = None
        if self._rel_tensor is None:
            self._rel_tensor = torch.from_numpy(self._rel_enc)
        return self._rel_tensor

    def warm_relations(self) -> None:
        """Register and encode every relation of the KG up front (one ``all_relations`` call)."""
        for r in self.kg.all_relations():
            self._relation_id(r)
        self.relation_encodings()

    # -- expansion
    def expand(self, entity_ids: Sequence[int]) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(relation codes, neighbour ids)`` of each entity; code ``2r`` = forward, ``2r+1`` = inverse."""
        missing = [e for e in dict.fromkeys(entity_ids) if e not in self._adj]
        if missing:
            if len(self._adj) + len(missing) > self.max_cached:
                self._adj.clear()
            names = [self.id2ent[e] for e in missing]
            fetched = self.kg.neighbors_many(names, direction="both", limit=self.fanout_limit)
            for e, name in zip(missing, names, strict=True):
                triples: Sequence[Any] = fetched.get(name) or []
                if getattr(triples, "truncated", False):
                    self.truncated += 1
                codes = np.empty(len(triples), np.int64)
                tails = np.empty(len(triples), np.int64)
                for i, t in enumerate(triples):
                    rid = self._relation_id(t.relation)
                    if t.head == name:
                        codes[i], tails[i] = 2 * rid, self.entity_id(t.tail)
                    else:
                        codes[i], tails[i] = 2 * rid + 1, self.entity_id(t.head)
                self._adj[e] = (codes, tails)
        return [self._adj[e] for e in entity_ids]

    def hop(self, src: int, code: int, dst: int) -> Hop:
        """The :class:`~kg_agents.kg.base.Hop` of an explored edge."""
        rel = self.id2rel[code // 2]
        return Hop(self.id2ent[src], rel, self.id2ent[dst], inverse=bool(code % 2))


@dataclass
class LayerEdges:
    """The edges one layer kept, for backtracking (all 1-d tensors of equal length)."""

    batch: Tensor
    src: Tensor
    code: Tensor  # relation code; -1 = identity
    dst: Tensor
    alpha: Tensor


@dataclass
class Exploration:
    """What :meth:`DualRExplorer.explore` found for a batch of questions.

    Attributes:
        batch, entity: question index and entity id of each final candidate.
        logits: candidate scores (eq. 3 before the softmax); ``probs``: the per-question softmax.
        layers: the kept edges of every layer.
        before_pruning, after_pruning: per layer, ``(B,)`` counts of candidate entities reached by all
            edges vs. by the kept ones (appendix C.1).
        graph: the :class:`ExplorationGraph` (to turn ids back into names).
    """

    batch: Tensor
    entity: Tensor
    logits: Tensor
    probs: Tensor
    layers: list[LayerEdges]
    before_pruning: list[Tensor]
    after_pruning: list[Tensor]
    graph: ExplorationGraph
    topics: list[list[int]] = field(default_factory=list)

    def top_candidates(self, b: int, n: int) -> list[tuple[int, float]]:
        """The ``n`` most probable ``(entity id, probability)`` of question ``b``, best first.

        Equal probabilities (entities the exploration reached the same way score the same) are ordered
        by the entity's name, not by its integer id: ids are given as entities are met, so they depend on
        which questions ran before in the process (and in what order, under concurrency).
        """
        mask = self.batch == b
        probs = self.probs[mask].detach().tolist()
        ents = self.entity[mask].tolist()
        names = self.graph.id2ent
        ranked = sorted(zip(probs, ents, strict=True), key=lambda pe: (-pe[0], names[pe[1]]))
        return [(int(e), float(p)) for p, e in ranked[: max(n, 0)]]

    def kept_edges(self, b: int) -> list[list[tuple[str, str | None, bool, str, float]]]:
        """The kept edges of question ``b``, per layer, as ``(source, relation, inverse, target, alpha)``
        with entity ids as strings (``relation`` is None for identity edges). Plain data: it can travel
        in a graph's state and feed :func:`backtrack`."""
        g = self.graph
        out = []
        for edges in self.layers:
            m = torch.nonzero(edges.batch == b).flatten().tolist()
            src, code, dst, alpha = (
                edges.src.tolist(),
                edges.code.tolist(),
                edges.dst.tolist(),
                edges.alpha.tolist(),
            )
            layer = []
            for i in m:
                c = code[i]
                rel = None if c < 0 else g.id2rel[c // 2]
                inverse = bool(c >= 0 and c % 2)
                layer.append((g.id2ent[src[i]], rel, inverse, g.id2ent[dst[i]], float(alpha[i])))
            out.append(layer)
        return out

    def chain(self, b: int, entity: int) -> Path:
        """Algorithm 2 for candidate ``entity`` (an id) of question ``b``: see :func:`backtrack`."""
        return backtrack(self.kept_edges(b), self.graph.id2ent[entity])


def _edge_order(edge: tuple[str, str | None, bool, str, float]) -> tuple[float, str, str, bool]:
    """Backtracking's preference among edges into one entity: the highest attention weight, then (equal
    weights) the source's name, the relation's and forward before inverse, so the chain does not depend
    on the order the edges were found in."""
    src, rel, inverse, _, alpha = edge
    return (-alpha, src, rel or "", inverse)


def backtrack(
    layers: Sequence[Sequence[tuple[str, str | None, bool, str, float]]],
    entity: str,
    topic: str | None = None,
) -> Path:
    """Algorithm 2 (path backtracking): from ``entity`` back to a topic entity, taking at each layer
    (last to first) the kept edge into the current entity with the highest attention weight (equal weights:
    by the source's name, then the relation's); an identity edge keeps the entity (no hop). Returns the
    :class:`Path` walked forwards from the topic entity.

    With ``topic`` (a question with several topic entities), only edges from entities the kept edges
    reach from ``topic`` by then are taken, so the path starts at ``topic``; empty when ``entity`` is not
    reached from it.

    Args:
        layers: per layer, the kept edges ``(source, relation or None, inverse, target, alpha)``
            (:meth:`Exploration.kept_edges`).
        entity: the candidate answer id.
        topic: the topic entity the path must start from (None: whichever the edges lead to).

    Example:
        >>> layers = [[("Splash", "directed_by", False, "Ron Howard", 0.9),
        ...            ("Splash", None, False, "Splash", 0.5)],
        ...           [("Ron Howard", None, False, "Ron Howard", 0.8)]]
        >>> backtrack(layers, "Ron Howard").to_text()
        'Splash -> directed_by -> Ron Howard'
    """
    # sources[k]: the entities reached from ``topic`` before layer k (None: any source will do)
    sources: list[set[str] | None] = [None] * len(layers)
    if topic is not None:
        reach = {topic}
        for k, layer in enumerate(layers):
            sources[k] = reach
            reach = {e[3] for e in layer if e[0] in reach}
        if entity not in reach:
            return Path(())
    hops: list[Hop] = []
    cur = entity
    for layer, allowed in zip(reversed(layers), reversed(sources), strict=True):
        best: tuple[str, str | None, bool, str, float] | None = None
        for e in layer:
            if (
                e[3] == cur
                and (allowed is None or e[0] in allowed)
                and (best is None or _edge_order(e) < _edge_order(best))
            ):
                best = e
        if best is None:
            break
        src, rel, inverse, _, _ = best
        if rel is None:
            continue
        hops.append(Hop(src, rel, cur, inverse))
        cur = src
    hops.reverse()
    return Path(tuple(hops))


class DualRExplorer(nn.Module):
    """The DualR GNN (eq. 1-3). See the module docstring.

    Args:
        config: an :class:`ExplorerConfig`.
    """

    def __init__(self, config: ExplorerConfig | None = None) -> None:
        super().__init__()
        self.config = config = config or ExplorerConfig()
        d = config.hidden
        self.lin_text = nn.Linear(config.encoder_dim, d)  # W_L (questions and relations)
        # Normalises the lowered encodings so that products h_s * h_r keep their scale over L layers
        # (without it the states of a 3-layer model vanish at initialisation and nothing trains).
        self.norm_text = nn.LayerNorm(d)
        self.lin_inverse = nn.Linear(d, d)  # h_{-r} = W_{-r} h_r + b_{-r}
        self.identity = nn.Parameter(torch.empty(d))  # h_id
        self.convs = nn.ModuleList(DualRConv(d) for _ in range(config.layers))
        self.mlp = nn.Sequential(nn.Linear(2 * d, d), nn.ReLU(), nn.Linear(d, 1))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin_text.reset_parameters()
        self.norm_text.reset_parameters()
        self.lin_inverse.reset_parameters()
        nn.init.ones_(self.identity)  # the identity relation starts as "keep the state"
        for conv in self.convs:
            conv.reset_parameters()  # type: ignore[operator]
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                m.reset_parameters()

    def text(self, enc: Tensor) -> Tensor:
        """``W_L`` (then a LayerNorm): frozen ``(n, d_L)`` text encodings to ``(n, d)``."""
        return self.norm_text(self.lin_text(enc))

    def relation_table(self, rel_enc: Tensor) -> Tensor:
        """``(2R + 1, d)``: forward relation ``r`` at ``2r``, its inverse at ``2r+1``, identity last."""
        h = self.text(rel_enc)
        h_inv = self.lin_inverse(h)
        table = torch.stack([h, h_inv], 1).reshape(-1, h.size(-1))
        return torch.cat([table, self.identity.unsqueeze(0)], 0)

    def explore(
        self,
        question_enc: Tensor,
        topics: Sequence[Sequence[str]],
        graph: ExplorationGraph,
        *,
        top_k: Sequence[int] | None = None,
        layers: int | None = None,
    ) -> Exploration:
        """Explore from the topic entities of each question (algorithm 1) and score the candidates.

        Args:
            question_enc: ``(B, d_L)`` frozen encodings of the questions.
            topics: the topic entity ids of each question (unknown ones are ignored).
            graph: the :class:`ExplorationGraph` of the KG.
            top_k: edges kept per expanded entity at each layer (one value, or one per layer; default: the
                config's).
            layers: run only the first ``layers`` exploration steps (default: all of the checkpoint's).
        """
        n_layers = self.config.layers if layers is None else int(layers)
        if not 1 <= n_layers <= self.config.layers:
            raise ConfigError(f"layers must be in 1..{self.config.layers} for this model, got {layers}")
        ks = tuple(int(k) for k in top_k) if top_k is not None else self.config.top_k[:n_layers]
        if len(ks) == 1:
            ks = ks * n_layers
        if len(ks) < n_layers or min(ks) < 1:
            raise ConfigError(f"top_k needs {n_layers} values >= 1 (one per layer), got {ks}")
        if question_enc.dim() != 2 or question_enc.size(0) != len(topics):
            raise ConfigError(f"question_enc must be (B, d_L) with B = {len(topics)} questions")
        device = self.lin_text.weight.device
        h_q = self.text(question_enc.to(device))
        topic_ids = [
            [graph.entity_id(t) for t in dict.fromkeys(ts) if graph.kg.has_entity(t)] for ts in topics
        ]
        nb = torch.tensor([b for b, ts in enumerate(topic_ids) for _ in ts], dtype=torch.long, device=device)
        ne = torch.tensor([e for ts in topic_ids for e in ts], dtype=torch.long, device=device)
        h = h_q.index_select(0, nb)
        new = torch.ones(ne.numel(), dtype=torch.bool, device=device)
        kept: list[LayerEdges] = []
        before: list[Tensor] = []
        after: list[Tensor] = []
        n_q = len(topics)
        for layer, conv in enumerate(self.convs[:n_layers]):
            # 1. expand the entities that entered at the previous layer (one batched KG call).
            exp_nodes = torch.nonzero(new).flatten().tolist()
            ne_list = ne.tolist()
            adj = graph.expand([ne_list[i] for i in exp_nodes])
            sizes = [len(c) for c, _ in adj]
            if sum(sizes):
                src_new = torch.from_numpy(np.repeat(np.asarray(exp_nodes, np.int64), sizes)).to(device)
                code_new = torch.from_numpy(np.concatenate([c for c, _ in adj])).to(device)
                dst_new = torch.from_numpy(np.concatenate([t for _, t in adj])).to(device)
            else:
                src_new = code_new = dst_new = torch.zeros(0, dtype=torch.long, device=device)
            table = self.relation_table(graph.relation_encodings().to(device))
            ident = table.size(0) - 1
            n_old = ne.numel()
            src = torch.cat([torch.arange(n_old, device=device), src_new])
            code = torch.cat([torch.full((n_old,), -1, dtype=torch.long, device=device), code_new])
            dst_ent = torch.cat([ne, dst_new])
            e_b = nb.index_select(0, src)
            rel_idx = torch.where(code < 0, ident, code)
            # 2. eq. 1 on every edge.
            alpha = conv.edge_attention(h, src, table, rel_idx, h_q, e_b)  # type: ignore[operator]
            # 3. prune: identity edges stay; each expanded entity keeps its top-K other edges.
            keep = code < 0
            is_new = ~keep
            if bool(is_new.any()):
                idx_new = torch.nonzero(is_new).flatten()
                kept_new = idx_new[topk_per_group(alpha[idx_new].detach(), src[idx_new], ks[layer])]
                keep[kept_new] = True
            keys_all = e_b * _KEY + dst_ent
            before.append(_count_unique_per_group(keys_all, n_q))
            src, code, dst_ent, e_b, rel_idx, alpha = (
                t[keep] for t in (src, code, dst_ent, e_b, rel_idx, alpha)
            )
            rel = table.index_select(0, rel_idx)
            keys = e_b * _KEY + dst_ent
            uniq, inv = torch.unique(keys, return_inverse=True)
            after.append(_count_unique_per_group(uniq, n_q))
            # 4. eq. 2: propagate to the new candidate set.
            h = conv(h, torch.stack([src, inv]), rel, alpha, num_targets=uniq.numel())
            old_keys = nb * _KEY + ne
            new = ~torch.isin(uniq, old_keys)
            kept.append(
                LayerEdges(
                    e_b.detach(),
                    ne.index_select(0, src).detach(),
                    code.detach(),
                    dst_ent.detach(),
                    alpha.detach(),
                )
            )
            nb, ne = uniq // _KEY, uniq % _KEY
        # eq. 3
        logits = self.mlp(torch.cat([h, h_q.index_select(0, nb)], -1)).squeeze(-1)
        probs = _group_softmax(logits, nb, n_q)
        return Exploration(nb, ne, logits, probs, kept, before, after, graph, topic_ids)

    def loss(self, ex: Exploration, answers: Sequence[Sequence[str]]) -> tuple[Tensor, int]:
        """Eq. 4: mean over questions of ``-mean log p(answer)`` over the answers the exploration reached.

        Returns ``(loss, number of questions with a reached answer)``; questions whose answers were not
        reached add nothing (there is no candidate to supervise).
        """
        g = ex.graph
        ans_keys = [b * _KEY + g.ent2id[a] for b, ans in enumerate(answers) for a in ans if a in g.ent2id]
        if not ans_keys:
            return ex.logits.sum() * 0.0, 0
        keys = ex.batch * _KEY + ex.entity
        y = torch.isin(keys, torch.tensor(ans_keys, dtype=torch.long, device=keys.device)).float()
        n_q = len(answers)
        logp = _group_log_softmax(ex.logits, ex.batch, n_q)
        pos = torch.zeros(n_q, device=logp.device).index_add_(0, ex.batch, y)
        nll = torch.zeros(n_q, device=logp.device).index_add_(0, ex.batch, -logp * y)
        has = pos > 0
        if not bool(has.any()):
            return ex.logits.sum() * 0.0, 0
        return (nll[has] / pos[has]).mean(), int(has.sum())

    # -- checkpoints
    def save(self, path: str | FsPath, **extra: Any) -> None:
        """Save config + weights (+ ``extra`` metadata) to one ``.pt`` file."""
        cfg = asdict(self.config)
        cfg["top_k"] = list(self.config.top_k)
        state = {k: v.detach().cpu() for k, v in self.state_dict().items()}
        with atomic_target(path, suffix=".pt") as tmp:
            torch.save({"config": cfg, "state_dict": state, "meta": extra}, tmp)

    @classmethod
    def load(cls, path: str | FsPath, *, map_location: str = "cpu") -> DualRExplorer:
        """Load a checkpoint written by :meth:`save`."""
        path = FsPath(path)
        if not path.is_file():
            raise ConfigError(f"no DualR checkpoint at {path}")
        try:
            blob = torch.load(path, map_location=map_location, weights_only=True)
            model = cls(ExplorerConfig(**blob["config"]))
            model.load_state_dict(blob["state_dict"])
        except (KeyError, TypeError, RuntimeError) as exc:
            raise DataFormatError(str(path), None, f"not a DualR checkpoint ({exc})") from exc
        model.meta = blob.get("meta", {})
        model.eval()
        return model


def topk_per_group(score: Tensor, group: Tensor, k: int) -> Tensor:
    """Positions (into ``score``) of the ``k`` highest scores of each group."""
    order = torch.argsort(score, descending=True, stable=True)
    order = order[torch.argsort(group[order], stable=True)]
    g = group[order]
    counts = torch.bincount(g)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.arange(g.numel(), device=g.device) - starts[g]
    return order[rank < k]


def _count_unique_per_group(keys: Tensor, n_groups: int) -> Tensor:
    uniq = torch.unique(keys)
    return torch.bincount(uniq // _KEY, minlength=n_groups)


def _group_log_softmax(logits: Tensor, group: Tensor, n: int) -> Tensor:
    mx = torch.full((n,), float("-inf"), device=logits.device).scatter_reduce(
        0, group, logits.detach(), reduce="amax", include_self=True
    )
    z = logits - mx[group]
    lse = torch.zeros(n, device=logits.device).index_add_(0, group, z.exp()).log()
    return z - lse[group]


def _group_softmax(logits: Tensor, group: Tensor, n: int) -> Tensor:
    from torch_geometric.utils import softmax

    return softmax(logits, group, num_nodes=n)

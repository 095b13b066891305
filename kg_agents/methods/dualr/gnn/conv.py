"""One step of DualR's semantic-aware exploration: question-aware edge attention and propagation."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Linear, Parameter
from torch_geometric.nn import MessagePassing

__all__ = ["DualRConv"]


class DualRConv(MessagePassing):
    r"""The exploration layer of DualR (Liu et al., *Dual Reasoning: A GNN-LLM
    Collaborative Framework for KGQA*, eq. 1-2).

    Each edge :math:`(e_s, r, e_o)` leaving the current candidate set gets a question-aware weight

    .. math::
        \alpha^\ell_{q|sr} = \sigma\left(\mathbf{w}_s^\top \mathbf{h}_s^{\ell-1} + \mathbf{w}_r^\top
        \mathbf{h}_r + \mathbf{w}_q^\top \mathbf{h}_q + \mathbf{w}_{qr}^\top (\mathbf{h}_r \odot
        \mathbf{h}_q) + b\right)

    (:meth:`edge_attention`); after the caller has pruned the edges (top-:math:`K`), the kept edges
    propagate

    .. math::
        \mathbf{h}^\ell_o = \delta\left(\sum_{(e_s, r, e_o) \in \tilde{\mathcal{N}}^\ell_{e_o}}
        \alpha^\ell_{q|sr} \, \mathbf{W}^\ell (\mathbf{h}^{\ell-1}_s \odot \mathbf{h}_r)\right)

    (:meth:`forward`), with :math:`\delta` = ReLU. Sources and targets are different node sets
    (bipartite message passing from the candidates of step :math:`\ell-1` to those of step :math:`\ell`).

    Args:
        channels: the hidden size :math:`d` of entities, relations and the question.
        **kwargs: passed to :class:`~torch_geometric.nn.conv.MessagePassing` (``aggr`` is ``"add"``).

    Shapes:
        - **edge_attention** input: source states :math:`(|\mathcal{V}_s|, d)`, source index
          :math:`(|\mathcal{E}|)`, relation table :math:`(|\mathcal{R}|, d)` and index
          :math:`(|\mathcal{E}|)`, questions :math:`(B, d)` and index :math:`(|\mathcal{E}|)`;
          output :math:`(|\mathcal{E}|)` in :math:`(0, 1)`.
        - **forward** input: source states :math:`(|\mathcal{V}_s|, d)`, ``edge_index``
          :math:`(2, |\mathcal{E}|)`, relation encodings :math:`(|\mathcal{E}|, d)`, weights
          :math:`(|\mathcal{E}|)`, ``num_targets``; output :math:`(|\mathcal{V}_t|, d)`.

    Example:
        >>> conv = DualRConv(8)
        >>> x = torch.randn(2, 8); ei = torch.tensor([[0, 1], [0, 0]])
        >>> rels, rel_index = torch.randn(3, 8), torch.tensor([2, 0])
        >>> q, q_index = torch.randn(1, 8), torch.tensor([0, 0])
        >>> alpha = conv.edge_attention(x, ei[0], rels, rel_index, q, q_index)
        >>> conv(x, ei, rels[rel_index], alpha, num_targets=1).shape
        torch.Size([1, 8])
    """

    def __init__(self, channels: int, **kwargs: object) -> None:
        kwargs.setdefault("aggr", "add")
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.channels = channels
        self.att_s = Parameter(torch.empty(channels))
        self.att_r = Parameter(torch.empty(channels))
        self.att_q = Parameter(torch.empty(channels))
        self.att_qr = Parameter(torch.empty(channels))
        self.att_bias = Parameter(torch.empty(1))
        self.lin = Linear(channels, channels, bias=False)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        super().reset_parameters()
        bound = self.channels**-0.5
        for p in (self.att_s, self.att_r, self.att_q, self.att_qr):
            torch.nn.init.uniform_(p, -bound, bound)
        torch.nn.init.zeros_(self.att_bias)
        self.lin.reset_parameters()

    def edge_attention(
        self, x_src: Tensor, src: Tensor, rel_table: Tensor, rel_index: Tensor, q: Tensor, q_index: Tensor
    ) -> Tensor:
        """Eq. 1: the weight in (0, 1) of every edge (before pruning).

        Every term of eq. 1 is linear, so it is computed once per source entity, relation and
        (question, relation) pair and gathered per edge: no ``(|E|, d)`` tensor is built for the
        (many) edges that pruning will drop.

        Args:
            x_src: ``(|V_s|, d)`` source states; ``src``: ``(|E|,)`` source index of each edge.
            rel_table: ``(|R|, d)`` relation encodings; ``rel_index``: ``(|E|,)`` relation of each edge.
            q: ``(B, d)`` question encodings; ``q_index``: ``(|E|,)`` question of each edge.
        """
        s = x_src @ self.att_s
        r = rel_table @ self.att_r
        qq = q @ self.att_q
        qr = q @ (rel_table * self.att_qr).t()
        logit = s[src] + r[rel_index] + qq[q_index] + qr[q_index, rel_index] + self.att_bias
        return torch.sigmoid(logit)

    def forward(
        self, x_src: Tensor, edge_index: Tensor, rel: Tensor, alpha: Tensor, num_targets: int
    ) -> Tensor:
        """Eq. 2: propagate the kept edges from the previous candidates to the new ones."""
        out = self.propagate(
            edge_index, x=(x_src, None), rel=rel, alpha=alpha, size=(x_src.size(0), num_targets)
        )
        return torch.relu(out)

    def message(self, x_j: Tensor, rel: Tensor, alpha: Tensor) -> Tensor:
        return alpha.unsqueeze(-1) * self.lin(x_j * rel)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.channels})"

"""Causal (gated) linear attention: a recurrent reference and a chunked form.

Recurrence per head (state ``S`` of shape ``(K, V)``, log-decay ``g_t`` <= 0)::

    S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,      o_t = S_t^T q_t

``g`` is absent (plain linear attention, Katharopoulos et al. 2020, arXiv:2006.16236), a
scalar per head and token, or per key dimension (GLA, Yang et al. 2023, arXiv:2312.06635).
The chunked form tiles the sequence as Lightning Attention-2 does (Qin et al. 2024,
arXiv:2401.04658): masked attention inside each chunk plus the carried state between chunks,
with decays taken as differences of in-chunk cumulative log-gates (never exponentiating a
positive number).
"""

from __future__ import annotations


import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ordcore.errors import InvalidArgumentError
from ordcore_torch._base import (
    MultiHeadMixer,
    check_mode,
    check_number,
    from_chunks,
    pad_time,
    resolve_head_dim,
    to_chunks,
)

__all__ = ["LinearAttention", "linear_attention_recurrent", "linear_attention_chunk"]


def linear_attention_recurrent(
    q: Tensor, k: Tensor, v: Tensor, g: Tensor | None = None, initial_state: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Reference: one token at a time.

    Parameters
    ----------
    q, k : Tensor, (B, T, H, K)
    v : Tensor, (B, T, H, V)
    g : Tensor, (B, T, H) or (B, T, H, K), optional
        Log-decay (<= 0) per head, or per head and key dimension.
    initial_state : Tensor, (B, H, K, V), optional

    Returns
    -------
    o : Tensor, (B, T, H, V)
    state : Tensor, (B, H, K, V)
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state
    outs = []
    for t in range(T):
        if g is not None:
            gt = g[:, t]
            decay = gt.exp()[..., None, None] if gt.ndim == 2 else gt.exp()[..., None]
            S = decay * S
        S = S + k[:, t, :, :, None] * v[:, t, :, None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(B, 0, H, V)
    return o, S


def linear_attention_chunk(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    g: Tensor | None = None,
    initial_state: Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[Tensor, Tensor]:
    """The chunked form; same arguments and results as :func:`linear_attention_recurrent`."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    C = chunk_size
    per_key = g is not None and g.ndim == 4
    if g is None:
        g = q.new_zeros(B, T, H)
    q, k, v, g = (pad_time(t, C) for t in (q, k, v, g))
    N = q.shape[1] // C
    # (B, H, N, C, ...)
    qc, kc, vc = (to_chunks(t, C) for t in (q, k, v))
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    if per_key:
        b = to_chunks(g, C).cumsum(dim=3)  # (B,H,N,C,K)
        diff = b[:, :, :, :, None, :] - b[:, :, :, None, :, :]  # (B,H,N,C,C,K)
        decay = diff.masked_fill(~causal[:, :, None], float("-inf")).exp()
        attn = torch.einsum("bhntk,bhnsk,bhntsk->bhnts", qc, kc, decay)
        q_in = qc * b.exp()  # decay from chunk start to t
        k_out = kc * (b[:, :, :, -1:, :] - b).exp()  # decay from s to chunk end
        chunk_decay = b[:, :, :, -1, :].exp()[..., None]  # (B,H,N,K,1)
    else:
        b = to_chunks(g, C).cumsum(dim=3)  # (B,H,N,C)
        diff = b[..., :, None] - b[..., None, :]
        decay = diff.masked_fill(~causal, float("-inf")).exp()
        attn = (qc @ kc.transpose(-1, -2)) * decay
        q_in = qc * b.exp()[..., None]
        k_out = kc * (b[..., -1:] - b).exp()[..., None]
        chunk_decay = b[..., -1].exp()[..., None, None]  # (B,H,N,1,1)
    o_intra = attn @ vc  # (B,H,N,C,V)
    kv = k_out.transpose(-1, -2) @ vc  # (B,H,N,K,V): chunk's own contribution to the state
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state
    o_inter = []
    for n in range(N):
        o_inter.append(q_in[:, :, n] @ S)
        S = chunk_decay[:, :, n] * S + kv[:, :, n]
    o = o_intra + torch.stack(o_inter, dim=2) if N else o_intra
    return from_chunks(o, T), S


class LinearAttention(MultiHeadMixer):
    """Multi-head causal (gated) linear attention layer.

    Parameters
    ----------
    d_model : int
    num_heads : int
    head_dim : int, optional
        Key and value size per head, a positive int (default ``d_model // num_heads``).
    gate : {None, "scalar", "per_key"}
        No decay, a learned scalar decay per head and token, or GLA's per-key decay:
        ``g = logsigmoid(W x) / gate_normalizer``.
    mode : {"chunk", "recurrent"}
    chunk_size : int
    gate_normalizer : float
        A finite number > 0 (Python, NumPy or a 0-d tensor); the log-gates
        ``logsigmoid(W x) / gate_normalizer`` are then <= 0, as both modes need.

    ``forward(x, *, cu_seqlens=None, initial_state=None, output_final_state=False)``; the
    state has shape ``(N, num_heads, head_dim, head_dim)``.

    Raises
    ------
    ordcore.InvalidArgumentError
        ``d_model``, ``num_heads``, ``head_dim`` or ``chunk_size`` not a positive int,
        ``num_heads`` not dividing ``d_model`` (without ``head_dim``), an unknown ``gate`` or
        ``mode``, or ``gate_normalizer`` not a finite number > 0.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int = 4,
        head_dim: int | None = None,
        *,
        gate: str | None = None,
        mode: str = "chunk",
        chunk_size: int = 64,
        gate_normalizer: float = 16.0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_mode(mode, chunk_size)
        head_dim = resolve_head_dim(d_model, num_heads, head_dim)
        if gate not in (None, "scalar", "per_key"):
            raise InvalidArgumentError(f"gate: expected None, 'scalar' or 'per_key', got {gate!r}")
        kw = {"device": device, "dtype": dtype}
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, head_dim
        self.gate, self.mode, self.chunk_size = gate, mode, chunk_size
        self.gate_normalizer = check_number("gate_normalizer", gate_normalizer)
        inner = num_heads * head_dim
        self._make_qkv(d_model, inner, kw)
        self.o_proj = nn.Linear(inner, d_model, bias=False, **kw)
        self.g_proj: nn.Linear | None = None
        if gate is not None:
            width = num_heads if gate == "scalar" else inner
            self.g_proj = nn.Linear(d_model, width, bias=True, **kw)

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        q = self._heads(self.q_proj(x)) * self.head_dim**-0.5
        k = self._heads(self.k_proj(x))
        v = self._heads(self.v_proj(x))
        if self.g_proj is None:
            return q, k, v
        g = F.logsigmoid(self.g_proj(x)) / self.gate_normalizer
        if self.gate == "per_key":
            g = self._heads(g)
        return q, k, v, g

    def _kernel(
        self, inputs: tuple[Tensor, ...], initial_state: Tensor | None, mode: str
    ) -> tuple[Tensor, Tensor]:
        q, k, v = inputs[:3]
        g = inputs[3] if len(inputs) > 3 else None
        if mode == "recurrent":
            return linear_attention_recurrent(q, k, v, g, initial_state)
        return linear_attention_chunk(q, k, v, g, initial_state, self.chunk_size)



"""The gated delta rule (Gated DeltaNet, Yang, Kautz and Hatamizadeh 2024, arXiv:2412.06464).

Recurrence per head (state ``S`` of shape ``(K, V)``, ``alpha_t = exp(g_t)``, ``beta_t`` in
(0, 1), unit-norm keys)::

    S_t = alpha_t (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T,      o_t = S_t^T q_t

The chunked form uses the WY representation (Yang et al. 2024, arXiv:2406.06484): inside a
chunk with cumulative log-gates ``b``, the new values ``Delta = U - W S_0`` solve the unit
lower-triangular system ``(I + A) [U | W] = [diag(beta) V | diag(beta exp(b)) K]`` with
``A[t, s] = beta_t (k_t . k_s) exp(b_t - b_s)`` for ``s < t`` (one triangular solve per
chunk); then ``O = (Q * exp(b)) S_0 + (Q K^T * exp(b_t - b_s))_{s<=t} Delta`` and
``S_C = exp(b_C) S_0 + (K * exp(b_C - b))^T Delta``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ordcore_torch._base import (
    MultiHeadMixer,
    check_mode,
    from_chunks,
    pad_time,
    resolve_head_dim,
    to_chunks,
)

__all__ = ["GatedDeltaNet", "gated_delta_rule_recurrent", "gated_delta_rule_chunk"]


def gated_delta_rule_recurrent(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    g: Tensor | None = None,
    initial_state: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Reference: one token at a time.

    Parameters
    ----------
    q, k : Tensor, (B, T, H, K)
    v : Tensor, (B, T, H, V)
    beta : Tensor, (B, T, H)
    g : Tensor, (B, T, H), optional
        Log-decay (<= 0); absent means the plain delta rule.
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
            S = g[:, t].exp()[..., None, None] * S
        kt = k[:, t]
        u = v[:, t] - torch.einsum("bhk,bhkv->bhv", kt, S)
        S = S + beta[:, t, :, None, None] * kt[..., :, None] * u[..., None, :]
        outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
    o = torch.stack(outs, dim=1) if outs else v.new_zeros(B, 0, H, V)
    return o, S


def gated_delta_rule_chunk(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    beta: Tensor,
    g: Tensor | None = None,
    initial_state: Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[Tensor, Tensor]:
    """The chunked WY form; same arguments and results as :func:`gated_delta_rule_recurrent`.

    float16/bfloat16 inputs run the triangular solve in float32 (and the rest in their own
    dtype); the results come back in the inputs' dtype."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    C = chunk_size
    if g is None:
        g = q.new_zeros(B, T, H)
    q, k, v, beta, g = (pad_time(t, C) for t in (q, k, v, beta, g))
    N = q.shape[1] // C
    qc, kc, vc = (to_chunks(t, C) for t in (q, k, v))  # (B,H,N,C,K)
    bc = to_chunks(beta, C)[..., None]  # (B,H,N,C,1)
    b = to_chunks(g, C).cumsum(dim=3)  # (B,H,N,C)
    ones = torch.ones(C, C, dtype=torch.bool, device=q.device)
    causal, strict = ones.tril(), ones.tril(-1)
    diff = b[..., :, None] - b[..., None, :]
    decay = diff.masked_fill(~causal, float("-inf")).exp()  # exp(b_t - b_s), s <= t
    kk = kc @ kc.transpose(-1, -2)
    A = (bc * kk * decay).masked_fill(~strict, 0.0)
    eye = torch.eye(C, dtype=q.dtype, device=q.device)
    rhs = torch.cat([bc * vc, bc * b.exp()[..., None] * kc], dim=-1)
    # torch has no half-precision triangular solve on CPU: solve in (at least) float32
    wdt = torch.promote_types(q.dtype, torch.float32)
    UW = torch.linalg.solve_triangular(
        (eye + A).to(wdt), rhs.to(wdt), upper=False, unitriangular=True
    ).to(q.dtype)
    U, W = UW[..., :V], UW[..., V:]
    attn = (qc @ kc.transpose(-1, -2)) * decay  # (B,H,N,C,C), zero above the diagonal
    q_in = qc * b.exp()[..., None]
    k_out = kc * (b[..., -1:] - b).exp()[..., None]
    chunk_decay = b[..., -1].exp()[..., None, None]
    S = q.new_zeros(B, H, K, V) if initial_state is None else initial_state
    outs = []
    for n in range(N):
        delta = U[:, :, n] - W[:, :, n] @ S
        outs.append(q_in[:, :, n] @ S + attn[:, :, n] @ delta)
        S = chunk_decay[:, :, n] * S + k_out[:, :, n].transpose(-1, -2) @ delta
    o = torch.stack(outs, dim=2) if outs else v.new_zeros(B, H, 0, C, V)
    return from_chunks(o, T), S


class GatedDeltaNet(MultiHeadMixer):
    """Multi-head Gated DeltaNet layer (no short convolution or output gate: the mixer only).

    Parameters
    ----------
    d_model : int
    num_heads : int
    head_dim : int, optional
        Key and value size per head, a positive int (default ``d_model // num_heads``).
    gated : bool
        Learned decay ``g = -exp(A_log) * softplus(W_a x + dt_bias)`` (Mamba2-style), or the
        plain delta rule.
    mode : {"chunk", "recurrent"}
    chunk_size : int

    Keys and queries are L2-normalized per head; ``beta = sigmoid(W_b x)``. Any floating
    ``dtype`` works, float16/bfloat16 included (the chunk form's triangular solve then runs
    in float32).

    Raises
    ------
    ordcore.InvalidArgumentError
        ``d_model``, ``num_heads``, ``head_dim`` or ``chunk_size`` not a positive int,
        ``num_heads`` not dividing ``d_model`` (without ``head_dim``), or an unknown ``mode``.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int = 4,
        head_dim: int | None = None,
        *,
        gated: bool = True,
        mode: str = "chunk",
        chunk_size: int = 64,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_mode(mode, chunk_size)
        head_dim = resolve_head_dim(d_model, num_heads, head_dim)
        kw = {"device": device, "dtype": dtype}
        self.d_model, self.num_heads, self.head_dim = d_model, num_heads, head_dim
        self.gated, self.mode, self.chunk_size = gated, mode, chunk_size
        inner = num_heads * head_dim
        self._make_qkv(d_model, inner, kw)
        self.b_proj = nn.Linear(d_model, num_heads, bias=True, **kw)
        self.o_proj = nn.Linear(inner, d_model, bias=False, **kw)
        if gated:
            self.a_proj = nn.Linear(d_model, num_heads, bias=False, **kw)
            self.A_log = nn.Parameter(torch.zeros(num_heads, **kw).uniform_(0.0, 1.5).log())
            self.dt_bias = nn.Parameter(torch.full((num_heads,), -2.0, **kw))

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        q = F.normalize(self._heads(self.q_proj(x)), dim=-1) * self.head_dim**-0.5
        k = F.normalize(self._heads(self.k_proj(x)), dim=-1)
        v = self._heads(self.v_proj(x))
        beta = torch.sigmoid(self.b_proj(x))
        if not self.gated:
            return q, k, v, beta
        g = -self.A_log.exp() * F.softplus(self.a_proj(x) + self.dt_bias)
        return q, k, v, beta, g

    def _kernel(
        self, inputs: tuple[Tensor, ...], initial_state: Tensor | None, mode: str
    ) -> tuple[Tensor, Tensor]:
        q, k, v, beta = inputs[:4]
        g = inputs[4] if len(inputs) > 4 else None
        if mode == "recurrent":
            return gated_delta_rule_recurrent(q, k, v, beta, g, initial_state)
        return gated_delta_rule_chunk(q, k, v, beta, g, initial_state, self.chunk_size)

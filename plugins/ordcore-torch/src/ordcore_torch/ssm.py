"""A diagonal linear time-invariant state-space layer with S4D's discretization.

Per channel ``h`` (``d_model`` channels, ``d_state`` complex modes ``n``), continuous
``A_n = -exp(A_re_log) + i A_im`` (S4D-Lin init ``-1/2 + i pi n``), zero-order hold with
step ``dt = exp(log_dt)`` (Gu, Gupta, Goel and Re 2022, "On the Parameterization and
Initialization of Diagonal State Space Models", arXiv:2206.11893)::

    Abar = exp(dt A),  Bbar = (Abar - 1) / A * B
    s_t = Abar s_{t-1} + Bbar x_t,      y_t = 2 Re(sum_n C_n s_t[n]) + D x_t

The recurrent form is the reference; the chunked form convolves inside each chunk with the
kernel ``K_l = 2 Re(sum_n C_n Bbar_n Abar_n^l)`` and carries the state between chunks. The
state has shape ``(N, d_model, d_state)`` (complex: complex128 when computing in float64,
else complex64). float16/bfloat16 layers run the complex arithmetic in float32/complex64
(torch has no complex bfloat16, and complex float16 is experimental and incomplete on CPU)
and return ``y`` in ``x``'s dtype.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor, nn

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore_torch._base import (
    RecurrentMixer,
    check_cu_seqlens,
    check_mode,
    check_positive,
    pad_time,
    unpack,
)

__all__ = ["DiagonalSSM", "diagonal_ssm_recurrent", "diagonal_ssm_chunk"]


def diagonal_ssm_recurrent(
    x: Tensor, log_abar: Tensor, bbar: Tensor, c: Tensor, initial_state: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """Reference scan without the skip term.

    Parameters
    ----------
    x : Tensor, (B, T, H), real
    log_abar : Tensor, (H, N), complex
        ``dt * A``, so ``Abar = exp(log_abar)``.
    bbar, c : Tensor, (H, N), complex
    initial_state : Tensor, (B, H, N), complex, optional

    Returns
    -------
    y : Tensor, (B, T, H), real
    state : Tensor, (B, H, N), complex
    """
    B, T, H = x.shape
    abar = log_abar.exp()
    s = x.new_zeros(B, H, bbar.shape[-1], dtype=abar.dtype) if initial_state is None else initial_state
    ys = []
    for t in range(T):
        s = abar * s + bbar * x[:, t, :, None]
        ys.append(2 * (s * c).sum(-1).real)
    y = torch.stack(ys, dim=1) if ys else x.new_zeros(B, 0, H)
    return y, s


def diagonal_ssm_chunk(
    x: Tensor,
    log_abar: Tensor,
    bbar: Tensor,
    c: Tensor,
    initial_state: Tensor | None = None,
    chunk_size: int = 64,
) -> tuple[Tensor, Tensor]:
    """The chunked form; same arguments and results as :func:`diagonal_ssm_recurrent`."""
    B, T, H = x.shape
    Cn = chunk_size
    xp = pad_time(x, Cn)
    M = xp.shape[1] // Cn
    xc = xp.reshape(B, M, Cn, H)
    ell = torch.arange(Cn, device=x.device, dtype=x.dtype)
    powers = torch.exp(log_abar[None, :, :] * ell[:, None, None])  # (Cn, H, N): Abar^l
    kernel = 2 * (c * bbar * powers).sum(-1).real  # (Cn, H)
    lag = torch.arange(Cn, device=x.device)
    lag = lag[:, None] - lag[None, :]  # (t, s) -> t - s
    toeplitz = kernel.T[:, lag.clamp(min=0)] * (lag >= 0)  # (H, t, s)
    xh = xc.permute(3, 0, 1, 2).reshape(H, B * M, Cn)  # channel-major for batched matmuls
    y_intra = torch.bmm(xh, toeplitz.transpose(1, 2)).reshape(H, B, M, Cn).permute(1, 2, 3, 0)
    # state contributions: sum_s Abar^(Cn-1-s) Bbar x_s; output from the carried state:
    # 2 Re(sum_n C_n Abar^(t+1) s0)
    zw = (powers.flip(0) * bbar).permute(1, 0, 2)  # (H, s, N)
    z = torch.bmm(xh.to(zw.dtype), zw).reshape(H, B, M, -1).permute(1, 2, 0, 3)  # (B,M,H,N)
    out_w = (c * powers * log_abar.exp()).permute(1, 2, 0)  # (H, N, t): C Abar^(t+1)
    chunk_decay = torch.exp(log_abar * Cn)
    s = x.new_zeros(B, H, bbar.shape[-1], dtype=powers.dtype) if initial_state is None else initial_state
    y_inter = []
    r = T - (M - 1) * Cn  # real tokens in the last chunk (the rest is padding)
    for m in range(M):
        y_inter.append(2 * torch.bmm(s.transpose(0, 1), out_w).real.permute(1, 2, 0))
        if m < M - 1 or r == Cn:
            s = chunk_decay * s + z[:, m]
        else:  # padding must not decay the final state
            w = powers[:r].flip(0) * bbar
            s = torch.exp(log_abar * r) * s + torch.einsum(
                "shn,bsh->bhn", w, xc[:, m, :r].to(w.dtype)
            )
    y = y_intra + torch.stack(y_inter, dim=1) if M else y_intra
    y = y.reshape(B, M * Cn, H)[:, :T]
    return y, s


def _final_states(
    x: Tensor, lengths: Tensor, log_abar: Tensor, bbar: Tensor, s0: Tensor | None
) -> Tensor:
    """Exact final state of each zero-padded sequence: ``Abar^L s0 + sum_{s<L}
    Abar^(L-1-s) Bbar x_s`` (padding must not decay the state)."""
    N, L, H = x.shape
    pos = torch.arange(L, device=x.device)
    expo = (lengths[:, None].to(x.device) - 1 - pos[None, :]).clamp(min=0)  # (N, L)
    w = torch.exp(log_abar[None, None] * expo[..., None, None].to(x.dtype))  # (N,L,H,Nst)
    s = torch.einsum("nlhk,hk,nlh->nhk", w, bbar, x.to(w.dtype))
    if s0 is not None:
        s = s + torch.exp(log_abar[None] * lengths[:, None, None].to(x.device, x.dtype)) * s0
    return s


class DiagonalSSM(RecurrentMixer):
    """Diagonal LTI state-space layer (S4D), channel-wise: ``(B, T, d_model) -> (B, T,
    d_model)``; usable as an order-sensitive probe.

    Parameters
    ----------
    d_model : int
        Channels (each has its own SSM).
    d_state : int
        Complex modes per channel.
    dt_min, dt_max : float
        Range of the log-uniform initial step.
    mode : {"chunk", "recurrent"}
    chunk_size : int

    Any floating ``dtype`` works: float16/bfloat16 layers compute the complex part in
    float32/complex64 and return ``y`` in ``x``'s dtype. ``initial_state`` must be complex,
    ``(N, d_model, d_state)``; it is cast to complex128 when computing in float64, else to
    complex64 (the dtype of the returned final state).

    Raises
    ------
    ordcore.InvalidArgumentError
        ``d_model``, ``d_state`` or ``chunk_size`` not a positive int, bad ``dt_min``/
        ``dt_max`` or ``mode``; at call time wrong shapes.
    ordcore.DTypeError
        At call time, ``x`` not real floating or ``initial_state`` not complex.
    """

    def __init__(
        self,
        d_model: int,
        d_state: int = 16,
        *,
        dt_min: float = 1e-3,
        dt_max: float = 1e-1,
        mode: str = "chunk",
        chunk_size: int = 64,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_mode(mode, chunk_size)
        check_positive("d_model", d_model)
        check_positive("d_state", d_state)
        if not 0 < dt_min <= dt_max:
            raise InvalidArgumentError(f"dt_min, dt_max: need 0 < dt_min <= dt_max, got {dt_min}, {dt_max}")
        kw = {"device": device, "dtype": dtype}
        self.d_model, self.d_state, self.mode, self.chunk_size = d_model, d_state, mode, chunk_size
        u = torch.rand(d_model, **kw)
        self.log_dt = nn.Parameter(u * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min))
        self.A_re_log = nn.Parameter(torch.full((d_model, d_state), math.log(0.5), **kw))
        self.A_im = nn.Parameter(math.pi * torch.arange(d_state, **kw).expand(d_model, -1).clone())
        self.B_re = nn.Parameter(torch.ones(d_model, d_state, **kw))
        self.B_im = nn.Parameter(torch.zeros(d_model, d_state, **kw))
        self.C_re = nn.Parameter(torch.randn(d_model, d_state, **kw) * 0.5**0.5)
        self.C_im = nn.Parameter(torch.randn(d_model, d_state, **kw) * 0.5**0.5)
        self.D = nn.Parameter(torch.ones(d_model, **kw))

    def discretize(self) -> tuple[Tensor, Tensor, Tensor]:
        """``(log_abar, bbar, c)``, each complex ``(d_model, d_state)``: complex128 for
        float64 parameters, else complex64 (half-precision parameters are widened to
        float32 first)."""
        rdt = torch.promote_types(self.A_re_log.dtype, torch.float32)
        A_re_log, A_im, log_dt, B_re, B_im, C_re, C_im = (
            p.to(rdt)
            for p in (self.A_re_log, self.A_im, self.log_dt, self.B_re, self.B_im,
                      self.C_re, self.C_im)
        )  # fmt: skip
        A = torch.complex(-A_re_log.exp(), A_im)
        dtA = A * log_dt.exp()[:, None]
        bbar = (dtA.exp() - 1) / A * torch.complex(B_re, B_im)
        return dtA, bbar, torch.complex(C_re, C_im)

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        return (x,)

    def _empty_o(self, inputs: tuple[Tensor, ...]) -> Tensor:
        return inputs[0]

    def _kernel(
        self, inputs: tuple[Tensor, ...], initial_state: Tensor | None, mode: str
    ) -> tuple[Tensor, Tensor]:
        (x,) = inputs
        log_abar, bbar, c = self.discretize()
        xw = x.to(log_abar.real.dtype)  # float16/bfloat16 x: computed in float32
        if mode == "recurrent":
            y, s = diagonal_ssm_recurrent(xw, log_abar, bbar, c, initial_state)
        else:
            y, s = diagonal_ssm_chunk(xw, log_abar, bbar, c, initial_state, self.chunk_size)
        return y.to(x.dtype), s

    def _output(self, o: Tensor, x: Tensor) -> Tensor:
        return o + self.D * x

    def _state_dtype(self, dtype: torch.dtype) -> torch.dtype:
        return torch.complex128 if dtype == torch.float64 else torch.complex64

    def _check_state_dtype(self, state: Any) -> None:
        if isinstance(state, Tensor) and not state.is_complex():
            raise DTypeError(
                f"initial_state: expected a complex dtype (complex64 or complex128), got "
                f"{state.dtype}"
            )

    def _check_state(self, state: Tensor, batch: int) -> None:
        shape = (batch, self.d_model, self.d_state)
        if not isinstance(state, Tensor) or tuple(state.shape) != shape:
            got = tuple(state.shape) if isinstance(state, Tensor) else type(state).__name__
            raise InvalidArgumentError(f"initial_state: expected a complex tensor of shape {shape}, got {got}")

    def _zero_state(self, batch: int, dtype: torch.dtype, device: torch.device) -> Tensor:
        cdt = torch.complex128 if dtype == torch.float64 else torch.complex64
        return torch.zeros(batch, self.d_model, self.d_state, dtype=cdt, device=device)

    def _mix(
        self,
        x: Tensor,
        cu_seqlens: Tensor | None,
        initial_state: Tensor | None,
        output_final_state: bool,
    ) -> tuple[Tensor, Tensor | None]:
        y, state = super()._mix(x, cu_seqlens, initial_state, output_final_state)
        if cu_seqlens is not None and output_final_state:
            # padding decays an LTI state, so take each sequence's state at its own end
            cu = check_cu_seqlens(cu_seqlens, x.shape[0], x.shape[1])
            log_abar, bbar, _ = self.discretize()
            xw = unpack(x, cu).to(log_abar.real.dtype)
            state = _final_states(xw, cu[1:] - cu[:-1], log_abar, bbar, initial_state)
        return y, state



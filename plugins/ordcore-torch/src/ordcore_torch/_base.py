"""Shared pieces of the mixers: input checks, ``cu_seqlens`` packing and the base class.

Dtypes: a mixer accepts ``x`` of any floating dtype. It computes in the wider of ``x``'s
dtype and its parameters' dtype (``torch.promote_types``; float64 input on a float32
module casts the parameters to float64 for the call, differentiably) and returns ``y`` in
``x``'s dtype; integer, bool or complex ``x`` raise :class:`ordcore.DTypeError`. An
``initial_state`` is cast to the state dtype of the computation dtype (the computation
dtype itself, or its complex counterpart for the SSM); one of the wrong kind (integer, or
real where complex is needed and vice versa) raises :class:`ordcore.DTypeError`. Operations
torch cannot run in half precision on every device (the triangular solve, complex
arithmetic) run in float32 inside float16/bfloat16 computations. A zero-length sequence (or
an empty batch) returns an empty ``y``, still connected to autograd, and the initial state
unchanged.

Packed input (``cu_seqlens``, batch 1) is unpacked into a zero-padded batch of the separate
sequences, run through the batched kernels and packed back. Padding sits at the end of each
sequence and every kernel treats a padded token as an identity step (zero key/value, zero
decay), so outputs and final states are exactly those of the separate sequences.
"""

from __future__ import annotations

from typing import Any

import math
import numbers

import torch
from torch import Tensor, nn

from ordcore.errors import DTypeError, InvalidArgumentError

__all__ = [
    "RecurrentMixer",
    "MultiHeadMixer",
    "check_x",
    "check_float",
    "check_number",
    "check_cu_seqlens",
    "unpack",
    "pack",
]


def check_x(x: Tensor, d_model: int, name: str = "x") -> None:
    """Raise unless ``x`` is a floating ``(batch, seq, d_model)`` tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 3:
        raise InvalidArgumentError(
            f"{name}: expected rank 3 (batch, seq, d_model), got shape {tuple(x.shape)}"
        )
    if x.shape[-1] != d_model:
        raise InvalidArgumentError(
            f"{name}: feature size {x.shape[-1]} does not match d_model={d_model}"
        )
    check_float(x, name)


def check_float(t: Tensor, name: str) -> None:
    """Raise :class:`ordcore.DTypeError` unless ``t`` has a real floating dtype."""
    if not t.is_floating_point():
        raise DTypeError(
            f"{name}: expected a floating dtype (float16, bfloat16, float32 or float64), "
            f"got {t.dtype}; cast it, e.g. {name}.float()"
        )


def compute_dtype(module: nn.Module, x: Tensor) -> torch.dtype:
    """The dtype ``module`` computes ``x`` in: the wider of ``x``'s and its floating
    parameters' dtype."""
    dtype = x.dtype
    for param in module.parameters():
        if param.is_floating_point():
            dtype = torch.promote_types(dtype, param.dtype)
    return dtype


def needs_cast(module: nn.Module, x: Tensor, dtype: torch.dtype) -> bool:
    """Whether ``x`` or a floating parameter or buffer of ``module`` is not in ``dtype``."""
    tensors = [x, *module.parameters(), *module.buffers()]
    return any(t.is_floating_point() and t.dtype != dtype for t in tensors)


def cast_call(module: nn.Module, dtype: torch.dtype, args: tuple[Any, ...],
              kwargs: dict[str, Any]) -> Any:  # fmt: skip
    """``module(*args, **kwargs)`` with its floating parameters and buffers (and floating
    tensor arguments) cast to ``dtype``; gradients flow back to the originals."""
    tensors = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    cast = {k: v.to(dtype) for k, v in tensors.items() if v.is_floating_point()}

    def conv(a: Any) -> Any:
        if isinstance(a, Tensor) and a.is_floating_point():
            return a.to(dtype)
        if isinstance(a, Tensor) and a.is_complex():
            return a.to(torch.complex128 if dtype == torch.float64 else torch.complex64)
        return a

    return torch.func.functional_call(
        module, cast, tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}
    )


def check_cu_seqlens(cu_seqlens: Tensor, batch: int, seq_len: int) -> Tensor:
    """Validate ``cu_seqlens`` (as produced by :mod:`ordcore.packing`) and return it as int64.

    Raises
    ------
    InvalidArgumentError
        batch > 1, not 1-D, not starting at 0, not strictly increasing, or not ending at
        the sequence length.
    """
    if batch != 1:
        raise InvalidArgumentError(
            f"cu_seqlens: packed input must have batch size 1, got batch={batch}"
        )
    cu = torch.as_tensor(cu_seqlens)
    if cu.ndim != 1 or cu.numel() < 2:
        raise InvalidArgumentError(
            f"cu_seqlens: expected a 1-D tensor of at least 2 offsets, got shape {tuple(cu.shape)}"
        )
    if cu.is_floating_point() or cu.dtype == torch.bool:
        raise TypeError(f"cu_seqlens: expected an integer tensor, got {cu.dtype}")
    cu = cu.to(torch.int64).cpu()
    if int(cu[0]) != 0:
        raise InvalidArgumentError(f"cu_seqlens: must start at 0, starts at {int(cu[0])}")
    if not bool((cu[1:] > cu[:-1]).all()):
        raise InvalidArgumentError(f"cu_seqlens: must be strictly increasing, got {cu.tolist()}")
    if int(cu[-1]) != seq_len:
        raise InvalidArgumentError(
            f"cu_seqlens: must end at the sequence length {seq_len}, ends at {int(cu[-1])}"
        )
    return cu


def _index(cu: Tensor, device: torch.device) -> tuple[Tensor, Tensor, int]:
    lengths = cu[1:] - cu[:-1]
    max_len = int(lengths.max())
    pos = torch.arange(max_len)
    valid = pos[None, :] < lengths[:, None]  # (N, L)
    src = (cu[:-1, None] + pos[None, :]).clamp(max=int(cu[-1]) - 1)
    return src.to(device), valid.to(device), max_len


def unpack(t: Tensor, cu: Tensor) -> Tensor:
    """``(1, T, *rest)`` packed -> ``(N, L_max, *rest)`` zero-padded at the end."""
    src, valid, _ = _index(cu, t.device)
    out = t[0][src]
    mask = valid.reshape(*valid.shape, *([1] * (t.ndim - 2)))
    return out * mask.to(out.dtype)


def pack(t: Tensor, cu: Tensor) -> Tensor:
    """``(N, L_max, *rest)`` -> ``(1, T, *rest)``: the inverse of :func:`unpack`."""
    _, valid, _ = _index(cu, t.device)
    return t[valid].unsqueeze(0)


class RecurrentMixer(nn.Module):
    """Base class: ``forward(x, *, cu_seqlens=None, initial_state=None,
    output_final_state=False) -> (y, final_state or None)`` and ``step(x_t, state)``.

    Subclasses implement :meth:`_inputs` (token-wise projections, shapes ``(B, T, ...)``),
    :meth:`_kernel` (the batched sequence kernel: ``(inputs, initial_state) -> (o, state)``)
    and :meth:`_output`. Sequence packing, checks and ``step`` are shared.
    """

    d_model: int
    mode: str

    def _inputs(self, x: Tensor) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _kernel(
        self, inputs: tuple[Tensor, ...], initial_state: Tensor | None, mode: str
    ) -> tuple[Tensor, Tensor]:
        raise NotImplementedError

    def _output(self, o: Tensor, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _check_state(self, state: Tensor, batch: int) -> None:
        raise NotImplementedError

    def _zero_state(self, batch: int, dtype: torch.dtype, device: torch.device) -> Tensor:
        """The state before any token, for ``batch`` sequences."""
        raise NotImplementedError

    def forward(
        self,
        x: Tensor,
        *,
        cu_seqlens: Tensor | None = None,
        initial_state: Tensor | None = None,
        output_final_state: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Mix ``x`` of shape ``(batch, seq, d_model)``.

        Parameters
        ----------
        x : Tensor, (B, T, d_model), floating
        cu_seqlens : Tensor, (N + 1,), int, optional
            Offsets of N packed sequences in a batch-1 ``x`` (``ordcore.packing`` output):
            the state resets at every boundary.
        initial_state : Tensor, optional
            One state per sequence (per batch row, or per packed sequence).
        output_final_state : bool
            Also return the state after the last token of each sequence.

        Returns
        -------
        y : Tensor, (B, T, d_model), ``x``'s dtype
            Computed in the wider of ``x``'s and the parameters' dtype; empty when
            ``T == 0`` or ``B == 0``.
        final_state : Tensor or None
            In the computation dtype; ``initial_state`` (or the zero state) for ``T == 0``.

        Raises
        ------
        ordcore.DTypeError
            ``x`` is not a real floating tensor, or ``initial_state`` has the wrong kind of
            dtype (integer or bool; complex for a real state or real for a complex one). A
            floating (or complex) ``initial_state`` of another precision is cast to the
            state dtype of the computation dtype.
        ordcore.InvalidArgumentError
            Wrong shapes, ``cu_seqlens`` or ``initial_state``.
        """
        check_x(x, self.d_model)
        dtype = compute_dtype(self, x)
        if initial_state is not None:  # shape first, then the kind of dtype
            batch, seq_len, _ = x.shape
            n_seq = batch
            if cu_seqlens is not None:
                n_seq = check_cu_seqlens(cu_seqlens, batch, seq_len).numel() - 1
            self._check_state(initial_state, n_seq)
            self._check_state_dtype(initial_state)
        if needs_cast(self, x, dtype) or (
            isinstance(initial_state, Tensor) and initial_state.dtype != self._state_dtype(dtype)
        ):
            y, state = cast_call(self, dtype, (x,), {
                "cu_seqlens": cu_seqlens, "initial_state": initial_state,
                "output_final_state": output_final_state,
            })  # fmt: skip
            return y.to(x.dtype), state
        batch, seq_len, _ = x.shape
        if seq_len == 0 or batch == 0:
            n_seq = batch
            if cu_seqlens is not None:
                n_seq = check_cu_seqlens(cu_seqlens, batch, seq_len).numel() - 1
            if initial_state is not None:
                self._check_state(initial_state, n_seq)
            elif output_final_state:
                initial_state = self._zero_state(n_seq, dtype, x.device)
            return self._empty_output(x), (initial_state if output_final_state else None)
        return self._mix(x, cu_seqlens, initial_state, output_final_state)

    def _empty_output(self, x: Tensor) -> Tensor:
        """The empty ``y`` for an empty ``x``, computed through the projections so that it
        stays connected to ``x`` and the parameters (a training step on an empty batch can
        call ``backward``)."""
        inputs = self._inputs(x)
        o = self._empty_o(inputs) * 0
        for t in inputs:  # every projection joins the graph (each sum is an exact 0)
            o = o + t.sum() * 0
        return self._output(o, x).to(x.dtype)

    def _empty_o(self, inputs: tuple[Tensor, ...]) -> Tensor:
        """A tensor of :meth:`_kernel`'s output shape among ``inputs`` (empty input only)."""
        raise NotImplementedError

    def _state_dtype(self, dtype: torch.dtype) -> torch.dtype:
        """The dtype of the state when computing in ``dtype``."""
        return dtype

    def _check_state_dtype(self, state: Any) -> None:
        """Raise :class:`ordcore.DTypeError` unless ``state`` is a real floating tensor
        (anything that is not a tensor is left to :meth:`_check_state`)."""
        if isinstance(state, Tensor) and not state.is_floating_point():
            raise DTypeError(
                f"initial_state: expected a real floating dtype, got {state.dtype}"
            )

    def _mix(
        self,
        x: Tensor,
        cu_seqlens: Tensor | None,
        initial_state: Tensor | None,
        output_final_state: bool,
    ) -> tuple[Tensor, Tensor | None]:
        """:meth:`forward` once ``x`` is non-empty and in the parameters' dtype."""
        batch, seq_len, _ = x.shape
        inputs = self._inputs(x)
        cu = None
        n_seq = batch
        if cu_seqlens is not None:
            cu = check_cu_seqlens(cu_seqlens, batch, seq_len)
            n_seq = cu.numel() - 1
            inputs = tuple(unpack(t, cu) for t in inputs)
        if initial_state is not None:
            self._check_state(initial_state, n_seq)
        o, state = self._kernel(inputs, initial_state, self.mode)
        if cu is not None:
            o = pack(o, cu)
        y = self._output(o, x).to(x.dtype)
        return y, (state if output_final_state else None)

    def step(self, x_t: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Decode one token: ``x_t`` of shape ``(B, d_model)`` -> ``(y_t, new_state)``.

        Equals :meth:`forward` on the whole sequence, one token at a time.
        """
        if not isinstance(x_t, Tensor) or x_t.ndim != 2:
            shape = tuple(x_t.shape) if isinstance(x_t, Tensor) else type(x_t).__name__
            raise InvalidArgumentError(f"x_t: expected shape (batch, d_model), got {shape}")
        y, new_state = self.forward(
            x_t[:, None, :], initial_state=state, output_final_state=True
        )
        assert new_state is not None
        return y[:, 0, :], new_state

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, mode={self.mode!r}"


def check_positive(name: str, value: Any) -> None:
    """Raise unless ``value`` is a positive int."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InvalidArgumentError(f"{name}: expected a positive int, got {value!r}")


def check_number(name: str, value: Any, *, positive: bool = True) -> float:
    """``value`` as a float, checked to be a finite real number that is ``> 0``
    (``positive``) or ``>= 0``; Python and NumPy numbers and 0-d real tensors are accepted.

    Raises
    ------
    InvalidArgumentError
        Not a real number (the message names the type), not finite, or out of range.
    """
    if isinstance(value, Tensor) and value.ndim == 0 and (
        value.is_floating_point() or (not value.is_complex() and value.dtype != torch.bool)
    ):
        value = value.item()
    if isinstance(value, (bool, Tensor)) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(
            f"{name}: expected a real number, got {type(value).__name__} {value!r}"
        )
    v = float(value)
    bound = "a positive" if positive else "a non-negative"
    if not math.isfinite(v) or (v <= 0 if positive else v < 0):
        raise InvalidArgumentError(f"{name}: expected {bound} finite number, got {value!r}")
    return v


def check_mode(mode: Any, chunk_size: Any) -> None:
    if mode not in ("chunk", "recurrent"):
        raise InvalidArgumentError(f"mode: expected 'chunk' or 'recurrent', got {mode!r}")
    check_positive("chunk_size", chunk_size)


def resolve_head_dim(d_model: Any, num_heads: Any, head_dim: int | None) -> int:
    """Check ``d_model`` and ``num_heads``; return ``head_dim`` (default ``d_model // num_heads``)."""
    check_positive("d_model", d_model)
    check_positive("num_heads", num_heads)
    if head_dim is not None:
        check_positive("head_dim", head_dim)
        return head_dim
    if d_model % num_heads:
        raise InvalidArgumentError(
            f"num_heads: {num_heads} does not divide d_model={d_model}; pass head_dim"
        )
    return int(d_model // num_heads)


def check_state(state: Tensor, shape: tuple[int, ...]) -> None:
    if not isinstance(state, Tensor) or tuple(state.shape) != shape:
        got = tuple(state.shape) if isinstance(state, Tensor) else type(state).__name__
        raise InvalidArgumentError(f"initial_state: expected shape {shape}, got {got}")


def pad_time(t: Tensor, multiple: int, dim: int = 1) -> Tensor:
    """Zero-pad dimension ``dim`` to a multiple of ``multiple``."""
    n = t.shape[dim]
    extra = (-n) % multiple
    if extra == 0:
        return t
    shape = list(t.shape)
    shape[dim] = extra
    return torch.cat([t, t.new_zeros(shape)], dim=dim)


def to_chunks(t: Tensor, chunk_size: int) -> Tensor:
    """``(B, N * C, H, *rest)`` -> ``(B, H, N, C, *rest)`` (a view) with ``C = chunk_size``."""
    B, NC, H = t.shape[:3]
    return t.reshape(B, NC // chunk_size, chunk_size, H, *t.shape[3:]).movedim(3, 1)


def from_chunks(o: Tensor, seq_len: int) -> Tensor:
    """``(B, H, N, C, V)`` -> ``(B, seq_len, H, V)``: the inverse of :func:`to_chunks`, less
    the time padding."""
    B, H, N, C, V = o.shape
    return o.permute(0, 2, 3, 1, 4).reshape(B, N * C, H, V)[:, :seq_len]


class MultiHeadMixer(RecurrentMixer):
    """Base of the multi-head mixers: ``q``/``k``/``v``/``o`` projections of ``num_heads``
    heads of ``head_dim``, one ``(head_dim, head_dim)`` state per head."""

    num_heads: int
    head_dim: int
    q_proj: nn.Linear
    k_proj: nn.Linear
    v_proj: nn.Linear
    o_proj: nn.Linear

    def _make_qkv(self, d_model: int, inner: int, kw: dict[str, Any]) -> None:
        self.q_proj = nn.Linear(d_model, inner, bias=False, **kw)
        self.k_proj = nn.Linear(d_model, inner, bias=False, **kw)
        self.v_proj = nn.Linear(d_model, inner, bias=False, **kw)

    def _heads(self, t: Tensor) -> Tensor:
        """``(B, T, num_heads * head_dim)`` -> ``(B, T, num_heads, head_dim)``."""
        return t.view(*t.shape[:2], self.num_heads, self.head_dim)

    def _output(self, o: Tensor, x: Tensor) -> Tensor:
        B, T = o.shape[:2]
        return self.o_proj(o.reshape(B, T, self.num_heads * self.head_dim))

    def _check_state(self, state: Tensor, batch: int) -> None:
        check_state(state, (batch, self.num_heads, self.head_dim, self.head_dim))

    def _empty_o(self, inputs: tuple[Tensor, ...]) -> Tensor:
        return inputs[2]  # v: (B, T, num_heads, head_dim), the kernel output's shape

    def _zero_state(self, batch: int, dtype: torch.dtype, device: torch.device) -> Tensor:
        return torch.zeros(batch, self.num_heads, self.head_dim, self.head_dim,
                           dtype=dtype, device=device)  # fmt: skip

"""Rotated group-wise quantization: a randomized Hadamard rotation, then round-to-nearest
onto INT4 or FP4 (E2M1) grids with one scale per group.

The rotation acts on the last dimension in blocks of ``group_size`` coordinates:
``y = H (s * x) / sqrt(group_size)`` with ``H`` the Sylvester Hadamard matrix (applied by the
FWHT) and ``s`` random signs: the sign of coordinate ``i`` of block ``b`` is negative iff
``counter_sign_negative(seed, b, i)`` (``ordcore_core::rng``, SplitMix64-based), the
convention of :mod:`ordcore.hadamard`. It is orthogonal, so spreading an outlier over its
group costs nothing and lowers the error of the per-group scale (QuaRot, arXiv:2404.00456;
QuIP#, arXiv:2402.04396). The rotation is an autograd Function whose backward applies the
transposed rotation.

Grids: INT4 symmetric ``{-8..7} * scale`` with ``scale = max|x| / 7``; FP4 E2M1
``{0, 0.5, 1, 1.5, 2, 3, 4, 6}`` with sign, ``scale = max|x| / 6`` (OCP MX spec).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ordcore.errors import InvalidArgumentError

__all__ = [
    "RotatedQuantizer",
    "HadamardRotation",
    "fwht",
    "rotation_signs",
    "FP4_E2M1_GRID",
]

FP4_E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix64(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _counter_u64(seed: int, stream: np.ndarray, index: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        k = _mix64(np.array([seed], dtype=np.uint64) + _GOLDEN)
        k = _mix64(k ^ (stream.astype(np.uint64) + _GOLDEN))
        return _mix64(k ^ (index.astype(np.uint64) + _GOLDEN))


def rotation_signs(seed: int, blocks: int, block_size: int) -> Tensor:
    """``(blocks, block_size)`` float64 tensor of +-1: negative iff
    ``counter_sign_negative(seed, block, index)``."""
    b = np.repeat(np.arange(blocks, dtype=np.uint64), block_size)
    i = np.tile(np.arange(block_size, dtype=np.uint64), blocks)
    neg = (_counter_u64(seed, b, i) >> np.uint64(63)) == 1
    return torch.from_numpy(np.where(neg, -1.0, 1.0).reshape(blocks, block_size))


def fwht(x: Tensor) -> Tensor:
    """Unnormalized fast Walsh-Hadamard transform over the last dimension (a power of 2),
    Sylvester (natural) ordering: ``x @ hadamard_matrix(n)``."""
    n = x.shape[-1]
    shape = x.shape
    h = 1
    y = x
    while h < n:
        y = y.reshape(*shape[:-1], n // (2 * h), 2, h)
        a, b = y[..., 0, :], y[..., 1, :]
        y = torch.stack((a + b, a - b), dim=-2)
        h *= 2
    return y.reshape(shape)


class HadamardRotation(torch.autograd.Function):
    """``y = blockwise H (s * x) / sqrt(g)``; backward: ``s * H g / sqrt(g)`` (= R^T g)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, signs: Tensor) -> Tensor:  # noqa: D102
        ctx.save_for_backward(signs)
        return _rotate(x, signs)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:  # noqa: D102
        (signs,) = ctx.saved_tensors
        return _rotate_t(grad, signs), None


def _blocks(x: Tensor, signs: Tensor) -> Tensor:
    return x.reshape(*x.shape[:-1], signs.shape[0], signs.shape[1])


def _rotate(x: Tensor, signs: Tensor) -> Tensor:
    g = signs.shape[1]
    return (fwht(_blocks(x, signs) * signs) / g**0.5).reshape(x.shape)


def _rotate_t(y: Tensor, signs: Tensor) -> Tensor:
    g = signs.shape[1]
    return (fwht(_blocks(y, signs)) / g**0.5 * signs).reshape(y.shape)


class RotatedQuantizer(nn.Module):
    """Randomized-Hadamard rotation + group-wise round-to-nearest (INT4 or FP4 E2M1).

    Parameters
    ----------
    group_size : int
        Coordinates per scale and per rotation block: a power of two in [2, 4096] that
        divides the last dimension.
    fmt : {"int4", "fp4"}
    rotate : bool
        Apply the rotation (``False``: plain group-wise RTN, the baseline).
    seed : int
        Seed of the rotation signs.

    ``quantize(w) -> (codes int8, scales)``, ``dequantize(codes, scales) -> w_hat`` (rotated
    back), ``forward(w)`` = ``dequantize(quantize(w))``, ``mse(w)`` compares with and
    without rotation.
    """

    def __init__(self, group_size: int = 32, fmt: str = "int4", *, rotate: bool = True, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(group_size, int) or group_size < 2 or group_size > 4096 or group_size & (group_size - 1):
            raise InvalidArgumentError(
                f"group_size: unsupported value {group_size!r}; expected a power of two in [2, 4096]"
            )
        if fmt not in ("int4", "fp4"):
            raise InvalidArgumentError(f"fmt: expected 'int4' or 'fp4', got {fmt!r}")
        if not isinstance(seed, int) or seed < 0:
            raise InvalidArgumentError(f"seed: expected a non-negative int, got {seed!r}")
        self.group_size, self.fmt, self.rotate, self.seed = group_size, fmt, rotate, seed

    def _check(self, w: Tensor) -> None:
        if not isinstance(w, Tensor) or not w.is_floating_point():
            raise TypeError(f"w: expected a floating torch.Tensor, got {getattr(w, 'dtype', type(w))}")
        if w.ndim < 1 or w.shape[-1] % self.group_size:
            raise InvalidArgumentError(
                f"w: last dimension {w.shape[-1] if w.ndim else None} is not a multiple of "
                f"group_size={self.group_size}"
            )

    def signs(self, n: int, dtype: torch.dtype = torch.float32, device: Any = None) -> Tensor:
        """The ``(n // group_size, group_size)`` rotation signs for a last dimension ``n``."""
        return rotation_signs(self.seed, n // self.group_size, self.group_size).to(dtype=dtype, device=device)

    def rotation(self, w: Tensor) -> Tensor:
        """Rotate the last dimension (differentiable; backward = transposed rotation)."""
        self._check(w)
        out: Tensor = HadamardRotation.apply(w, self.signs(w.shape[-1], w.dtype, w.device))
        return out

    def unrotate(self, w: Tensor) -> Tensor:
        """The inverse (= transposed) rotation."""
        self._check(w)
        return _rotate_t(w, self.signs(w.shape[-1], w.dtype, w.device))

    def quantize(self, w: Tensor) -> tuple[Tensor, Tensor]:
        """``codes``: int8, same shape as ``w`` (INT4 values, or signed FP4 grid indices);
        ``scales``: ``(..., n // group_size)`` in ``w``'s dtype."""
        self._check(w)
        x = self.rotation(w) if self.rotate else w
        g = x.reshape(*x.shape[:-1], -1, self.group_size)
        amax = g.abs().amax(dim=-1, keepdim=True)
        qmax = 7.0 if self.fmt == "int4" else 6.0
        scale = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
        y = g / scale
        if self.fmt == "int4":
            codes = torch.clamp(torch.round(y), -8, 7)
        else:
            grid = torch.tensor(FP4_E2M1_GRID, dtype=y.dtype, device=y.device)
            idx = (y.abs()[..., None] - grid).abs().argmin(dim=-1)
            codes = torch.sign(y) * idx
        return codes.to(torch.int8).reshape(w.shape), scale.squeeze(-1)

    def dequantize(self, codes: Tensor, scales: Tensor) -> Tensor:
        """Inverse of :meth:`quantize` (up to the rounding error), rotated back."""
        c = codes.to(scales.dtype).reshape(*codes.shape[:-1], -1, self.group_size)
        if self.fmt == "fp4":
            grid = torch.tensor(FP4_E2M1_GRID, dtype=scales.dtype, device=scales.device)
            c = torch.sign(c) * grid[c.abs().long()]
        x = (c * scales[..., None]).reshape(codes.shape)
        return self.unrotate(x) if self.rotate else x

    def forward(self, w: Tensor) -> Tensor:
        return self.dequantize(*self.quantize(w))

    def mse(self, w: Tensor) -> dict[str, float]:
        """Mean squared error of ``dequantize(quantize(w))``, with and without rotation."""
        plain = RotatedQuantizer(self.group_size, self.fmt, rotate=False, seed=self.seed)
        rot = RotatedQuantizer(self.group_size, self.fmt, rotate=True, seed=self.seed)
        with torch.no_grad():
            return {
                "rotated": float(((rot(w) - w) ** 2).mean()),
                "plain": float(((plain(w) - w) ** 2).mean()),
            }

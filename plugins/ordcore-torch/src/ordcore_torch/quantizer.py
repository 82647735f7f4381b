"""Rotated group-wise quantization: a randomized Hadamard rotation, then round-to-nearest
onto INT4 or FP4 (E2M1) grids with one scale per group.

The rotation is exactly :class:`ordcore.hadamard.RandomizedHadamard` ``(n, seed=seed,
blocks=1, group_size=group_size)`` applied to the rows (the last dimension, length ``n``):
``y = x D H / sqrt(g)`` with ``D = diag(signs)`` and ``H`` block-diagonal, ``n / g`` copies
of the Sylvester ``H_g`` (applied by the FWHT; ``g = group_size``, a power of two, so
``H_g`` is symmetric). The signs come from :meth:`RandomizedHadamard.signs`: coordinate
``i`` (global over the row) is negative iff ``counter_sign_negative(seed, 0, i)``
(``ordcore_core::rng``, SplitMix64-based), bit-identical on every device. The map is
orthogonal, so spreading an outlier over its group costs nothing and lowers the error of
the per-group scale (QuaRot, arXiv:2404.00456; QuIP#, arXiv:2402.04396). The rotation is
an autograd Function whose backward applies the transposed rotation.

Grids: INT4 symmetric ``{-8..7} * scale`` with ``scale = max|x| / 7``; FP4 E2M1
``{0, 0.5, 1, 1.5, 2, 3, 4, 6}`` with sign, ``scale = max|x| / 6`` (OCP MX spec).

FP4 with small groups (a measured property, not a bug): on weights with a few outlier
channels (4 of 256 columns scaled by 40), rotation lowers the INT4 error at every group
size, but with ``scale="absmax"`` FP4 only from group size 128 on; at 32 it roughly doubles
the error (MSE 0.42 rotated vs 0.23 plain) and at 16 nearly triples it (0.33 vs 0.12). Small groups already isolate the
outliers: only the groups holding one suffer, the others keep a small scale. Rotating such
a group turns it into ``+-c + noise`` (the outlier's Hadamard row, ``c = outlier / sqrt(g)``,
plus the Gaussian rest), so nearly every value lands just below the group maximum, in
``[4, 6] * scale`` where E2M1's step is 2 (a third of the range); INT4's uniform grid has no
such coarse top. Choosing the scale by least squared error (``scale="mse"``, a clipped
absmax) fixes it at 32 (0.18 rotated vs 0.23 plain) and brings 16 to about even (0.124
vs 0.115). This matches the
observation that Hadamard rotations give little or nothing for NVFP4-style small groups
unless the scale (or rounding) is adapted to the rotated distribution (Egiazarian et al.,
"Bridging the Gap Between Promise and Performance for Microscaling FP4 Quantization", 2025).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore_torch._base import check_float

__all__ = [
    "RotatedQuantizer",
    "HadamardRotation",
    "fwht",
    "rotation_signs",
    "FP4_E2M1_GRID",
]

FP4_E2M1_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
#: Clipping ratios tried by ``scale="mse"``: ``scale = ratio * max|x| / qmax``.
_MSE_CLIP_RATIOS = tuple(0.5 + 0.025 * k for k in range(21))


@functools.lru_cache(maxsize=64)
def _signs_np(seed: int, n: int, group_size: int) -> np.ndarray:
    from ordcore.hadamard import RandomizedHadamard

    signs = RandomizedHadamard(n, seed=seed, group_size=group_size, dtype=np.float64).signs(0)
    signs.setflags(write=False)
    return signs


def rotation_signs(seed: int, n: int, group_size: int) -> Tensor:
    """The signs ``D_1`` of ``ordcore.hadamard.RandomizedHadamard(n, seed=seed,
    group_size=group_size)`` as a ``(n // group_size, group_size)`` float64 tensor of +-1
    (row ``b`` = group ``b``). Coordinate ``i`` (global, ``0 <= i < n``) is negative iff
    ``counter_sign_negative(seed, 0, i)``; taken from :meth:`RandomizedHadamard.signs`, so
    the two never drift apart."""
    if not isinstance(n, int) or not isinstance(group_size, int) or group_size < 1 or n % group_size:
        raise InvalidArgumentError(
            f"n: {n!r} is not a positive multiple of group_size={group_size!r}"
        )
    s = _signs_np(int(seed), n, group_size)
    return torch.tensor(s, dtype=torch.float64).reshape(n // group_size, group_size)


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


def _wide(dtype: torch.dtype) -> torch.dtype:
    """The dtype the FWHT runs in: at least float32. Its unnormalized intermediate sums grow
    up to ``g`` times the input, which overflows float16 (65504) long before the rotated
    values (at most ``sqrt(g)`` times) do."""
    return torch.promote_types(dtype, torch.float32)


def _rotate(x: Tensor, signs: Tensor) -> Tensor:
    g = signs.shape[1]
    wdt = _wide(x.dtype)
    y = fwht(_blocks(x.to(wdt), signs) * signs.to(wdt)) / g**0.5
    return y.reshape(x.shape).to(x.dtype)


def _rotate_t(y: Tensor, signs: Tensor) -> Tensor:
    g = signs.shape[1]
    wdt = _wide(y.dtype)
    x = fwht(_blocks(y.to(wdt), signs)) / g**0.5 * signs.to(wdt)
    return x.reshape(y.shape).to(y.dtype)


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
        Seed of the rotation signs (those of ``RandomizedHadamard(n, seed=seed,
        group_size=group_size)``).
    scale : {"absmax", "mse"}
        ``"absmax"``: ``scale = max|x| / qmax`` (qmax 7 for INT4, 6 for FP4), the group
        maximum is exact. ``"mse"``: per group, the clipped scale ``ratio * max|x| / qmax``
        (ratio in 0.5, 0.525, ..., 1.0) with the least squared error; see the FP4 note in
        the module docstring for why it matters with rotation and small groups.

    ``quantize(w) -> (codes int8, scales)``, ``dequantize(codes, scales) -> w_hat`` (rotated
    back), ``forward(w)`` = ``dequantize(quantize(w))``, ``mse(w)`` compares with and
    without rotation.

    ``w`` is a floating ``(..., n)`` tensor with ``n`` a positive multiple of
    ``group_size``; outputs come back in ``w``'s dtype (the rotation runs in at least
    float32, so float16 input does not overflow where the rotated values fit). An empty
    batch gives empty codes, scales and output. Non-finite weights are refused:
    one NaN or inf would set its whole group's scale (silently zeroing the finite values,
    or making them NaN), so :meth:`quantize` (and ``forward``, ``mse``) raise
    :class:`ordcore.InvalidArgumentError` naming ``w`` rather than return garbage.
    """

    def __init__(
        self,
        group_size: int = 32,
        fmt: str = "int4",
        *,
        rotate: bool = True,
        seed: int = 0,
        scale: str = "absmax",
    ) -> None:
        super().__init__()
        if not isinstance(group_size, int) or group_size < 2 or group_size > 4096 or group_size & (group_size - 1):
            raise InvalidArgumentError(
                f"group_size: unsupported value {group_size!r}; expected a power of two in [2, 4096]"
            )
        if fmt not in ("int4", "fp4"):
            raise InvalidArgumentError(f"fmt: expected 'int4' or 'fp4', got {fmt!r}")
        if not isinstance(seed, int) or seed < 0:
            raise InvalidArgumentError(f"seed: expected a non-negative int, got {seed!r}")
        if scale not in ("absmax", "mse"):
            raise InvalidArgumentError(f"scale: expected 'absmax' or 'mse', got {scale!r}")
        self.group_size, self.fmt, self.rotate, self.seed = group_size, fmt, rotate, seed
        self.scale = scale

    def _check(self, w: Tensor, name: str = "w") -> None:
        if not isinstance(w, Tensor):
            raise TypeError(f"{name}: expected a floating torch.Tensor, got {type(w).__name__}")
        check_float(w, name)
        self._check_last_dim(w, name)

    def _check_last_dim(self, w: Tensor, name: str) -> None:
        if w.ndim < 1 or w.shape[-1] % self.group_size:
            raise InvalidArgumentError(
                f"{name}: last dimension {w.shape[-1] if w.ndim else None} is not a multiple of "
                f"group_size={self.group_size}"
            )
        if w.shape[-1] == 0:
            raise InvalidArgumentError(
                f"{name}: the last dimension is empty (shape {tuple(w.shape)}); it must be a "
                f"positive multiple of group_size={self.group_size}"
            )

    def signs(self, n: int, dtype: torch.dtype = torch.float32, device: Any = None) -> Tensor:
        """The ``(n // group_size, group_size)`` rotation signs for a last dimension ``n``."""
        return rotation_signs(self.seed, n, self.group_size).to(dtype=dtype, device=device)

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
        ``scales``: ``(..., n // group_size)`` in ``w``'s dtype.

        Raises
        ------
        ordcore.DTypeError
            ``w`` is not floating.
        ordcore.InvalidArgumentError
            ``w``'s last dimension is empty or not a multiple of ``group_size``, or ``w``
            contains NaN or inf (a non-finite value would wreck its whole group).
        """
        self._check(w)
        if not bool(torch.isfinite(w).all()):
            bad = int((~torch.isfinite(w)).sum())
            raise InvalidArgumentError(
                f"w: contains {bad} NaN/inf value(s); quantization needs finite weights "
                f"(one non-finite value would set the scale of its whole group)"
            )
        x = self.rotation(w) if self.rotate else w
        if not bool(torch.isfinite(x).all()):
            raise InvalidArgumentError(
                f"w: the rotated values overflow {w.dtype}; quantize in a wider dtype"
            )
        g = x.reshape(*x.shape[:-1], x.shape[-1] // self.group_size, self.group_size)
        amax = g.abs().amax(dim=-1, keepdim=True)
        qmax = 7.0 if self.fmt == "int4" else 6.0
        base = torch.where(amax > 0, amax / qmax, torch.ones_like(amax))
        ratios = _MSE_CLIP_RATIOS if self.scale == "mse" else (1.0,)
        best_err: Tensor | None = None
        for r in ratios:
            scale_r = base * r
            codes_r = self._round(g / scale_r)
            if best_err is None:
                codes, scale = codes_r, scale_r
                if len(ratios) == 1:
                    break
                best_err = ((self._values(codes_r) * scale_r - g) ** 2).sum(-1, keepdim=True)
                continue
            err = ((self._values(codes_r) * scale_r - g) ** 2).sum(-1, keepdim=True)
            better = err < best_err
            codes = torch.where(better, codes_r, codes)
            scale = torch.where(better, scale_r, scale)
            best_err = torch.where(better, err, best_err)
        return codes.to(torch.int8).reshape(w.shape), scale.squeeze(-1)

    def _round(self, y: Tensor) -> Tensor:
        """Round-to-nearest codes (float) of values already divided by the scale."""
        if self.fmt == "int4":
            return torch.clamp(torch.round(y), -8, 7)
        grid = torch.tensor(FP4_E2M1_GRID, dtype=y.dtype, device=y.device)
        idx = (y.abs()[..., None] - grid).abs().argmin(dim=-1)
        return torch.sign(y) * idx

    def _values(self, codes: Tensor) -> Tensor:
        """Grid values (in units of the scale) of float ``codes``."""
        if self.fmt == "int4":
            return codes
        grid = torch.tensor(FP4_E2M1_GRID, dtype=codes.dtype, device=codes.device)
        return torch.sign(codes) * grid[codes.abs().long()]

    def dequantize(self, codes: Tensor, scales: Tensor) -> Tensor:
        """Inverse of :meth:`quantize` (up to the rounding error), rotated back.

        Parameters
        ----------
        codes : integer Tensor, ``(..., n)``
            As :meth:`quantize` returns: INT4 values in ``-8..7``, or signed FP4 grid
            indices in ``-7..7``; ``n`` a positive multiple of ``group_size``.
        scales : floating Tensor, ``(..., n // group_size)``
            Exactly ``codes.shape[:-1] + (n // group_size,)`` (no broadcasting), finite.

        Returns
        -------
        Tensor, ``codes.shape``, in ``scales``' dtype.

        Raises
        ------
        ordcore.DTypeError
            ``codes`` not integer, or ``scales`` not floating.
        ordcore.InvalidArgumentError
            Wrong shapes, codes outside the format's range, or non-finite scales.
        """
        if not isinstance(codes, Tensor):
            raise TypeError(f"codes: expected an integer torch.Tensor, got {type(codes).__name__}")
        if not isinstance(scales, Tensor):
            raise TypeError(f"scales: expected a floating torch.Tensor, got {type(scales).__name__}")
        if codes.is_floating_point() or codes.is_complex() or codes.dtype == torch.bool:
            raise DTypeError(
                f"codes: expected an integer dtype (int8, as quantize returns), got {codes.dtype}"
            )
        check_float(scales, "scales")
        self._check_last_dim(codes, "codes")
        expected = (*codes.shape[:-1], codes.shape[-1] // self.group_size)
        if tuple(scales.shape) != expected:
            raise InvalidArgumentError(
                f"scales: expected shape {expected} (one scale per group of codes of shape "
                f"{tuple(codes.shape)}), got {tuple(scales.shape)}"
            )
        lo, hi = (-8, 7) if self.fmt == "int4" else (-7, 7)
        if codes.numel() and (int(codes.min()) < lo or int(codes.max()) > hi):
            raise InvalidArgumentError(
                f"codes: {self.fmt} codes must lie in {lo}..{hi}, got values in "
                f"{int(codes.min())}..{int(codes.max())}"
            )
        if not bool(torch.isfinite(scales).all()):
            raise InvalidArgumentError("scales: contains NaN/inf")
        c = self._values(codes.to(scales.dtype).reshape(*expected, self.group_size))
        x = (c * scales[..., None]).reshape(codes.shape)
        return self.unrotate(x) if self.rotate else x

    def forward(self, w: Tensor) -> Tensor:
        return self.dequantize(*self.quantize(w))

    def mse(self, w: Tensor) -> dict[str, float]:
        """Mean squared error of ``dequantize(quantize(w))``, with and without rotation."""
        kw = {"seed": self.seed, "scale": self.scale}
        plain = RotatedQuantizer(self.group_size, self.fmt, rotate=False, **kw)
        rot = RotatedQuantizer(self.group_size, self.fmt, rotate=True, **kw)
        with torch.no_grad():
            return {
                "rotated": float(((rot(w) - w) ** 2).mean()),
                "plain": float(((plain(w) - w) ** 2).mean()),
            }

"""Token orders as torch modules: fixed scan orders, Gumbel-Sinkhorn and Plackett-Luce.

Convention (the one of :func:`ordcore.sfc.scan_order`): a permutation ``p`` is applied as
``tokens[:, p]``, i.e. output position ``i`` holds input token ``p[i]``. A soft permutation
matrix ``P`` is applied as ``P @ tokens``, so ``P[i, p[i]]`` is where its mass goes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ordcore.errors import DTypeError, InvalidArgumentError
from ordcore_torch._base import check_number

__all__ = [
    "FixedOrder",
    "SinkhornOrder",
    "PlackettLuceOrder",
    "gumbel_sinkhorn",
    "log_sinkhorn",
    "hungarian",
    "reinforce_loss",
    "scan_permutation",
]


def scan_permutation(height: int, width: int, kind: str) -> Tensor:
    """``ordcore.sfc.scan_order(height, width, kind)`` as an int64 tensor."""
    from ordcore import sfc

    return torch.from_numpy(np.ascontiguousarray(sfc.scan_order(height, width, kind), dtype=np.int64))


def _as_permutations(
    p: Any, n: int | None, name: str, *, batched: bool = False, device: Any = None
) -> Tensor:
    """``p`` as a new int64 tensor (never a view of the caller's data), checked to be one
    permutation of ``0..n-1`` (shape ``(n,)``) or, with ``batched``, any number of them
    (shape ``(..., n)``). ``n=None`` takes ``n`` from ``p``.

    Raises
    ------
    DTypeError
        ``p`` is not integer (float, bool, complex or not numeric).
    InvalidArgumentError
        Wrong shape, or a row that is not a permutation of ``0..n-1``.
    """
    try:
        t = p if isinstance(p, Tensor) else torch.as_tensor(np.asarray(p))
    except (TypeError, ValueError, RuntimeError) as exc:
        raise DTypeError(f"{name}: expected integer indices, got {type(p).__name__}: {exc}") from exc
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise DTypeError(
            f"{name}: expected an integer dtype, got {t.dtype} (a permutation holds indices)"
        )
    shape = "(..., n)" if batched else "(n,)"
    if (t.ndim < 1) if batched else (t.ndim != 1):
        hint = " (use perm[0] for a single sample() row)" if t.ndim == 2 and t.shape[0] == 1 else ""
        raise InvalidArgumentError(
            f"{name}: expected shape {shape}, got {tuple(t.shape)}{hint}"
        )
    m = t.shape[-1]
    if n is not None and m != n:
        raise InvalidArgumentError(f"{name}: expected {n} entries per permutation, got {m}")
    if m == 0:
        raise InvalidArgumentError(f"{name}: a permutation needs at least one entry")
    t = t.to(device=device, dtype=torch.int64).clone()
    rows = t.reshape(-1, m)
    ok = (torch.sort(rows, dim=-1).values == torch.arange(m, device=t.device)).all(-1)
    if not bool(ok.all()):
        if not batched:
            raise InvalidArgumentError(f"{name}: is not a permutation of 0..{m - 1}")
        i = int((~ok).nonzero()[0, 0])
        raise InvalidArgumentError(f"{name}: row {i} is not a permutation of 0..{m - 1}")
    return t


def _as_permutation(p: Any, n: int | None = None, name: str = "permutation") -> Tensor:
    return _as_permutations(p, n, name)


def _check_tokens(x: Tensor, n: int, dim: int) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"x: expected a torch.Tensor, got {type(x).__name__}")
    if x.ndim < 2:
        raise InvalidArgumentError(f"x: expected rank >= 2 (batch, tokens, ...), got shape {tuple(x.shape)}")
    if not -x.ndim <= dim < x.ndim:
        raise InvalidArgumentError(
            f"dim: {dim} is out of range for x of shape {tuple(x.shape)} (rank {x.ndim})"
        )
    if x.shape[dim] != n:
        raise InvalidArgumentError(f"x: dimension {dim} has {x.shape[dim]} tokens, expected {n}")


class FixedOrder(nn.Module):
    """A fixed token order: an :mod:`ordcore.sfc` scan of a ``height x width`` grid, a
    seeded random permutation (``kind="random"``) or a given ``permutation``.

    ``forward(x)`` = ``permute(x)`` = ``x.index_select(dim, p)``; ``unpermute`` inverts it.

    Parameters
    ----------
    height, width : int, optional
        The grid (when no ``permutation`` is given).
    kind : str
        An :func:`ordcore.sfc.scan_order` kind, or ``"random"``.
    permutation : 1-D integer array-like, optional
        A permutation of ``0..n-1``; it is copied, so later changes to the caller's array
        do not affect the order.
    seed : int
        Seed of ``kind="random"``.
    dim : int
        The token dimension of ``x`` (negative counts from the end); checked against
        ``x.ndim`` at call time.

    Raises
    ------
    ordcore.DTypeError
        ``permutation`` is not integer (float, bool, ...).
    ordcore.InvalidArgumentError
        ``permutation`` not 1-D or not a permutation of ``0..n-1``; ``height``/``width``
        not positive ints; ``dim`` not an int (at construction) or out of range for ``x``
        (at call time).
    """

    perm: Tensor
    inverse: Tensor

    def __init__(
        self,
        height: int | None = None,
        width: int | None = None,
        kind: str = "hilbert",
        *,
        permutation: Any = None,
        seed: int = 0,
        dim: int = 1,
    ) -> None:
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise InvalidArgumentError(f"dim: expected an int, got {type(dim).__name__} {dim!r}")
        dim = int(dim)
        if permutation is not None:
            p = _as_permutation(permutation)
        else:
            if not (isinstance(height, int) and isinstance(width, int) and height > 0 and width > 0):
                raise InvalidArgumentError(
                    f"height, width: expected positive ints, got {height!r}, {width!r}"
                )
            if kind == "random":
                gen = torch.Generator().manual_seed(seed)
                p = torch.randperm(height * width, generator=gen)
            else:
                p = scan_permutation(height, width, kind)
        self.kind = "custom" if permutation is not None else kind
        self.dim = dim
        self.register_buffer("perm", p)
        self.register_buffer("inverse", torch.argsort(p))

    @property
    def num_tokens(self) -> int:
        return int(self.perm.numel())

    def permute(self, x: Tensor) -> Tensor:
        """Reorder tokens: output position ``i`` holds token ``perm[i]``."""
        _check_tokens(x, self.num_tokens, self.dim)
        return x.index_select(self.dim, self.perm)

    def unpermute(self, x: Tensor) -> Tensor:
        """Undo :meth:`permute`."""
        _check_tokens(x, self.num_tokens, self.dim)
        return x.index_select(self.dim, self.inverse)

    def forward(self, x: Tensor) -> Tensor:
        return self.permute(x)

    def extra_repr(self) -> str:
        return f"kind={self.kind!r}, num_tokens={self.num_tokens}"


def _noise_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype noise is drawn and added in: at least float32 (bfloat16's 8-bit mantissa
    makes ``scores + G`` tie often, which biases sampling)."""
    return torch.promote_types(dtype, torch.float32)


def _gumbel(shape: Any, dtype: torch.dtype, generator: torch.Generator | None) -> Tensor:
    """Standard Gumbel noise ``-log(-log(U))``."""
    tiny = torch.finfo(dtype).tiny
    u = torch.rand(shape, generator=generator, dtype=dtype).clamp(tiny, 1.0 - 1e-7)
    return -torch.log(-torch.log(u))


def log_sinkhorn(log_alpha: Tensor, n_iters: int) -> Tensor:
    """Sinkhorn normalization in log space: alternately normalize rows and columns of
    ``exp(log_alpha)`` (``(..., n, n)``); returns the log of a doubly stochastic matrix."""
    for _ in range(n_iters):
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-1, keepdim=True)
        log_alpha = log_alpha - torch.logsumexp(log_alpha, dim=-2, keepdim=True)
    return log_alpha


def gumbel_sinkhorn(
    log_alpha: Tensor,
    temperature: float = 1.0,
    n_iters: int = 20,
    noise: bool = True,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Gumbel-Sinkhorn (Mena et al. 2018, arXiv:1802.08665): ``sinkhorn((log_alpha + G) / tau)``.

    ``log_alpha`` is a floating ``(..., n, n)`` tensor (square in its last two dimensions).
    Returns a doubly stochastic ``(..., n, n)`` matrix in ``log_alpha``'s dtype (exactly
    column-stochastic, rows to within the convergence of ``n_iters`` iterations).
    float16/bfloat16 input is computed in float32 (noise included) and cast back.

    Raises
    ------
    TypeError
        ``log_alpha`` is not a tensor.
    DTypeError
        ``log_alpha`` is not floating.
    InvalidArgumentError
        ``log_alpha`` not of shape ``(..., n, n)``; ``temperature`` not a finite number
        > 0 or ``n_iters`` < 1.
    """
    if not isinstance(log_alpha, Tensor):
        raise TypeError(f"log_alpha: expected a torch.Tensor, got {type(log_alpha).__name__}")
    if log_alpha.ndim < 2 or log_alpha.shape[-1] != log_alpha.shape[-2]:
        raise InvalidArgumentError(
            f"log_alpha: expected a square (..., n, n) matrix, got shape {tuple(log_alpha.shape)}"
        )
    if not log_alpha.is_floating_point():
        raise DTypeError(f"log_alpha: expected a floating dtype, got {log_alpha.dtype}")
    temperature = check_number("temperature", temperature)
    if not isinstance(n_iters, int) or n_iters < 1:
        raise InvalidArgumentError(f"n_iters: expected a positive int, got {n_iters!r}")
    dtype = log_alpha.dtype
    la = log_alpha.to(_noise_dtype(dtype))
    if noise:
        la = la + _gumbel(la.shape, la.dtype, generator).to(la.device)
    return log_sinkhorn(la / temperature, n_iters).exp().to(dtype)


def hungarian(log_alpha: Tensor) -> Tensor:
    """The hard permutation maximizing ``sum_i log_alpha[i, p[i]]``
    (``scipy.optimize.linear_sum_assignment``); int64 ``(n,)``."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(log_alpha.detach().cpu().double().numpy(), maximize=True)
    return torch.as_tensor(cols[np.argsort(rows)], dtype=torch.int64, device=log_alpha.device)


class SinkhornOrder(nn.Module):
    """A learned soft permutation of ``num_tokens`` tokens (Gumbel-Sinkhorn in log space).

    Training mode: ``forward(x) = P @ x`` with ``P = gumbel_sinkhorn(log_alpha, temperature,
    n_iters)``. With ``straight_through=True`` the forward pass uses the hard permutation
    matrix ``P_hard`` (the Hungarian matching of the same noisy ``log_alpha``, i.e. a
    Gumbel-matching sample) and the backward pass the gradient of ``P``:
    ``P_hard + P - P.detach()`` (Mena et al. 2018, section 3; the straight-through estimator
    of Bengio et al. 2013), so training sees exactly the kind of order evaluation uses.
    Evaluation mode: the hard permutation :meth:`hard_permutation` (Hungarian algorithm on
    ``log_alpha``, no noise), applied as ``x[:, p]``.

    ``temperature`` is a plain attribute: anneal it during training (e.g. geometric from 1
    to 0.1); :meth:`set_temperature` checks the value.

    Parameters
    ----------
    num_tokens : int
    temperature : float, > 0
        Finite; Python, NumPy or 0-d tensor numbers are accepted.
    n_iters : int, >= 1
    noise : bool
        Add Gumbel noise while training.
    init : permutation, optional
        Start near this order (e.g. ``ordcore.sfc.scan_order(h, w, "hilbert")``): the hard
        permutation is then ``init`` until training moves it.
    init_scale : float
        ``log_alpha[i, init[i]]`` starts at this value (others near 0).
    straight_through : bool
        Hard permutation forward, soft gradient backward (see above).
    noise_scale : float, >= 0
        Multiplies the Gumbel noise (``0`` acts as ``noise=False``); must be finite.

    Dtypes: training mode computes ``P`` (noise and Sinkhorn) in the wider of ``x``'s and
    ``log_alpha``'s dtype, and at least float32, and returns ``x``'s dtype.

    Raises
    ------
    ordcore.InvalidArgumentError
        ``num_tokens``/``n_iters`` not positive ints, ``temperature`` not a finite number
        > 0, ``noise_scale`` not a finite number >= 0, ``init`` not a permutation of
        ``0..num_tokens-1`` (``ordcore.DTypeError`` if not integer).
    """

    def __init__(
        self,
        num_tokens: int,
        *,
        temperature: float = 1.0,
        n_iters: int = 20,
        noise: bool = True,
        init: Any = None,
        init_scale: float = 5.0,
        seed: int = 0,
        straight_through: bool = False,
        noise_scale: float = 1.0,
    ) -> None:
        super().__init__()
        if not isinstance(num_tokens, int) or num_tokens < 1:
            raise InvalidArgumentError(f"num_tokens: expected a positive int, got {num_tokens!r}")
        temperature = check_number("temperature", temperature)
        if not isinstance(n_iters, int) or n_iters < 1:
            raise InvalidArgumentError(f"n_iters: expected a positive int, got {n_iters!r}")
        noise_scale = check_number("noise_scale", noise_scale, positive=False)
        self.num_tokens, self.temperature, self.n_iters, self.noise = num_tokens, temperature, n_iters, noise
        self.straight_through, self.noise_scale = straight_through, noise_scale
        gen = torch.Generator().manual_seed(seed)
        log_alpha = 0.01 * torch.randn(num_tokens, num_tokens, generator=gen)
        if init is not None:
            p = _as_permutation(init, num_tokens, "init")
            log_alpha[torch.arange(num_tokens), p] += init_scale
        self.log_alpha = nn.Parameter(log_alpha)

    def set_temperature(self, temperature: float) -> None:
        """Set the Sinkhorn temperature (for annealing): a finite number > 0 (Python, NumPy
        or a 0-d tensor), stored as a float."""
        self.temperature = check_number("temperature", temperature)

    def _noisy_log_alpha(self, noise: bool, dtype: torch.dtype | None = None) -> Tensor:
        """``log_alpha`` (+ scaled Gumbel noise), returned in the wider of ``dtype`` and
        ``log_alpha``'s dtype, at least float32. The noise is drawn in ``log_alpha``'s dtype
        widened to at least float32 (so one seed gives one draw whatever ``dtype`` is)."""
        la = self.log_alpha
        la = la.to(_noise_dtype(la.dtype))
        if noise and self.noise_scale > 0:
            g = _gumbel(la.shape, la.dtype, None).to(la.device)  # torch's global generator
            la = la + self.noise_scale * g
        return la if dtype is None else la.to(torch.promote_types(la.dtype, dtype))

    def soft_permutation(self, noise: bool | None = None, dtype: torch.dtype | None = None) -> Tensor:
        """The doubly stochastic ``(n, n)`` matrix used in training (without the
        straight-through step), computed in the wider of ``dtype`` (default: ``log_alpha``'s)
        and ``log_alpha``'s dtype, at least float32."""
        la = self._noisy_log_alpha(self.noise if noise is None else noise, dtype)
        return gumbel_sinkhorn(la, self.temperature, self.n_iters, noise=False)

    def training_permutation(self, dtype: torch.dtype | None = None) -> Tensor:
        """The ``(n, n)`` matrix applied in training mode: the soft permutation, or with
        ``straight_through`` the hard one carrying the soft one's gradient; computed in the
        wider of ``dtype`` (default: ``log_alpha``'s) and ``log_alpha``'s dtype, at least
        float32."""
        la = self._noisy_log_alpha(self.noise, dtype)
        soft = gumbel_sinkhorn(la, self.temperature, self.n_iters, noise=False)
        if not self.straight_through:
            return soft
        p = hungarian(la)
        hard = torch.zeros_like(soft)
        hard[torch.arange(self.num_tokens, device=hard.device), p] = 1.0
        return hard + soft - soft.detach()

    def hard_permutation(self) -> Tensor:
        """The int64 permutation ``p`` (apply as ``x[:, p]``), by the Hungarian algorithm."""
        return hungarian(self.log_alpha)

    def forward(self, x: Tensor) -> Tensor:
        """``x``: ``(batch, num_tokens, features)`` -> reordered, same shape and dtype.

        Training mode computes in the wider of ``x``'s and ``log_alpha``'s dtype (at least
        float32)."""
        _check_tokens(x, self.num_tokens, 1)
        if self.training:
            if not x.is_floating_point():
                raise DTypeError(
                    f"x: the training-mode soft permutation mixes tokens, so x must be floating, "
                    f"got {x.dtype} (eval mode reorders tokens of any dtype)"
                )
            P = self.training_permutation(torch.promote_types(x.dtype, self.log_alpha.dtype))
            return torch.einsum("ij,bj...->bi...", P, x.to(P.dtype)).to(x.dtype)
        return x[:, self.hard_permutation()]


class PlackettLuceOrder(nn.Module):
    """A learned Plackett-Luce distribution over permutations of ``num_tokens`` tokens.

    With scores ``s``, ``P(p) = prod_i exp(s[p_i]) / sum_{j >= i} exp(s[p_j])``; samples come
    from the Gumbel-top-k trick (sort ``s + Gumbel`` descending), the mode is
    ``argsort(-s)``. ``init`` (e.g. ``ordcore.sfc.scan_order(14, 14, "hilbert")``) sets the
    scores so that the mode IS that permutation, in the ``x[:, p]`` convention.

    Sampling draws and adds the Gumbel noise in the scores' dtype widened to at least
    float32, so a bfloat16/float16 model samples from the right distribution.
    Permutations passed to :meth:`log_prob` and :meth:`forward` are checked.
    """

    def __init__(self, num_tokens: int, *, init: Any = None, init_scale: float = 1.0) -> None:
        super().__init__()
        if not isinstance(num_tokens, int) or num_tokens < 1:
            raise InvalidArgumentError(f"num_tokens: expected a positive int, got {num_tokens!r}")
        self.num_tokens = num_tokens
        scores = torch.zeros(num_tokens)
        if init is not None:
            init_scale = check_number("init_scale", init_scale)
            p = _as_permutation(init, num_tokens, "init")
            # token p[i] gets the i-th largest score
            scores[p] = -init_scale * torch.arange(num_tokens, dtype=scores.dtype)
        self.scores = nn.Parameter(scores)

    def mode(self) -> Tensor:
        """The most likely permutation (int64, ``x[:, p]`` convention)."""
        return torch.argsort(self.scores.detach(), descending=True, stable=True)

    def sample(self, num_samples: int = 1, generator: torch.Generator | None = None) -> Tensor:
        """``(num_samples, n)`` int64 permutations by the Gumbel-top-k trick."""
        if not isinstance(num_samples, int) or num_samples < 1:
            raise InvalidArgumentError(f"num_samples: expected a positive int, got {num_samples!r}")
        scores = self.scores.detach()
        dtype = _noise_dtype(scores.dtype)
        g = _gumbel((num_samples, self.num_tokens), dtype, generator)
        g = g.to(scores.device)
        return torch.argsort(scores.to(dtype) + g, dim=-1, descending=True)

    def log_prob(self, perms: Tensor) -> Tensor:
        """Exact log-probability of each permutation in ``perms``.

        Parameters
        ----------
        perms : integer tensor or array-like, ``(n,)`` or ``(S, n)`` (any leading dims)
            Each row a permutation of ``0..num_tokens-1`` (as :meth:`sample` returns).

        Returns
        -------
        Tensor, ``perms.shape[:-1]``, in the scores' dtype.

        Raises
        ------
        ordcore.DTypeError
            ``perms`` is not integer (floats would be truncated silently).
        ordcore.InvalidArgumentError
            ``perms`` is 0-d, its last dimension is not ``num_tokens``, or a row is not a
            permutation (a duplicate, a negative or an out-of-range index).
        """
        perms = _as_permutations(perms, self.num_tokens, "perms", batched=True,
                                 device=self.scores.device)  # fmt: skip
        s = self.scores[perms]  # (..., n) in permutation order
        tail = torch.logcumsumexp(s.flip(-1), dim=-1).flip(-1)  # logsumexp of s[i:]
        return (s - tail).sum(-1)

    def forward(self, x: Tensor, perm: Tensor | None = None) -> Tensor:
        """Reorder ``x`` (``(batch, n, ...)``) by ``perm`` (default: the mode).

        ``perm`` must be one permutation of ``0..num_tokens-1`` of shape ``(n,)``: for a
        row of :meth:`sample`'s ``(S, n)`` output pass ``perm=samples[i]``.

        Raises
        ------
        ordcore.DTypeError
            ``perm`` is not integer.
        ordcore.InvalidArgumentError
            ``x`` has the wrong shape, or ``perm`` is not a 1-D permutation of
            ``0..num_tokens-1``.
        """
        _check_tokens(x, self.num_tokens, 1)
        if perm is None:
            p = self.mode()
        else:
            p = _as_permutations(perm, self.num_tokens, "perm", device=x.device)
        return x[:, p.to(x.device)]


def reinforce_loss(log_prob: Tensor, reward: Tensor, baseline: Tensor | float | None = None) -> Tensor:
    """REINFORCE with a baseline: ``-mean((reward - baseline).detach() * log_prob)``.

    ``baseline=None`` uses the leave-one-out mean of the other samples' rewards (needs at
    least two samples), which keeps the gradient estimate unbiased.
    """
    reward = torch.as_tensor(reward, dtype=log_prob.dtype, device=log_prob.device)
    if reward.shape != log_prob.shape:
        raise InvalidArgumentError(
            f"reward: shape {tuple(reward.shape)} != log_prob shape {tuple(log_prob.shape)}"
        )
    if baseline is None:
        n = reward.numel()
        if n < 2:
            raise InvalidArgumentError("baseline: the leave-one-out baseline needs >= 2 samples")
        baseline = (reward.sum() - reward) / (n - 1)
    advantage = (reward - baseline).detach()
    return -(advantage * log_prob).mean()

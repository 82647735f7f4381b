"""SSMProbe: how much does the token order matter to a sequence model?

Frozen token features ``(batch, num_tokens, in_features)`` -> an order (fixed or learned)
-> a linear lift -> a diagonal SSM (S4D) -> GELU -> mean (or last-token) pooling -> a
linear head. Only the order (if learned), the SSM and the two linear maps train; differences
in accuracy between orders measure the "order gap".
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor, nn

from ordcore.errors import InvalidArgumentError
from ordcore_torch._base import cast_call, check_float, check_positive, compute_dtype, needs_cast
from ordcore_torch.ssm import DiagonalSSM

__all__ = ["SSMProbe"]


class SSMProbe(nn.Module):
    """Order -> diagonal SSM -> linear head, on frozen token features.

    Parameters
    ----------
    in_features : int
        Feature size of each token.
    num_classes : int
    order : nn.Module, optional
        Maps ``(B, T, F)`` to reordered ``(B, T, F)`` (:class:`~ordcore_torch.order.FixedOrder`,
        :class:`~ordcore_torch.order.SinkhornOrder`, ...). ``None`` keeps the given order.
    d_model, d_state : int
        SSM width and complex modes per channel.
    pool : {"mean", "last"}
    chunk_size : int

    Raises
    ------
    ordcore.InvalidArgumentError
        ``in_features``, ``num_classes``, ``d_model``, ``d_state`` or ``chunk_size`` not a
        positive int, or an unknown ``pool``.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        order: nn.Module | None = None,
        d_model: int = 32,
        d_state: int = 16,
        pool: str = "mean",
        chunk_size: int = 64,
        dt_min: float = 1e-2,
        dt_max: float = 1e-1,
    ) -> None:
        super().__init__()
        check_positive("in_features", in_features)
        check_positive("num_classes", num_classes)
        check_positive("d_model", d_model)
        if pool not in ("mean", "last"):
            raise InvalidArgumentError(f"pool: expected 'mean' or 'last', got {pool!r}")
        self.in_features = in_features
        self.order = order if order is not None else nn.Identity()
        self.lift = nn.Linear(in_features, d_model)
        self.ssm = DiagonalSSM(d_model, d_state, chunk_size=chunk_size, dt_min=dt_min, dt_max=dt_max)
        self.head = nn.Linear(d_model, num_classes)
        self.pool = pool

    def forward(self, tokens: Tensor) -> Tensor:
        """``tokens``: ``(B, T, in_features)`` -> logits ``(B, num_classes)``."""
        if not isinstance(tokens, Tensor):
            raise TypeError(f"tokens: expected a torch.Tensor, got {type(tokens).__name__}")
        if tokens.ndim != 3 or tokens.shape[-1] != self.in_features:
            raise InvalidArgumentError(
                f"tokens: expected shape (batch, tokens, {self.in_features}), got {tuple(tokens.shape)}"
            )
        check_float(tokens, "tokens")
        if tokens.shape[1] == 0:
            raise InvalidArgumentError("tokens: needs at least one token to pool (got 0)")
        dtype = compute_dtype(self, tokens)
        if needs_cast(self, tokens, dtype):
            logits: Tensor = cast_call(self, dtype, (tokens,), {})
            return logits.to(tokens.dtype)
        h = self.lift(self.order(tokens))
        h, _ = self.ssm(h)
        h = F.gelu(h)
        pooled = h.mean(dim=1) if self.pool == "mean" else h[:, -1]
        return self.head(pooled)

"""Checks of scalar arguments shared by the public modules."""

from __future__ import annotations

import operator
import os

import numpy as np

from ordcore.errors import DTypeError, InvalidArgumentError

__all__ = ["int_arg", "num_threads_arg"]


def int_arg(name: str, value: object) -> int:
    """``value`` as a Python int; ``DTypeError`` naming ``name`` for bools and non-integers."""
    if isinstance(value, (bool, np.bool_)):
        raise DTypeError(f"{name}: must be an integer, got a bool")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise DTypeError(f"{name}: must be an integer, got {type(value).__name__}") from None


def max_threads() -> int:
    """The largest ``num_threads`` accepted: 8 threads per CPU this process may use, at least
    64 (a thread pool of that size is built for the call, so absurd values are refused
    instead of starting millions of threads)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(64, 8 * cpus)


def num_threads_arg(num_threads: object) -> int | None:
    """``None`` (all cores) or a thread count in ``[1, max_threads()]``."""
    if num_threads is None:
        return None
    n = int_arg("num_threads", num_threads)
    if n < 1:
        raise InvalidArgumentError(f"num_threads: must be at least 1 (or None), got {n}")
    limit = max_threads()
    if n > limit:
        raise InvalidArgumentError(
            f"num_threads: {n} is more than {limit} (8 per available CPU, at least 64)"
        )
    return n

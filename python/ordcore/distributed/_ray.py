"""The one place :mod:`ordcore.distributed` imports Ray and turns its errors into ours."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from ordcore.errors import ClusterError, MissingDependencyError

__all__ = ["ray_module", "require_cluster", "get"]

_NOT_INITIALISED = (
    "Ray is not initialised: start a local cluster with ray.init() or join a running one "
    "with ray.init(address='auto') (on a cluster node) or ray.init(address='ray://HEAD:10001') "
    "(from outside), then call ordcore.distributed again"
)


def ray_module() -> ModuleType:
    """``ray``, or :class:`~ordcore.MissingDependencyError` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError(
            "ordcore.distributed needs Ray: pip install 'ordcore[ray]'"
        ) from exc
    return ray


def require_cluster() -> ModuleType:
    """``ray`` once :func:`ray.init` has run; :class:`~ordcore.ClusterError` otherwise.

    ordcore never starts a cluster on its own: Ray's implicit ``ray.init()`` would start a
    private one-node cluster where the user meant to join a shared one.
    """
    ray = ray_module()
    if not ray.is_initialized():
        raise ClusterError(_NOT_INITIALISED)
    return ray


def get(refs: Any, *, timeout: float | None = None) -> Any:
    """``ray.get``, re-raising an exception a remote call raised as itself (the ordcore
    error with its own message, not Ray's wrapper with the remote traceback)."""
    ray = ray_module()
    try:
        return ray.get(refs, timeout=timeout)
    except ray.exceptions.RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, BaseException):
            raise cause from None
        raise

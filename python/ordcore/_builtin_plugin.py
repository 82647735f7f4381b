"""The default plugin: ordcore's own components, registered through the same hook as any
third-party plugin (``kind="order"``: the :func:`ordcore.sfc.scan_order` scan orders)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ordcore.plugins import Registry, hookimpl

SCAN_KINDS: tuple[str, ...] = (
    "raster",
    "column",
    "snake",
    "snake_column",
    "hilbert",
    "morton",
    "spiral",
    "diagonal",
)
"""The grid scan orders of :func:`ordcore.sfc.scan_order`, each registered as ``order/<kind>``."""


def _scan_factory(kind: str) -> Callable[..., NDArray[np.int64]]:
    def scan(height: int, width: int) -> NDArray[np.int64]:
        from ordcore import sfc

        # getattr: this module type-checks before and after ordcore.sfc gains scan_order
        scan_order = getattr(sfc, "scan_order")  # noqa: B009
        return np.asarray(scan_order(height, width, kind), dtype=np.int64)

    scan.__name__ = f"scan_{kind}"
    scan.__qualname__ = scan.__name__
    scan.__doc__ = (
        f"The {kind} scan of a ``height x width`` grid: an int64 permutation ``p`` such "
        f"that ``tokens.reshape(-1, C)[p]`` visits the grid in {kind} order "
        "(:func:`ordcore.sfc.scan_order`)."
    )
    return scan


@hookimpl
def ordcore_register_components(registry: Registry) -> None:
    """Register ``order/<kind>`` for every kind in :data:`SCAN_KINDS`."""
    for kind in SCAN_KINDS:
        registry.add(
            "order",
            kind,
            _scan_factory(kind),
            description=f"{kind} scan of a height x width grid (int64 permutation)",
        )

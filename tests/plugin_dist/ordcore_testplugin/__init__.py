"""A throw-away ordcore plugin (see tests/test_plugins.py)."""

from __future__ import annotations

from typing import Any

from ordcore.plugins import Registry, hookimpl


def reversed_raster(height: int, width: int) -> Any:
    import numpy as np

    return np.arange(height * width, dtype=np.int64)[::-1].copy()


@hookimpl
def ordcore_register_components(registry: Registry) -> None:
    registry.add("order", "reversed_raster", reversed_raster, description="raster, backwards")
    # a string factory: ordcore_testplugin.heavy is imported only by ordcore.create
    registry.add("testkind", "lazy", "ordcore_testplugin.heavy:make", description="lazy")
    registry.add(
        "testkind",
        "needs_missing",
        "ordcore_testplugin.heavy:make",
        requires=("ordcore-no-such-distribution>=1.0",),
        description="needs a package that is not installed",
    )

"""Shared fixtures: the real data sets in ../shared/data and the GPU marker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ORDCORE_SHARED_DATA", ROOT.parent / "shared" / "data"))
if (SHARED_DATA / "data" / "ann").is_dir():  # pointed at the parent of data/
    SHARED_DATA = SHARED_DATA / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The folder of real data sets; tests using it skip when it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set ORDCORE_SHARED_DATA)")
    return SHARED_DATA


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    reason = _gpu_unavailable_reason()
    if reason:
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=reason))


def _gpu_unavailable_reason() -> str | None:
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        return "CuPy is not installed (pip install 'ordcore[gpu]')"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return "no CUDA device is present"
    except Exception as exc:  # noqa: BLE001 - any CUDA runtime failure means no device
        return f"no usable CUDA device ({exc})"
    return None

"""The Ray tests: one real local cluster for the whole run.

These files are collected only in a process of their own, started by
``tests/test_distributed.py::test_ray_suite`` with ``ORDCORE_RAY_SUITE=1`` (or run by hand the
same way): a process that has joined a Ray cluster and later forks (DataLoader workers,
multiprocessing) risks hangs, so the main test process never initialises Ray.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

RAY_SUITE = os.environ.get("ORDCORE_RAY_SUITE") == "1"
if not RAY_SUITE:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """``ray``, initialised once: 2 CPUs on 127.0.0.1, no dashboard, no usage stats."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ordcore[ray]')")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    try:
        yield ray
    finally:
        ray.shutdown()

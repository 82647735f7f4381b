"""ordcore.distributed from outside a Ray cluster, and the Ray suite in its own process.

The tests that need a running cluster live in ``tests/distributed/``; ``test_ray_suite``
runs them in a child pytest process (one ``ray.init`` for all of them), so this process never
joins a cluster it might later fork from.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HAVE_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(
    not HAVE_RAY, reason="Ray is not installed (pip install 'ordcore[ray]')"
)


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **env},
    )


def test_import_ordcore_does_not_import_ray() -> None:
    r = _python(
        "import sys, ordcore, ordcore.ann, ordcore.packing\n"
        "bad = sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.'))\n"
        "assert not bad, bad\n"
    )
    assert r.returncode == 0, r.stderr


def test_missing_ray_says_how_to_install() -> None:
    r = _python(
        "import sys; sys.modules['ray'] = None\n"
        "import ordcore\n"
        "try:\n"
        "    import ordcore.distributed\n"
        "except ordcore.MissingDependencyError as e:\n"
        "    print(e)\n"
    )
    assert r.returncode == 0, r.stderr
    assert "pip install 'ordcore[ray]'" in r.stdout


@needs_ray
def test_ray_not_initialised_is_one_clear_error(tmp_path: Path) -> None:
    r = _python(
        "import ordcore\n"
        "from ordcore.distributed import ShardedIndex\n"
        "try:\n"
        f"    ShardedIndex(8, 2, path={str(tmp_path)!r})\n"
        "except ordcore.ClusterError as e:\n"
        "    print(e)\n"
        "import ray\n"
        "assert not ray.is_initialized()\n"
    )
    assert r.returncode == 0, r.stderr
    assert "Ray is not initialised" in r.stdout and "ray.init(" in r.stdout
    assert not any(tmp_path.iterdir())  # nothing was written


@needs_ray
def test_ray_suite() -> None:
    """Every test in tests/distributed/ against one real local cluster, in a child process."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/distributed"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "ORDCORE_RAY_SUITE": "1", "RAY_USAGE_STATS_ENABLED": "0"},
    )
    print(r.stdout[-20000:])
    print(r.stderr[-5000:], file=sys.stderr)
    assert r.returncode == 0, "the Ray suite failed (its output is above)"

"""Run a snippet of Python in a fresh interpreter under a memory limit and check that it
did not die from a signal.

For inputs that used to abort the process (SIGABRT on a failed allocation, a panic across
the FFI boundary, the OOM killer): the snippet runs with ``RLIMIT_AS`` set, so an
allocation that would have succeeded on an overcommitting machine and been killed later
fails inside the limit instead, and the test sees how the process ended::

    from isolated import run_isolated

    def test_huge_rotation_is_refused() -> None:
        result = run_isolated(
            '''
            from ordcore import hadamard
            hadamard.RandomizedHadamard(2**34, seed=0)
            ''',
            expect=(MemoryError, "InvalidArgumentError"),
        )
        assert "2**34" in result.error or "bytes" in result.error

The snippet passes when it returns, or raises one of the ``expect`` classes (given as
classes or class names; an ordcore class name such as ``"InvalidArgumentError"`` matches
subclasses too). Anything else fails the test with the child's output: another exception,
a non-zero exit, death by a signal (``-6`` is SIGABRT), or running past ``timeout``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

DEFAULT_LIMIT_BYTES = 4 * 2**30
"""The address-space limit of the child (virtual memory: imports and thread stacks count)."""

_RUNNER = r"""
import json, resource, sys, traceback
limit = int(sys.argv[1])
if limit > 0:
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
expect = json.loads(sys.argv[2])
source = sys.stdin.read()
report = {"outcome": "returned", "error": "", "error_type": ""}
try:
    exec(compile(source, "<snippet>", "exec"), {"__name__": "__snippet__"})
except BaseException as exc:  # noqa: BLE001 - we report every way it can end
    names = [c.__name__ for c in type(exc).__mro__]
    report["error_type"] = type(exc).__name__
    report["error"] = str(exc)
    report["outcome"] = "expected" if set(names) & set(expect) else "unexpected"
    if report["outcome"] == "unexpected":
        report["traceback"] = traceback.format_exc()
sys.stdout.flush()
sys.stderr.write("\n@@ISOLATED@@" + json.dumps(report) + "\n")
sys.stderr.flush()
"""


@dataclass(frozen=True)
class IsolatedResult:
    """How the child ended: ``outcome`` is ``"returned"`` or ``"expected"`` (raised one of
    the expected classes: ``error_type``, ``error``); ``stdout``/``stderr`` are its output."""

    outcome: str
    error_type: str
    error: str
    stdout: str
    stderr: str


def run_isolated(
    source: str,
    *,
    expect: tuple[type[BaseException] | str, ...] = (),
    limit_bytes: int = DEFAULT_LIMIT_BYTES,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
) -> IsolatedResult:
    """Run ``source`` (dedented) in a fresh interpreter under ``RLIMIT_AS = limit_bytes``
    (0: no limit) and fail the calling test unless it returned or raised one of ``expect``.
    """
    names = [e if isinstance(e, str) else e.__name__ for e in expect]
    child_env = {**os.environ, **(env or {})}
    child_env.setdefault("RAYON_NUM_THREADS", "2")  # thread stacks count against the limit
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER, str(limit_bytes), json.dumps(names)],
            input=textwrap.dedent(source), capture_output=True, text=True,
            timeout=timeout, env=child_env, cwd=Path(__file__).resolve().parent, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the snippet ran past {timeout} s (a hang?):\n{textwrap.dedent(source)}\n"
                    f"stderr: {exc.stderr!r}")  # fmt: skip
    if proc.returncode < 0:
        sig = signal.Signals(-proc.returncode).name
        pytest.fail(f"the snippet died from {sig}:\n{textwrap.dedent(source)}\n{proc.stderr[-3000:]}")
    marker = proc.stderr.rfind("@@ISOLATED@@")
    if proc.returncode != 0 or marker < 0:
        pytest.fail(f"the snippet exited with status {proc.returncode} without reporting:\n"
                    f"{textwrap.dedent(source)}\n{proc.stderr[-3000:]}")  # fmt: skip
    report = json.loads(proc.stderr[marker + len("@@ISOLATED@@") :])
    if report["outcome"] == "unexpected":
        pytest.fail(f"the snippet raised {report['error_type']} (expected "
                    f"{', '.join(names) or 'no error'}):\n{report['traceback']}")  # fmt: skip
    return IsolatedResult(report["outcome"], report["error_type"], report["error"],
                          proc.stdout, proc.stderr[:marker])  # fmt: skip


def run_forked(
    fn: Callable[[], object],
    *,
    expect: tuple[type[BaseException], ...] = (),
    limit_bytes: int = DEFAULT_LIMIT_BYTES,
    timeout: int = 60,
) -> str:
    """Call ``fn`` in a forked child of this process, allowed ``limit_bytes`` of address
    space beyond what this process already maps (``RLIMIT_AS`` = mapped + ``limit_bytes``:
    a test runner that imported torch may map several GiB before the call).

    Much cheaper than :func:`run_isolated` (no new interpreter, nothing to import), for
    sweeps over many inputs. Returns ``"returned"``, ``"expected"`` (raised one of
    ``expect``), ``"raised <Type>: <message>"``, ``"signal <NAME>"`` or ``"timeout"``; the
    caller asserts on it. POSIX only.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test runner
        code = 0
        try:
            os.close(read_fd)
            import resource

            limit = _mapped_bytes() + limit_bytes
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.alarm(timeout)
            try:
                fn()
                message = "returned"
            except expect:
                message = "expected"
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                message = f"raised {type(exc).__name__}: {exc}"[:2000]
            os.write(write_fd, message.encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return "timeout" if sig == signal.SIGALRM else f"signal {signal.Signals(sig).name}"
    return message or f"exit {os.WEXITSTATUS(status)} without a report"


def _mapped_bytes() -> int:
    """The virtual memory this process maps now (``/proc/self/statm``; 0 elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")

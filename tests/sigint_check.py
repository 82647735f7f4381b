"""Subprocess checks that a long ordcore call stops early on Ctrl-C and that a call whose
memory estimate exceeds the address space raises instead of aborting."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_INTERRUPT = r"""
import json, os, signal, threading, time
import numpy as np
{setup}
def call():
    {call}
call()  # warm-up
t0 = time.perf_counter()
call()
full = time.perf_counter() - t0
threading.Timer(full / 5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
try:
    call()
    print(json.dumps({{"full": full, "interrupted": False, "after": time.perf_counter() - t0}}))
except KeyboardInterrupt:
    print(json.dumps({{"full": full, "interrupted": True, "after": time.perf_counter() - t0}}))
"""


def assert_interrupts_early(setup: str, call: str, min_full: float = 0.2) -> dict[str, float]:
    """Runs ``call`` once uninterrupted (``full`` seconds), then again with SIGINT sent at
    ``full / 5``: KeyboardInterrupt must arrive well before the call would have finished
    (without in-loop checks it arrives only after the call returns, at about ``full``)."""
    code = _INTERRUPT.format(setup=textwrap.dedent(setup), call=call)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    out: dict[str, float] = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["full"] >= min_full, f"the call is too short to test interrupts: {out}"
    assert out["interrupted"], out
    assert out["after"] < 0.7 * out["full"], out
    return out


_MEMORY = r"""
import resource
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import numpy as np
import ordcore
{setup}
try:
    {call}
    print("RETURNED")
except (MemoryError, ordcore.InvalidArgumentError) as e:
    print(type(e).__name__ + ": " + str(e))
"""


def assert_refused_under_rlimit(setup: str, call: str, match: str,
                                limit: int = 4 << 30) -> str:
    """Runs ``call`` under ``RLIMIT_AS = limit`` in a subprocess: it must raise MemoryError
    or InvalidArgumentError whose message contains ``match``, and exit normally (no
    SIGABRT)."""
    code = _MEMORY.format(limit=limit, setup=textwrap.dedent(setup), call=call)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-3000:])
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith(("MemoryError", "InvalidArgumentError")), line
    assert match in line, line
    return line


__all__ = ["assert_interrupts_early", "assert_refused_under_rlimit", "json"]

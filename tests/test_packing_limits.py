"""ordcore.packing at the limits: inputs that used to abort the process, allocate far more
than they need, overflow, or ignore Ctrl-C.

Allocation cases run in a subprocess under ``RLIMIT_AS`` (where an allocation failure used to
end the process with SIGABRT, exit 134) and must end in a clear exception or succeed within
a small memory bound. Interrupt cases send a real SIGINT to a subprocess during a long call."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_packing import packs_of, ref_fit, ref_nf

import ordcore
from ordcore.packing import Plan, materialize, pack

RLIMIT_AS = 4 << 30
linux_only = pytest.mark.skipif(
    sys.platform != "linux", reason="RLIMIT_AS and /proc/self/status are Linux facilities"
)

_LIMITED = """
import resource, sys
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
import ordcore
from ordcore.packing import Plan, materialize, pack
try:
{body}
except (MemoryError, ordcore.OrdcoreError) as e:
    print("RAISED", type(e).__name__, e)
else:
    # Peak RSS of this process image (ru_maxrss would include the parent's at fork).
    with open("/proc/self/status") as f:
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    print("OK", hwm // 1024)
"""


def _limited(body: str, timeout: float = 120) -> str:
    code = _LIMITED.format(limit=RLIMIT_AS, body=textwrap.indent(textwrap.dedent(body), "    "))
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout.strip().splitlines()[-1]


# ---------------------------------------------------------------- allocation


@linux_only
@pytest.mark.parametrize(
    ("body", "error", "arg"),
    [
        # Histogram algorithms need tables over 0..max_len: refused before allocating.
        ("pack([5, 3], 2**30)", "MemoryError", "max_len: needs about"),
        ("pack([5, 3], 2**30, algorithm='spfhp')", "MemoryError", "max_len: needs about"),
        # 2**29 fragments of 16 tokens.
        ("pack([2**33], 16, overlong='split')", "MemoryError", "lengths: needs about"),
        # More fragments than u32 slots can number.
        ("pack([2**62], 1, overlong='split')", "InvalidArgumentError", "at most 4294967294"),
        # A 1e7-row batch of 512 tokens.
        (
            "p = pack([5, 3], 512)\n"
            "materialize(p, [np.arange(5), np.arange(3)], pad_id=0, "
            "rows=np.zeros(10**7, dtype=np.int64))",
            "MemoryError",
            "rows: needs about",
        ),
        # One row of 2**30 tokens.
        (
            "p = pack([5, 3], 2**30, algorithm='nf')\n"
            "materialize(p, [np.arange(5), np.arange(3)], pad_id=0)",
            "MemoryError",
            "rows: needs about",
        ),
    ],
)
def test_oversized_requests_raise_instead_of_aborting(body: str, error: str, arg: str) -> None:
    out = _limited(body)
    assert out.startswith(f"RAISED {error}"), out
    assert arg in out, out


@linux_only
@pytest.mark.parametrize("algorithm", ["bfd", "ffd", "nf"])
@pytest.mark.parametrize("max_len", [2**28, 2**30])
def test_itemwise_memory_does_not_grow_with_max_len(algorithm: str, max_len: int) -> None:
    # Two sequences used to take 8.4 GB at 2**28 with ffd (tables over 0..max_len).
    out = _limited(
        f"""
        p = pack([5, 3, 2**27], {max_len}, algorithm={algorithm!r})
        assert p.num_packs == 1 and p.stats.lower_bound_l2 == 1, p.stats
        q = Plan.from_dict(p.to_dict())
        assert q.stats == p.stats
        """
    )
    assert out.startswith("OK"), out
    assert int(out.split()[1]) < 256, f"peak RSS {out.split()[1]} MiB for three sequences"


@linux_only
@pytest.mark.parametrize("algorithm", ["lpfhp", "spfhp"])
def test_histogram_algorithms_at_large_max_len_stay_small(algorithm: str) -> None:
    # Tables over 0..max_len are legitimate here, but about 20 bytes per token of max_len,
    # not the 112 (7.5 GB at 2**26, an abort under 4 GiB) they used to take.
    out = _limited(
        f"""
        p = pack(np.arange(1, 3001), 2**26, algorithm={algorithm!r})
        assert p.num_packs == 1 and p.stats.real_tokens == 3000 * 3001 // 2, p.stats
        """
    )
    assert out.startswith("OK"), out
    assert int(out.split()[1]) < 2500, f"peak RSS {out.split()[1]} MiB"


# ---------------------------------------------------------------- large max_len, same plans

scaled = st.lists(st.integers(1, 40), min_size=0, max_size=30)
SCALE = 1 << 20  # capacities up to 40 * 2**20: sparse tables (max_len >> number of items)


@settings(max_examples=150, deadline=None)
@given(scaled, st.integers(1, 40), st.one_of(st.none(), st.integers(1, 5)))
def test_large_max_len_matches_brute_force(
    lengths: list[int], cap: int, limit: int | None
) -> None:
    lengths = [min(x, cap) for x in lengths]
    big = [x * SCALE for x in lengths]
    for algorithm in ("bfd", "ffd", "nf"):
        plan = pack(big, cap * SCALE, algorithm=algorithm, max_seqs_per_pack=limit)
        if algorithm == "nf":
            assert packs_of(plan) == ref_nf(big, cap * SCALE, limit)
        else:
            assert packs_of(plan) == ref_fit(big, cap * SCALE, limit, best=algorithm == "bfd")
        # Bin packing bounds are scale-invariant: the sparse statistics agree with the dense.
        small = pack(lengths, cap, algorithm=algorithm, max_seqs_per_pack=limit).stats
        s = plan.stats
        assert (s.num_packs, s.lower_bound_sum, s.lower_bound_l2) == (
            small.num_packs,
            small.lower_bound_sum,
            small.lower_bound_l2,
        )
        loaded = Plan.from_dict(plan.to_dict()).stats
        assert loaded == s


# ---------------------------------------------------------------- overflow


def test_padding_a_huge_length_does_not_overflow() -> None:
    # round_up(2**63 - 1, 2) used to wrap negative, count the sequence as fitting and index
    # the histogram out of bounds.
    s = pack([2**63 - 1, 3], 16, overlong="truncate", pad_to_multiple_of=2).stats
    assert (s.num_segments, s.real_tokens, s.truncated_sequences) == (2, 19, 1)
    assert pack([2**63 - 1], 16, overlong="drop", pad_to_multiple_of=4).stats.dropped_tokens == (
        2**63 - 1
    )
    with pytest.raises(ordcore.InvalidArgumentError, match="at most 4294967294 segments"):
        pack([2**63 - 1, 3], 16, overlong="split", pad_to_multiple_of=2)


def test_huge_materialize_padding_is_a_clear_error() -> None:
    lens = [5, 3, 4, 6]
    plan = pack(lens, 512, algorithm="nf")
    tokens = [np.arange(n) for n in lens]
    # The padded total used to wrap to 0 and index an empty batch.
    with pytest.raises(ordcore.InvalidArgumentError, match="pad_to_multiple_of: the batch holds"):
        materialize(plan, tokens, pad_id=0, layout="flat", pad_to_multiple_of=2**62)
    with pytest.raises(ordcore.InvalidArgumentError, match="pad_to_multiple_of: pack 0 needs"):
        materialize(plan, tokens, pad_id=0, pad_to_multiple_of=2**62)


def test_positions_past_int64_are_a_clear_error() -> None:
    plan = pack([5, 3], 512)
    tokens = [np.arange(5), np.arange(3)]
    # Positions used to wrap to -2**63 silently.
    with pytest.raises(ordcore.InvalidArgumentError, match="position_ids_start"):
        materialize(plan, tokens, pad_id=0, position_ids_start=2**63 - 3)
    with pytest.raises(ordcore.InvalidArgumentError, match="position_ids_start"):
        materialize(plan, tokens, pad_id=0, layout="flat", position_ids_start=2**63 - 4)
    # The largest start that fits: flat positions restart per sequence and reach start + 4.
    batch = materialize(plan, tokens, pad_id=0, layout="flat", position_ids_start=2**63 - 5)
    assert int(batch.position_ids.max()) == 2**63 - 1
    assert int(batch.position_ids.min()) == 2**63 - 5


@linux_only
@pytest.mark.parametrize(
    ("max_len", "depth"),
    [(2**40, 3), (2**20, 2**20), (2**24, 2**62), (2**30, 1)],
)
def test_nnlshp_size_limit_is_checked_before_counting(max_len: int, depth: int) -> None:
    # Counting strategies took max_len x depth steps and 8 * max_len bytes first: an abort at
    # 2**40, hours at 2**20 x 2**20.
    out = _limited(
        f"pack([5, 3], {max_len}, algorithm='nnlshp', max_seqs_per_pack={depth})", timeout=60
    )
    assert out.startswith("RAISED InvalidArgumentError max_seqs_per_pack"), out


def test_huge_max_seqs_per_pack_is_unlimited() -> None:
    for algorithm in ("lpfhp", "spfhp", "bfd", "ffd", "nf"):
        s = pack([5, 3, 8], 16, algorithm=algorithm, max_seqs_per_pack=2**62).stats
        assert s.real_tokens == 16 and s.num_packs <= 2


# ---------------------------------------------------------------- Ctrl-C

_INTERRUPT = """
import os, signal, threading, time
import numpy as np
from ordcore.packing import materialize, pack
# Python's own Ctrl-C handler, also where the test runner was started with SIGINT ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
rng = np.random.default_rng(0)
{setup}
def call():
    {call}
t0 = time.perf_counter()
call()
full = time.perf_counter() - t0
delay = min(0.5, full / 4)
threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()
t0 = time.perf_counter()
try:
    call()
    outcome = "COMPLETED"
except KeyboardInterrupt:
    outcome = "INTERRUPTED"
late = time.perf_counter() - t0 - delay
call()  # the next call is not interrupted
print(outcome, full, late)
"""


def _interrupted(setup: str, call: str) -> tuple[str, float, float]:
    code = _INTERRUPT.format(setup=textwrap.dedent(setup), call=call)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    outcome, full, late = proc.stdout.split()
    return outcome, float(full), float(late)


@pytest.mark.skipif(sys.platform == "win32", reason="needs POSIX signals")
@pytest.mark.parametrize(
    ("setup", "call"),
    [
        ("lens = rng.integers(1, 513, size=8_000_000)", "pack(lens, 512, algorithm='bfd')"),
        ("lens = rng.integers(1, 513, size=8_000_000)", "pack(lens, 512, algorithm='ffd')"),
        (
            """
            lens = rng.integers(1, 1000, size=60_000)
            values = np.zeros(int(lens.sum()), dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(lens)])
            plan = pack(lens, 1024, algorithm='nf')
            """,
            "materialize(plan, (values, offsets), pad_id=0)",
        ),
    ],
    ids=["pack-bfd", "pack-ffd", "materialize"],
)
def test_ctrl_c_interrupts_long_calls(setup: str, call: str) -> None:
    outcome, full, late = _interrupted(setup, call)
    # Before: the call ran to its end and KeyboardInterrupt came after it (late ~ 3/4 full).
    assert outcome == "INTERRUPTED"
    assert late < min(1.0, full / 3), f"KeyboardInterrupt {late:.2f} s after SIGINT (call {full:.2f} s)"

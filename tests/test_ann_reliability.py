"""ordcore.ann reliability: ids, parameter ranges, errors, exactness on tiny and heavily
pruned indexes, file validation, Ctrl-C, memory limits and fork safety (issue: every input
either works or raises a clear error; never an abort, a hang or silent garbage)."""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import ordcore
from ordcore import ann
from ordcore.errors import (
    BQFitnessWarning,
    IndexFormatError,
    InvalidArgumentError,
    UnknownIdError,
)

from ann_header import set_header_crc


def _gauss(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _run_py(
    code: str, *, as_limit: int | None = None, timeout: float = 120, expect_rc: int = 0
) -> str:
    """Runs ``code`` (with ``np``, ``ann``, ``ordcore`` imported) in a fresh interpreter,
    optionally under ``RLIMIT_AS``; returns its stdout. An abort (SIGABRT), a hang or any
    other exit status than ``expect_rc`` fails the test with the child's output."""
    prelude = "import numpy as np, ordcore\nfrom ordcore import ann\n"
    if as_limit is not None:
        prelude += (
            "import resource\n"
            f"resource.setrlimit(resource.RLIMIT_AS, ({as_limit}, resource.RLIM_INFINITY))\n"
        )
    env = dict(os.environ, RAYON_NUM_THREADS="2")
    proc = subprocess.run(
        [sys.executable, "-c", prelude + code],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert proc.returncode == expect_rc, (
        f"exit status {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc.stdout


# --- automatic ids ---------------------------------------------------------------------


def test_automatic_ids_that_would_pass_int64_raise_before_anything_changes() -> None:
    x = _gauss(5, 8, 1)
    idx = ann.BQGraphIndex(8, metric="l2")
    idx.add(x[:2], ids=[0, 2**63 - 1])
    with pytest.raises(InvalidArgumentError, match=r"ids: automatic ids .* 2\*\*63 - 1"):
        idx.add(x[2:])
    assert len(idx) == 2
    assert idx.ids.tolist() == [0, 2**63 - 1]
    # The largest id itself is reachable by an automatic id.
    idx2 = ann.BQGraphIndex(8, metric="l2")
    idx2.add(x[:1], ids=[2**63 - 3])
    idx2.add(x[1:3])
    assert idx2.ids.tolist() == [2**63 - 3, 2**63 - 2, 2**63 - 1]
    with pytest.raises(InvalidArgumentError, match="ids"):
        idx2.add(x[3:4])
    idx2.add(x[:0])  # no rows: no ids needed


# --- parameter ranges are what the file holds ------------------------------------------


@pytest.mark.parametrize(
    ("kw", "arg"),
    [
        ({"L_build": 2**32 + 5}, "L_build"),
        ({"L_build": 2**32}, "L_build"),
        ({"L_build": 2**70}, "L_build"),
        ({"R": 4097}, "R"),
        ({"R": 2**70}, "R"),
        ({"seed": 2**64}, "seed"),
        ({"seed": -1}, "seed"),
    ],
)
def test_out_of_range_parameters_are_refused_at_construction(kw: dict[str, int], arg: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"^{arg}: "):
        ann.BQGraphIndex(8, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("dim", [0, 2**20 + 1, 2**70])
def test_out_of_range_dim_is_refused(dim: int) -> None:
    with pytest.raises(InvalidArgumentError, match="^dim: "):
        ann.BQGraphIndex(dim)


def test_extreme_accepted_parameters_survive_save_and_load(tmp_path: Path) -> None:
    # In a subprocess: the old code aborted here (a beam of 2**32 entries).
    out = _run_py(
        f"""
idx = ann.BQGraphIndex(8, metric="l2", R=4096, L_build=2**32 - 1, alpha=1e300, seed=2**64 - 1)
idx.add(np.random.default_rng(2).standard_normal((20, 8)).astype(np.float32))
idx.save({str(tmp_path / "x.ordann")!r})
back = ann.BQGraphIndex.load({str(tmp_path / "x.ordann")!r})
print(back.R, back.L_build, back.alpha, back.seed, len(back))
""",
    )
    assert out.split() == ["4096", str(2**32 - 1), "1e+300", str(2**64 - 1), "20"]


# --- unknown ids, file errors ----------------------------------------------------------


def test_remove_of_an_unknown_id_raises_unknown_id_error_and_removes_nothing() -> None:
    idx = ann.BQGraphIndex(8, metric="l2")
    idx.add(_gauss(10, 8, 3))
    with pytest.raises(UnknownIdError, match="ids: id 12345 is not in the index") as info:
        idx.remove([3, 12345])
    assert isinstance(info.value, KeyError)
    assert isinstance(info.value, InvalidArgumentError)
    assert ordcore.UnknownIdError is UnknownIdError
    assert len(idx) == 10 and 3 in idx
    with pytest.raises(InvalidArgumentError, match="appears twice"):
        idx.remove([3, 3])
    assert len(idx) == 10


def test_load_raises_the_os_error_class_with_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "missing.ordann"
    with pytest.raises(FileNotFoundError) as info:
        ann.BQGraphIndex.load(missing)
    assert info.value.filename == str(missing) and info.value.errno == errno.ENOENT
    assert str(missing) in str(info.value)
    with pytest.raises(IsADirectoryError) as info2:
        ann.BQGraphIndex.load(tmp_path)
    assert info2.value.filename == str(tmp_path) and info2.value.errno == errno.EISDIR


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="file permissions are not enforced for root (or on this OS)",
)
def test_load_of_an_unreadable_file_raises_permission_error(tmp_path: Path) -> None:
    p = tmp_path / "x.ordann"
    idx = ann.BQGraphIndex(8)
    idx.add(_gauss(10, 8, 4))
    idx.save(p)
    p.chmod(0)
    try:
        with pytest.raises(PermissionError) as info:
            ann.BQGraphIndex.load(p)
        assert info.value.filename == str(p)
    finally:
        p.chmod(0o600)


def test_save_follows_links_refuses_devices_and_keeps_errno(tmp_path: Path) -> None:
    """Found by a fresh-user pass: save renamed its file over a symbolic link and over a
    device node, wrote 'dir/newfile/' as 'dir/newfile', and OS errors outside a few classes
    lost errno and filename."""
    idx = ann.BQGraphIndex(8)
    idx.add(_gauss(30, 8, 5))
    real = tmp_path / "real.ordann"
    link = tmp_path / "link.ordann"
    link.symlink_to(real)
    idx.save(link)
    assert link.is_symlink() and real.is_file()
    assert len(ann.BQGraphIndex.load(real)) == 30
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ordcore.InvalidArgumentError, match="not a regular file"):
        idx.save(fifo)
    assert fifo.exists() and not fifo.is_file()
    with pytest.raises(ordcore.InvalidArgumentError, match="ends with a path separator"):
        idx.save(str(tmp_path / "newfile") + os.sep)
    assert not (tmp_path / "newfile").exists()
    long_name = tmp_path / ("x" * 300)
    with pytest.raises(OSError) as info:
        idx.save(long_name)
    assert info.value.errno == errno.ENAMETOOLONG and info.value.filename == str(long_name)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.ordann", "pipe", "real.ordann"]


def test_flag_arguments_must_be_bools_and_alpha_a_number() -> None:
    idx = ann.BQGraphIndex(8)
    idx.add(_gauss(30, 8, 6))
    q = _gauss(2, 8, 7)
    with pytest.raises(ordcore.InvalidArgumentError, match="rerank: must be a bool"):
        idx.search(q, rerank="no")  # type: ignore[arg-type]
    with pytest.raises(ordcore.InvalidArgumentError, match="progress: must be a bool"):
        idx.add(_gauss(3, 8, 8), progress="yes")  # type: ignore[arg-type]
    assert len(idx) == 30
    with pytest.raises(ordcore.InvalidArgumentError, match="mmap: must be a bool"):
        ann.BQGraphIndex.load("unused.ordann", mmap="no")  # type: ignore[arg-type]
    with pytest.raises(ordcore.InvalidArgumentError, match="alpha"):
        ann.BQGraphIndex(8, alpha=True)  # type: ignore[arg-type]
    assert ann.BQGraphIndex(8, alpha=np.float32(1.5)).alpha == 1.5
    for bits in (True, 2.0):
        with pytest.raises(ordcore.InvalidArgumentError, match="bits: must be 1 or 2"):
            ann.encode(q, bits=bits)  # type: ignore[arg-type]


def test_thousands_of_copies_of_one_row_do_not_trap_the_search() -> None:
    """Found by a fresh-user pass: with row 0 copied 4000 times among 500 rows, every
    search returned a copy (recall 0), because the copies' lists, the entry's among them,
    held nothing but copies."""
    base = _gauss(500, 32, 9)
    x = np.vstack([base, np.repeat(base[:1], 4000, axis=0)])
    idx = ann.BQGraphIndex(32, metric="l2", bits=2)
    with warnings.catch_warnings():  # Gaussian rows are a poor fit for 2-bit codes; fine here
        warnings.simplefilter("ignore", ordcore.BQFitnessWarning)
        idx.add(x, num_threads=1)
    ids, d = idx.search(base[1:101], k=1)
    assert (ids[:, 0] == np.arange(1, 101)).mean() >= 0.95
    # The copies are still found: k nearest to row 0 are all at distance 0.
    ids, d = idx.search(base[:1], k=20, ef_search=64)
    assert np.all(d[0] == 0) and len(set(ids[0].tolist())) == 20


def test_load_permission_error_mapping_without_root() -> None:
    # Root bypasses file modes, so check the mapping itself on the error the core raises.
    err = ann._os_error(PermissionError("x.ordann: Permission denied (os error 13)"), "x.ordann")
    assert isinstance(err, PermissionError)
    assert err.errno == errno.EACCES and err.filename == "x.ordann"


# --- exactness on tiny, low-dimensional and heavily pruned indexes ----------------------


def _exact_ids(x: np.ndarray, q: np.ndarray, k: int, metric: str) -> np.ndarray:
    return ann.exact_search(x, q, k, metric)[0]  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tiny_one_dimensional_index_finds_every_vector_itself(seed: int) -> None:
    x = np.random.default_rng(seed).standard_normal((33, 1)).astype(np.float32)
    idx = ann.BQGraphIndex(1, metric="l2")
    idx.add(x)
    for ef in (33, 64, 1000):
        ids, _ = idx.search(x, k=1, ef_search=ef)
        assert (ids[:, 0] == np.arange(33)).all(), ef
        # ef_search >= len(index): exact, ties by the smaller id (brute force's order).
        ids5, d5 = idx.search(x, k=5, ef_search=ef)
        ref_ids, ref_d = ann.exact_search(x, x, 5, "l2")
        np.testing.assert_array_equal(ids5, ref_ids)
        np.testing.assert_allclose(d5, ref_d, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize(("n", "d"), [(33, 1), (200, 1), (500, 2), (2000, 8)])
def test_first_result_does_not_depend_on_k_at_fixed_ef_search(n: int, d: int) -> None:
    x = np.random.default_rng(7).standard_normal((n, d)).astype(np.float32)
    q = np.random.default_rng(8).standard_normal((50, d)).astype(np.float32)
    idx = ann.BQGraphIndex(d, metric="l2", R=8, L_build=16)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BQFitnessWarning)  # random data codes poorly
        idx.add(x)
    for ef in (16, 40):
        first = idx.search(q, k=1, ef_search=ef)[0][:, 0]
        for k in (2, 5, min(ef, n)):
            ids, dist = idx.search(q, k=k, ef_search=ef)
            np.testing.assert_array_equal(ids[:, 0], first)
            assert (ids >= 0).all(), "fewer than k results although len(index) >= k"


def test_remove_then_add_on_a_three_point_index_returns_three_results() -> None:
    # 21 of these 200 cases returned a padded [a, b, -1] before.
    for seed in range(200):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((3, 1)).astype(np.float32)
        idx = ann.BQGraphIndex(1, metric="l2")
        idx.add(x)
        idx.remove([2])
        new = rng.standard_normal((1, 1)).astype(np.float32)
        idx.add(new)
        q = rng.standard_normal((1, 1)).astype(np.float32)
        ids, dist = idx.search(q, k=3)
        live = np.concatenate([x[:2], new])
        ref = np.array([0, 1, 3])[_exact_ids(live, q, 3, "l2")]
        assert ids.tolist() == ref.tolist(), seed
        assert np.isfinite(dist).all()
        ids5, _ = idx.search(q, k=5)
        assert ids5[0, 3:].tolist() == [-1, -1] and sorted(ids5[0, :3].tolist()) == [0, 1, 3]


@pytest.mark.parametrize("rerank", [True, False])
def test_heavy_removal_still_returns_k_results(rerank: bool) -> None:
    x = _gauss(5000, 32, 11)
    q = _gauss(200, 32, 12)
    idx = ann.BQGraphIndex(32, metric="l2", R=16, L_build=32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BQFitnessWarning)  # random data codes poorly
        idx.add(x)
    rng = np.random.default_rng(13)
    gone = rng.choice(5000, size=4750, replace=False)
    idx.remove(gone)
    live = np.setdiff1d(np.arange(5000), gone)
    ids, dist = idx.search(q, k=10, rerank=rerank)
    assert (ids >= 0).all(), f"{int((ids < 0).sum())} of {ids.size} slots padded"
    assert np.isin(ids, live).all()
    assert all(len(set(row)) == 10 for row in ids.tolist())
    if rerank:
        # The live set is small: what the graph cannot deliver comes from an exact scan, so
        # recall against exact search over the live vectors is high.
        truth = live[_exact_ids(x[live], q, 10, "l2")]
        assert ann.recall_at_k(ids, truth) >= 0.9
    # k >= live: every live vector, once.
    ids_all, _ = idx.search(q[:3], k=300, rerank=rerank)
    for row in ids_all:
        assert sorted(row[:250].tolist()) == live.tolist() and (row[250:] == -1).all()


# --- Ctrl-C ------------------------------------------------------------------------------

_INTERRUPT_CHILD = r"""
import json, os, signal, tempfile, threading, time

rng = np.random.default_rng(0)
X = rng.standard_normal((40000, 32)).astype(np.float32)
Q = rng.standard_normal((200000, 32)).astype(np.float32)
tmp = tempfile.mkdtemp()

def saved(idx):
    p = os.path.join(tmp, "s.ordann")
    idx.save(p)
    with open(p, "rb") as f:
        return f.read()

def interrupted(call, delay=0.5):
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    t0 = time.perf_counter()
    timer.start()
    try:
        try:
            call()
        finally:
            timer.cancel()
    except KeyboardInterrupt:
        return {"interrupted": True, "after_signal": time.perf_counter() - t0 - delay}
    return {"interrupted": False, "after_signal": time.perf_counter() - t0 - delay}

out = {}
fresh = ann.BQGraphIndex(32, metric="l2", R=32, L_build=64)
out["add"] = interrupted(lambda: fresh.add(X))
out["add"]["unchanged"] = len(fresh) == 0 and fresh._inner.n_nodes() == 0
fresh2 = ann.BQGraphIndex(32, metric="l2", R=32, L_build=64, rotation="hadamard")
out["add_progress"] = interrupted(lambda: fresh2.add(X, progress=True))
out["add_progress"]["unchanged"] = len(fresh2) == 0 and fresh2._inner.n_nodes() == 0

base = ann.BQGraphIndex(32, metric="l2", R=32, L_build=64)
base.add(X[:20000])
before = saved(base)
res = base.search(Q[:50], 10)
out["add_more"] = interrupted(lambda: base.add(X[20000:]))
out["add_more"]["unchanged"] = (
    saved(base) == before and len(base) == 20000
    and all((a == b).all() for a, b in zip(base.search(Q[:50], 10), res))
)
base.add(X[20000:])  # still usable: an add after the interrupted one works
base.remove(np.arange(0, 40000, 2))
before = saved(base)
out["compact"] = interrupted(lambda: base.compact(), delay=0.3)
out["compact"]["unchanged"] = saved(base) == before and len(base) == 20000
out["search"] = interrupted(lambda: base.search(Q, 10, ef_search=256))
out["exact_search"] = interrupted(lambda: ann.exact_search(X, Q[:40000], 10, "l2"))
out["later_call_works"] = len(base.search(Q[:5], 3)[0]) == 5
print(json.dumps(out))
"""


def test_ctrl_c_stops_long_calls_within_a_second_and_leaves_the_index_unchanged() -> None:
    pytest.importorskip("tqdm")
    import json

    out = json.loads(_run_py(_INTERRUPT_CHILD, timeout=600).strip().splitlines()[-1])
    assert out.pop("later_call_works")
    for name, r in out.items():
        assert r["interrupted"], f"{name}: finished instead of raising KeyboardInterrupt ({r})"
        assert r["after_signal"] < 1.5, f"{name}: took {r['after_signal']:.2f} s after SIGINT"
        assert r.get("unchanged", True), f"{name}: the index changed"


# --- allocation: refused with an exception, never an abort ------------------------------

_GIB = 2**30


def _craft_header(path: Path, patch: dict[int, bytes]) -> None:
    """Overwrites header bytes of an index file at the given offsets and recomputes the
    header checksum (bytes 84..88, `ann_header.header_crc`)."""
    b = bytearray(path.read_bytes())
    for off, val in patch.items():
        b[off : off + len(val)] = val
    set_header_crc(b)
    path.write_bytes(bytes(b))


def _with_checksums(b: bytearray) -> bytes:
    """``b`` (an index file) with both CRC-32s recomputed: payload (bytes 80..84) and header
    (bytes 84..88, `ann_header.header_crc`)."""
    b[80:84] = struct.pack("<I", zlib.crc32(bytes(b[128:])))
    set_header_crc(b)
    return bytes(b)


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize(
    ("metric", "value", "reason"),
    [
        ("l2", float("nan"), "non-finite"),
        ("l2", float("inf"), "non-finite"),
        ("ip", 3e38, "squared norm"),
        ("cosine", float("nan"), "non-finite"),
    ],
)
def test_load_refuses_stored_vectors_that_add_would_refuse(
    tmp_path: Path, mmap: bool, metric: str, value: float, reason: str
) -> None:
    # 64 rows x 8 dims: the vectors (2048 bytes, a multiple of 64) end the file.
    x = _gauss(64, 8, 31)
    idx = ann.BQGraphIndex(8, metric=metric, bits=2)  # type: ignore[arg-type]
    idx.add(x)
    p = tmp_path / "x.ordann"
    idx.save(p)
    b = bytearray(p.read_bytes())
    off = len(b) - 64 * 8 * 4 + (5 * 8 + 3) * 4
    b[off : off + 4] = struct.pack("<f", value)
    p.write_bytes(_with_checksums(b))
    with pytest.raises(IndexFormatError, match=f"x.ordann: invalid stored vector: row 5 .*{reason}"):
        ann.BQGraphIndex.load(p, mmap=mmap)


def test_load_refuses_a_zero_vector_under_cosine(tmp_path: Path) -> None:
    idx = ann.BQGraphIndex(8, metric="cosine", bits=2)
    idx.add(_gauss(64, 8, 32))
    p = tmp_path / "x.ordann"
    idx.save(p)
    b = bytearray(p.read_bytes())
    off = len(b) - 64 * 8 * 4 + 7 * 8 * 4
    b[off : off + 32] = bytes(32)
    p.write_bytes(_with_checksums(b))
    with pytest.raises(IndexFormatError, match="row 7 is a zero vector"):
        ann.BQGraphIndex.load(p, mmap=True)


def test_a_file_with_the_largest_l_build_loads_and_adds_under_an_address_space_limit(
    tmp_path: Path,
) -> None:
    p = tmp_path / "x.ordann"
    idx = ann.BQGraphIndex(8, metric="l2", R=8, L_build=16)
    idx.add(_gauss(50, 8, 21))
    idx.save(p)
    _craft_header(p, {32: struct.pack("<I", 2**32 - 1)})
    out = _run_py(
        f"""
idx = ann.BQGraphIndex.load({str(p)!r})
assert idx.L_build == 2**32 - 1
idx.add(np.random.default_rng(3).standard_normal((30, 8)).astype(np.float32))
ids, d = idx.search(np.random.default_rng(4).standard_normal((5, 8)).astype(np.float32), 3)
print(len(idx), int((ids >= 0).sum()))
""",
        as_limit=4 * _GIB,
    )
    assert out.split() == ["80", "15"]


@pytest.mark.parametrize(
    ("code", "arg"),
    [
        (
            "ann.BQGraphIndex(8, metric='l2', R=4096).add("
            "np.zeros((300000, 8), np.float32) + np.arange(8, dtype=np.float32))",
            "X",
        ),
        (
            "i = ann.BQGraphIndex(8); i.add(np.ones((10, 8), np.float32));"
            " i.search(np.ones((4, 8), np.float32), k=2**36)",
            "k",
        ),
        ("ann.exact_search(np.ones((10, 8), np.float32), np.ones((2, 8), np.float32), 2**36)", "k"),
    ],
)
def test_calls_that_cannot_fit_raise_memory_error_under_rlimit_as(code: str, arg: str) -> None:
    out = _run_py(
        f"""
try:
    {code}
    print("no error")
except (MemoryError, ordcore.InvalidArgumentError) as e:
    print(type(e).__name__, str(e).split(":")[0])
""",
        as_limit=4 * _GIB,
    )
    assert out.split()[1:] == [arg], out
    assert out.split()[0] in ("MemoryError", "InvalidArgumentError")


def test_l_build_two_to_the_32_is_refused_before_any_allocation() -> None:
    out = _run_py(
        """
try:
    ann.BQGraphIndex(8, L_build=2**32).add(np.ones((10, 8), np.float32))
except ordcore.InvalidArgumentError as e:
    print(str(e).split(":")[0])
""",
        as_limit=4 * _GIB,
    )
    assert out.strip() == "L_build"


# --- fork while another thread uses the index -------------------------------------------

_FORK_CHILD = r"""
import os, threading, time, warnings
warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads running

X = np.random.default_rng(0).standard_normal((4000, 32)).astype(np.float32)
idx = ann.BQGraphIndex(32, metric="l2", R=32, L_build=64)
# The build's progress callback (called with the index's write lock held) pauses it, so the
# fork certainly happens while another thread holds the lock.
started, resume = threading.Event(), threading.Event()
def progress(done, total):
    started.set()
    resume.wait()
builder = threading.Thread(target=idx._inner.add, args=(X, None, None, progress))
builder.start()
started.wait()
pid = os.fork()
if pid == 0:
    import signal
    signal.alarm(20)  # a hang ends the child (SIGALRM) instead of outliving the test
    try:
        len(idx)
        os._exit(3)
    except RuntimeError as e:
        os._exit(0 if "forked while another thread was using this index" in str(e) else 4)
    except BaseException:
        os._exit(5)
_, status = os.waitpid(pid, 0)
resume.set()
builder.join()
# A fresh index in a child of an idle parent works normally.
small = ann.BQGraphIndex(8)
small.add(np.random.default_rng(1).standard_normal((50, 8)).astype(np.float32))
pid2 = os.fork()
if pid2 == 0:
    os._exit(0 if len(small) == 50 and len(small.search(np.ones((1, 8), np.float32), 3)[0]) == 1 else 6)
_, status2 = os.waitpid(pid2, 0)
print(os.waitstatus_to_exitcode(status), os.waitstatus_to_exitcode(status2), len(idx))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is not available")
def test_a_child_forked_during_a_build_fails_fast_instead_of_hanging() -> None:
    out = _run_py(_FORK_CHILD, timeout=90)
    assert out.split() == ["0", "0", "4000"], out


def test_float16_store_rounds_tiny_and_subnormal_values_as_numpy_does() -> None:
    """The documented contract of ``rerank_dtype="float16"``: round to nearest even as
    NumPy's ``astype``, subnormals kept, values below about 3e-8 to 0, overflow refused."""
    row = np.array([1e-8, 2.9e-8, 3.1e-8, 1e-5, 6e-5, 0.5, -1e-7, 1.0], np.float32)
    x = row * np.array([[1.0], [2.0], [3.0]], np.float32)
    idx = ann.BQGraphIndex(8, metric="l2", rerank_dtype="float16")
    with warnings.catch_warnings():  # three rows are too few for the fitness estimate
        warnings.simplefilter("ignore", ordcore.BQFitnessWarning)
        idx.add(x)
    stored = idx.get(idx.ids)
    np.testing.assert_array_equal(stored, x.astype(np.float16).astype(np.float32))
    assert stored[0, 0] == 0 and stored[0, 2] == 2.0**-24
    with pytest.raises(ordcore.InvalidArgumentError):
        idx.add(np.full((1, 8), 7e4, np.float32))
    assert len(idx) == 3

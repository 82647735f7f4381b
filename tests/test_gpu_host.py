"""The GPU kernels' arithmetic, checked on the CPU (no GPU, no CuPy needed).

The per-element device functions of ``python/ordcore/gpu/kernels/*.cu`` are compiled as
plain C++ (tests/gpu_host_shim.cpp, ``ORDCORE_HOST_TEST``) and compared with the peers and
NumPy references the GPU results must match bit for bit: hilbertcurve (Skilling), pymorton,
the counter-based generator of rng.rs (``ordcore.gpu.reference``), NumPy's float16.
What runs only on a device (launch geometry, shuffles, shared memory) is covered by the
``gpu``-marked tests in test_gpu.py.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hilbertcurve.hilbertcurve import HilbertCurve
import pymorton

from ordcore.gpu import reference

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "python" / "ordcore" / "gpu" / "kernels"

P_U64 = ctypes.POINTER(ctypes.c_uint64)


def _ptr(a: np.ndarray, ctype: type = ctypes.c_uint64) -> ctypes._Pointer:  # type: ignore[type-arg]
    return a.ctypes.data_as(ctypes.POINTER(ctype))


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cxx = shutil.which("g++") or shutil.which("clang++") or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++/clang++) to build the host shim of the kernels")
    out = tmp_path_factory.mktemp("shim") / "gpu_host_shim.so"
    cmd = [cxx, "-O1", "-std=c++17", "-shared", "-fPIC", "-Wall", "-Wno-unknown-pragmas", "-ffp-contract=off",
           "-Werror", f"-I{KERNELS}", "-o", str(out), str(ROOT / "tests" / "gpu_host_shim.cpp")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return ctypes.CDLL(str(out))


def _hilbert(shim: ctypes.CDLL, pts: npt.NDArray[np.uint64], nbits: int, narrow: bool) -> npt.NDArray[np.uint64]:
    pts = np.ascontiguousarray(pts, dtype=np.uint64)
    out = np.zeros(len(pts), dtype=np.uint64)
    shim.shim_hilbert_encode(_ptr(pts), ctypes.c_longlong(len(pts)), pts.shape[1], nbits, int(narrow), _ptr(out))
    return out


def _hilbert_dec(shim: ctypes.CDLL, h: npt.NDArray[np.uint64], d: int, nbits: int, narrow: bool) -> npt.NDArray[np.uint64]:
    h = np.ascontiguousarray(h, dtype=np.uint64)
    out = np.zeros((len(h), d), dtype=np.uint64)
    shim.shim_hilbert_decode(_ptr(h), ctypes.c_longlong(len(h)), d, nbits, int(narrow), _ptr(out))
    return out


@pytest.mark.parametrize(
    ("d", "nbits"), [(2, 1), (2, 3), (2, 16), (2, 32), (3, 5), (3, 12), (3, 21), (4, 16), (5, 12), (8, 8), (1, 20), (64, 1)]
)
def test_hilbert_matches_hilbertcurve(shim: ctypes.CDLL, d: int, nbits: int) -> None:
    rng = np.random.default_rng(d * 100 + nbits)
    pts = rng.integers(0, 1 << nbits, size=(300, d), dtype=np.uint64)
    pts[0] = (1 << nbits) - 1  # all-ones corner
    pts[1] = 0
    hc = HilbertCurve(p=nbits, n=d)
    want = np.array([int(v) for v in hc.distances_from_points(pts.tolist())], dtype=np.uint64)
    narrow_ok = [True, False] if nbits <= 32 else [False]
    for narrow in narrow_ok:
        got = _hilbert(shim, pts, nbits, narrow)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(_hilbert_dec(shim, got, d, nbits, narrow), pts)


def test_hilbert_reference_values_and_64_bit_boundary(shim: ctypes.CDLL) -> None:
    # case S7 (HilbertCurve(p=12, n=3) reference points) and S6 (2-D nbits 32 at (2^32-1, 0))
    got = _hilbert(shim, np.array([[999, 999, 999], [479, 724, 495]], dtype=np.uint64), 12, True)
    assert got.tolist() == [766935405, 975605184]
    got = _hilbert(shim, np.array([[2**32 - 1, 0]], dtype=np.uint64), 32, True)
    assert int(got[0]) == 2**64 - 1


# pymorton itself is exact only up to 16 bits (2-D) / 10 bits (3-D); wider codes are
# checked against the bit-by-bit definition below.
@pytest.mark.parametrize(("d", "nbits"), [(2, 8), (2, 16), (3, 5), (3, 10)])
def test_morton_matches_pymorton(shim: ctypes.CDLL, d: int, nbits: int) -> None:
    rng = np.random.default_rng(nbits)
    pts = rng.integers(0, 1 << nbits, size=(300, d), dtype=np.uint64)
    pts[0] = (1 << nbits) - 1
    pts[1] = [16] * d  # case S2
    out = np.zeros(len(pts), dtype=np.uint64)
    shim.shim_morton_encode(_ptr(pts), ctypes.c_longlong(len(pts)), d, nbits, 0, _ptr(out))
    inter = pymorton.interleave2 if d == 2 else pymorton.interleave3
    want = np.array([inter(*map(int, p)) for p in pts], dtype=np.uint64)
    np.testing.assert_array_equal(out, want)
    back = np.zeros_like(pts)
    shim.shim_morton_decode(_ptr(out), ctypes.c_longlong(len(out)), d, nbits, 0, _ptr(back))
    np.testing.assert_array_equal(back, pts)


@pytest.mark.parametrize(("d", "nbits"), [(2, 21), (3, 21), (4, 16), (5, 7), (1, 64), (7, 9)])
@pytest.mark.parametrize("msb_first", [0, 1])
def test_morton_nd_bit_layout(shim: ctypes.CDLL, d: int, nbits: int, msb_first: int) -> None:
    rng = np.random.default_rng(d + nbits)
    hi = np.uint64((1 << nbits) - 1) if nbits < 64 else np.uint64(2**64 - 1)
    pts = rng.integers(0, hi, size=(100, d), dtype=np.uint64, endpoint=True)
    out = np.zeros(len(pts), dtype=np.uint64)
    shim.shim_morton_encode(_ptr(pts), ctypes.c_longlong(len(pts)), d, nbits, msb_first, _ptr(out))
    want = []
    for p in pts.tolist():
        h = 0
        for b in range(nbits):
            for i in range(d):
                slot = d - 1 - i if msb_first else i
                h |= ((p[i] >> b) & 1) << (b * d + slot)
        want.append(h)
    np.testing.assert_array_equal(out, np.array(want, dtype=np.uint64))
    back = np.zeros_like(pts)
    shim.shim_morton_decode(_ptr(out), ctypes.c_longlong(len(out)), d, nbits, msb_first, _ptr(back))
    np.testing.assert_array_equal(back, pts)


def test_morton_s1_no_16_bit_truncation(shim: ctypes.CDLL) -> None:
    pts = np.array([[65536, 0], [2**20 - 1, 2**16 - 1], [0, 0]], dtype=np.uint64)
    out = np.zeros(3, dtype=np.uint64)
    shim.shim_morton_encode(_ptr(pts), ctypes.c_longlong(3), 2, 21, 0, _ptr(out))
    assert int(out[0]) == 1 << 32 and len(set(out.tolist())) == 3


def test_coordinate_range_check(shim: ctypes.CDLL) -> None:
    # case S4: 2-D nbits 3 rejects 8 and -1
    ok = [shim.shim_coord_ok_i64(ctypes.c_longlong(v), 3) for v in (-1, 0, 7, 8)]
    assert ok == [0, 1, 1, 0]
    assert shim.shim_coord_ok_i64(ctypes.c_longlong(2**62), 64) == 1


def test_counter_generator_matches_numpy_reference(shim: ctypes.CDLL) -> None:
    assert int(reference.mix64(reference.GOLDEN)[0]) == 0xE220A8397B1DCDAF  # rng.rs test value
    for seed, stream in [(0, 0), (7, 3), (2**64 - 1, 12345), (42, 2**63)]:
        out = np.zeros(1000, dtype=np.uint64)
        shim.shim_counter_u64(ctypes.c_uint64(seed), ctypes.c_uint64(stream), ctypes.c_longlong(1000), _ptr(out))
        np.testing.assert_array_equal(out, reference.counter_u64(seed, stream, np.arange(1000)))


def test_fused_fwht_signs_match_reference(shim: ctypes.CDLL) -> None:
    for seed, blocks, n in [(0, 1, 64), (123, 5, 160), (2**40 + 1, 3, 4096)]:
        out = np.zeros((blocks, n), dtype=np.int8)
        shim.shim_fused_signs(ctypes.c_uint64(seed), ctypes.c_longlong(blocks), ctypes.c_longlong(n), _ptr(out, ctypes.c_int8))
        want = reference.random_signs(seed, blocks, n)
        np.testing.assert_array_equal(out, want)
        assert 0.4 < (want < 0).mean() < 0.6


def test_half_and_bfloat16_conversions(shim: ctypes.CDLL) -> None:
    h = np.arange(2**16, dtype=np.uint16)
    f = np.zeros(2**16, dtype=np.float32)
    shim.shim_f16_to_f32(_ptr(h, ctypes.c_uint16), ctypes.c_longlong(len(h)), _ptr(f, ctypes.c_float))
    want = h.view(np.float16).astype(np.float32)
    np.testing.assert_array_equal(np.isnan(f), np.isnan(want))
    fin = ~np.isnan(want)
    np.testing.assert_array_equal(f[fin].view(np.uint32), want[fin].view(np.uint32))
    rng = np.random.default_rng(0)
    vals = np.concatenate([
        rng.standard_normal(50000).astype(np.float32) * np.float32(10.0) ** rng.integers(-9, 6, 50000).astype(np.float32),
        np.array([0.0, -0.0, 65504.0, 65520.0, 1e-8, 2.0**-24, 2.0**-25, 3 * 2.0**-26, np.inf, -np.inf], dtype=np.float32),
    ]).astype(np.float32)
    out = np.zeros(len(vals), dtype=np.uint16)
    shim.shim_f32_to_f16(_ptr(vals, ctypes.c_float), ctypes.c_longlong(len(vals)), _ptr(out, ctypes.c_uint16))
    with np.errstate(over="ignore"):
        want16 = vals.astype(np.float16)
    np.testing.assert_array_equal(out, want16.view(np.uint16))
    # bfloat16 round to nearest even, and back
    out = np.zeros(len(vals), dtype=np.uint16)
    shim.shim_f32_to_bf16(_ptr(vals, ctypes.c_float), ctypes.c_longlong(len(vals)), _ptr(out, ctypes.c_uint16))
    u = vals.view(np.uint32).astype(np.uint64)
    want_bf = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    np.testing.assert_array_equal(out, want_bf)
    back = np.zeros(len(vals), dtype=np.float32)
    shim.shim_bf16_to_f32(_ptr(out, ctypes.c_uint16), ctypes.c_longlong(len(out)), _ptr(back, ctypes.c_float))
    np.testing.assert_array_equal(back.view(np.uint32), out.astype(np.uint32) << 16)


def test_register_fwht_is_sylvester(shim: ctypes.CDLL) -> None:
    from scipy.linalg import hadamard

    x = np.random.default_rng(1).standard_normal(16).astype(np.float32)
    v = x.copy()
    shim.shim_fwht16(_ptr(v, ctypes.c_float))
    np.testing.assert_allclose(v, x.astype(np.float64) @ hadamard(16), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("dim", "bits"), [(64, 1), (70, 1), (64, 2), (70, 2), (1, 2), (768, 2), (1008, 2)])
def test_code_distance_matches_reference(shim: ctypes.CDLL, dim: int, bits: int) -> None:
    rng = np.random.default_rng(dim * bits)
    w = (dim + 63) // 64

    def random_codes(n: int) -> npt.NDArray[np.uint64]:
        planes = rng.integers(0, 2, size=(n, bits, dim), dtype=np.uint64)
        codes = np.zeros((n, bits * w), dtype=np.uint64)
        for p in range(bits):
            for i in range(dim):
                codes[:, p * w + i // 64] |= planes[:, p, i] << np.uint64(i % 64)
        return codes

    a, b = random_codes(20), random_codes(30)
    out = np.zeros((20, 30), dtype=np.int32)
    shim.shim_code_distances(_ptr(a), ctypes.c_longlong(20), _ptr(b), ctypes.c_longlong(30), w, dim, bits, _ptr(out, ctypes.c_int))
    want = reference.code_distances(a, b, dim, bits)
    np.testing.assert_array_equal(out, want)
    # self-distance of a 2-bit code: sum of 4 - m^2 = 3 per weak and 0 per strong coordinate
    if bits == 2:
        self_d = reference.code_distances(a[:1], a[:1], dim, bits)[0, 0]
        strong = sum(bin(int(v)).count("1") for v in a[0, w:])
        assert self_d == 3 * (dim - strong)


def _random_codes(rng: np.random.Generator, n: int, dim: int, bits: int) -> npt.NDArray[np.uint64]:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return _encode_host(x, bits)


def _encode_host(x: npt.NDArray[np.float32], bits: int) -> npt.NDArray[np.uint64]:
    n, dim = x.shape
    w = (dim + 63) // 64
    codes = np.zeros((n, bits * w), dtype=np.uint64)
    sign = x > 0
    tau = np.cumsum(np.abs(x).astype(np.float64), axis=1)[:, -1:] / dim  # index order, as codes.rs
    strong = np.abs(x).astype(np.float64) > tau
    for i in range(dim):
        codes[sign[:, i], i // 64] |= np.uint64(1) << np.uint64(i % 64)
        if bits == 2:
            codes[strong[:, i], w + i // 64] |= np.uint64(1) << np.uint64(i % 64)
    return codes


@pytest.mark.parametrize(
    ("n", "dim", "bits", "k", "cap", "nth"),
    [(500, 96, 2, 10, 64, 32), (500, 96, 1, 10, 64, 7), (3, 64, 2, 5, 8, 4), (0, 64, 2, 4, 4, 4),
     (300, 8, 1, 50, 64, 16)],
)
def test_code_topk_phases_match_sorted_distances(
    shim: ctypes.CDLL, n: int, dim: int, bits: int, k: int, cap: int, nth: int
) -> None:
    rng = np.random.default_rng(n + dim + k)
    codes = _random_codes(rng, n, dim, bits) if n else np.zeros((0, bits * ((dim + 63) // 64)), dtype=np.uint64)
    q = _random_codes(rng, 6, dim, bits)
    w = (dim + 63) // 64
    bins = (8 * dim + 1) if bits == 2 else dim + 1
    keys = np.zeros((6, k), dtype=np.uint64)
    ovf = np.zeros(6, dtype=np.int32)
    shim.shim_ann_code_topk(
        _ptr(q), ctypes.c_longlong(6), _ptr(codes), ctypes.c_longlong(n), w, dim, bits, k, bins,
        cap, nth, _ptr(keys), _ptr(ovf, ctypes.c_int),
    )
    dist = reference.code_distances(q, codes, dim, bits) if n else np.zeros((6, 0), dtype=np.int64)
    for i in range(6):
        order = sorted(range(n), key=lambda j: (dist[i, j], j))[:k]
        if ovf[i]:
            # only when more than cap rows tie at or below the threshold
            thr = dist[i, order[-1]]
            assert (dist[i] <= thr).sum() > cap
            continue
        ids = [int(v & 0xFFFFFFFF) if v != 2**64 - 1 else -1 for v in keys[i].tolist()]
        assert ids == order + [-1] * (k - len(order))
        ds = [int(v >> 32) for v in keys[i].tolist()[: len(order)]]
        assert ds == [int(dist[i, j]) for j in order]
    if (n, bits) == (300, 1):
        assert ovf.any()  # 300 codes of 8 bits tie massively: the overflow path is exercised


@pytest.mark.parametrize(("dim", "bits"), [(64, 2), (70, 2), (768, 1), (1007, 2)])
def test_ann_normalize_and_encode_rows(shim: ctypes.CDLL, dim: int, bits: int) -> None:
    rng = np.random.default_rng(dim)
    x = rng.standard_normal((40, dim)).astype(np.float32)
    x[0, :5] = 0.0
    x[1] = np.abs(x[1])
    xn = np.zeros_like(x)
    shim.shim_ann_normalize(_ptr(x, ctypes.c_float), ctypes.c_longlong(40), dim, _ptr(xn, ctypes.c_float))
    norm = np.sqrt(np.array([sum(float(v) * float(v) for v in row) for row in x.astype(np.float64)]))
    want = (x.astype(np.float64) / norm[:, None]).astype(np.float32)
    np.testing.assert_array_equal(xn, want)
    w = (dim + 63) // 64
    codes = np.zeros((40, bits * w), dtype=np.uint64)
    shim.shim_ann_encode(_ptr(xn, ctypes.c_float), ctypes.c_longlong(40), dim, bits, w, _ptr(codes))
    np.testing.assert_array_equal(codes, _encode_host(xn, bits))

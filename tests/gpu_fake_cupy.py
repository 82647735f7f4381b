"""A NumPy stand-in for the slice of CuPy that ordcore.gpu uses, with the kernels emulated
from their NumPy references: it runs the GPU wrappers' Python plumbing (dispatch, shapes,
dtypes, axis/out handling, launch arguments, top-k keys) on a machine without a GPU.
It checks the wrappers, not the CUDA code (that is test_gpu_host.py and the device tests).
"""

from __future__ import annotations

import re
import types
from contextlib import contextmanager
from typing import Any, Iterator

import numpy as np

from ordcore.gpu import reference


class ndarray(np.ndarray):  # noqa: N801 - CuPy's name
    """numpy array that looks like a CuPy one (module name, .get(), .data.ptr)."""

    def get(self) -> np.ndarray:
        return np.asarray(self).copy()

    @property
    def device(self) -> Any:  # type: ignore[override]
        return _Device(0)

    @property
    def data(self) -> Any:  # type: ignore[override]
        return types.SimpleNamespace(ptr=self.__array_interface__["data"][0])


ndarray.__module__ = "cupy._core.core"


def _wrap(a: Any) -> Any:
    return np.asarray(a).view(ndarray) if isinstance(a, np.ndarray) or np.isscalar(a) else a


def _f(name: str) -> Any:
    fn = getattr(np, name)

    def w(*args: Any, **kw: Any) -> Any:
        args = tuple(np.asarray(a) if isinstance(a, ndarray) else a for a in args)
        out = fn(*args, **kw)
        if isinstance(out, tuple):
            return tuple(_wrap(o) for o in out)
        return _wrap(out)

    return w


class _Device:
    def __init__(self, i: int = 0) -> None:
        self.id = i

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *a: Any) -> None:
        return None


class _Event:
    def record(self) -> None: ...
    def synchronize(self) -> None: ...


def _bits_to_f32(words: np.ndarray) -> np.ndarray:
    return (words.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(f: np.ndarray) -> np.ndarray:
    u = f.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def _load(arr: np.ndarray, c: str) -> np.ndarray:
    if c == "ord_bf16":
        return _bits_to_f32(arr.view(np.uint16))
    return arr.astype(np.float32)


def _store(dst: np.ndarray, vals: np.ndarray, c: str) -> None:
    flat = dst.reshape(-1)
    if c == "ord_bf16":
        flat.view(np.uint16)[...] = _f32_to_bf16(vals.reshape(-1))
    elif c == "ord_f16":
        with np.errstate(over="ignore"):
            flat[...] = vals.reshape(-1).astype(np.float16)
    else:
        flat[...] = vals.reshape(-1).astype(np.float32)


def _sylvester(v: np.ndarray) -> np.ndarray:
    rows, m = v.shape
    out = v.astype(np.float64)
    h = 1
    while h < m:
        out = out.reshape(rows, -1, 2, h)
        a, b = out[:, :, 0, :].copy(), out[:, :, 1, :].copy()
        out[:, :, 0, :], out[:, :, 1, :] = a + b, a - b
        h *= 2
    return out.reshape(rows, m)


class _Kernel:
    """Emulates one kernel instance from its name expression."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid: Any, block: Any, args: tuple[Any, ...], shared_mem: int = 0) -> None:
        a = [np.asarray(x) if isinstance(x, np.ndarray) else x for x in args]
        base = self.name.split("<")[0]
        tmpl = re.findall(r"<(.*)>", self.name)
        params = [p.strip() for p in tmpl[0].split(",")] if tmpl else []
        getattr(self, "_" + base)(params, *a)

    # --- sfc
    def _hilbert_encode(self, p: list[str], coords: Any, n: Any, d: Any, nbits: Any, out: Any, bad: Any) -> None:
        self._encode(coords, int(n), int(d), int(nbits), out, bad, lambda c: reference.hilbert_encode(c, int(nbits)))

    def _morton_encode(self, p: list[str], coords: Any, n: Any, d: Any, nbits: Any, msb: Any, out: Any, bad: Any) -> None:
        self._encode(coords, int(n), int(d), int(nbits), out, bad,
                     lambda c: reference.morton_encode(c, int(nbits), msb_first=bool(msb)))

    def _encode(self, coords: Any, n: int, d: int, nbits: int, out: Any, bad: Any, fn: Any) -> None:
        c = coords.reshape(n, d)
        ok = (c >= 0).all(axis=1) if c.dtype.kind == "i" else np.ones(n, dtype=bool)
        if nbits < 64:
            ok &= (c.astype(np.uint64) >> np.uint64(nbits) == 0).all(axis=1)
        if not ok.all():
            bad[0] = np.uint64(int(np.argmin(ok)))
        cc = np.where(ok[:, None], c, 0).astype(np.uint64)
        out[...] = np.where(ok, fn(cc), 0)

    def _hilbert_decode(self, p: list[str], h: Any, n: Any, d: Any, nbits: Any, out: Any, bad: Any) -> None:
        self._decode(h, int(n), int(d), int(nbits), out, bad, lambda v: reference.hilbert_decode(v, int(nbits), int(d)))

    def _morton_decode(self, p: list[str], h: Any, n: Any, d: Any, nbits: Any, msb: Any, out: Any, bad: Any) -> None:
        self._decode(h, int(n), int(d), int(nbits), out, bad,
                     lambda v: reference.morton_decode(v, int(nbits), int(d), msb_first=bool(msb)))

    def _decode(self, h: Any, n: int, d: int, nbits: int, out: Any, bad: Any, fn: Any) -> None:
        total = d * nbits
        ok = np.ones(n, dtype=bool) if total >= 64 else (h >> np.uint64(total)) == 0
        if not ok.all():
            bad[0] = np.uint64(int(np.argmin(ok)))
        out.reshape(n, d)[...] = np.where(ok[:, None], fn(np.where(ok, h, 0)), 0)

    # --- hadamard
    def _fwht(self, p: list[str], x: Any, y: Any, rows: Any, scale: Any, vec: Any, use_signs: Any,
              seed: Any, stream: Any, sub_k: Any) -> None:
        in_c, out_c, log_n = p[0], p[1], int(p[2])
        m, rows = 1 << log_n, int(rows)
        v = _load(x.reshape(-1)[: rows * m], in_c).reshape(rows, m).astype(np.float32)
        if use_signs:
            idx = (np.arange(rows)[:, None] % int(sub_k)) * m + np.arange(m)[None, :]
            neg = (reference.counter_u64(int(seed), int(stream), idx.astype(np.uint64)) >> np.uint64(63)) == 1
            v = np.where(neg, -v, v)
        res = (_sylvester(v).astype(np.float32) * np.float32(scale)).astype(np.float32)
        _store(y.reshape(-1)[: rows * m], res, out_c)

    def _hadamard_kmix(self, p: list[str], z: Any, y: Any, hk: Any, k: Any, m: Any, rows: Any, scale: Any) -> None:
        k, m, rows = int(k), int(m), int(rows)
        zz = z.reshape(rows, k, m).astype(np.float64)
        res = np.einsum("ak,ram->rkm", hk.reshape(k, k).astype(np.float64), zz) * float(scale)
        _store(y.reshape(-1)[: rows * k * m], res.astype(np.float32), p[0])

    def _random_signs(self, p: list[str], seed: Any, blocks: Any, n: Any, out: Any) -> None:
        out.reshape(int(blocks), int(n))[...] = reference.random_signs(int(seed), int(blocks), int(n))

    def _counter_u64_kernel(self, p: list[str], seed: Any, stream: Any, count: Any, out: Any) -> None:
        out[...] = reference.counter_u64(int(seed), int(stream), np.arange(int(count), dtype=np.uint64))

    # --- ann
    def _ann_normalize(self, p: list[str], x: Any, n: Any, d: Any, out: Any) -> None:
        out.reshape(int(n), int(d))[...] = reference.ann_normalize(x.reshape(int(n), int(d)))

    def _ann_encode(self, p: list[str], x: Any, n: Any, d: Any, bits: Any, w: Any, codes: Any) -> None:
        codes.reshape(int(n), -1)[...] = reference.ann_encode(x.reshape(int(n), int(d)), int(bits), "l2")

    def _ann_code_distances(self, p: list[str], q: Any, b: Any, c: Any, n: Any, w: Any, d: Any, bits: Any,
                            out: Any, ld: Any) -> None:
        L = int(bits) * int(w)
        dist = reference.code_distances(q.reshape(int(b), L), c.reshape(int(n), L), int(d), int(bits))
        out.reshape(int(b), int(ld))[:, : int(n)] = dist

    def _ann_code_distance_rows(self, p: list[str], a: Any, b: Any, n: Any, w: Any, d: Any, bits: Any, out: Any) -> None:
        L = int(bits) * int(w)
        aa, bb = a.reshape(int(n), L), b.reshape(int(n), L)
        out[...] = [reference.code_distances(aa[i : i + 1], bb[i : i + 1], int(d), int(bits))[0, 0] for i in range(int(n))]

    def _ann_code_topk(self, p: list[str], q: Any, c: Any, n: Any, w: Any, d: Any, bits: Any, k: Any, bins: Any,
                       cap: Any, keys: Any, overflow: Any) -> None:
        L, n, k, cap = int(bits) * int(w), int(n), int(k), int(cap)
        qq = q.reshape(-1, L)
        dist = reference.code_distances(qq, c.reshape(n, L), int(d), int(bits)) if n else np.zeros((len(qq), 0), np.int64)
        kk = keys.reshape(len(qq), k)
        for i in range(len(qq)):
            order = sorted(range(n), key=lambda j: (dist[i, j], j))
            need = min(k, n)
            thr = dist[i, order[need - 1]] if need else 0
            if (dist[i] <= thr).sum() > cap:
                overflow[i] = 1
                continue
            overflow[i] = 0
            row = [(int(dist[i, j]) << 32) | j for j in order[:k]]
            kk[i] = row + [2**64 - 1] * (k - len(row))

    def _ann_rerank(self, p: list[str], q: Any, b: Any, x: Any, n: Any, d: Any, cand: Any, c: Any, metric: Any,
                    out: Any) -> None:
        b, n, d, c = int(b), int(n), int(d), int(c)
        qq, xx, cc = q.reshape(b, d), x.reshape(n, d), cand.reshape(b, c)
        res = np.full((b, c), np.inf, dtype=np.float32)
        for i in range(b):
            for j in range(c):
                idx = int(cc[i, j])
                if 0 <= idx < n:
                    if int(metric) == 2:
                        res[i, j] = np.sum((qq[i] - xx[idx]) ** 2, dtype=np.float32)
                    else:
                        dot = np.float32(np.dot(qq[i], xx[idx]))
                        res[i, j] = np.clip(1 - dot, 0, 2) if int(metric) == 0 else 1 - dot
        out.reshape(b, c)[...] = res


class RawModule:
    def __init__(self, code: str, options: Any = (), name_expressions: Any = ()) -> None:
        self.names = list(name_expressions)

    def get_function(self, name: str) -> _Kernel:
        assert name in self.names, name
        return _Kernel(name)


def make() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = ndarray  # type: ignore[attr-defined]
    for name in ("uint64", "int64", "uint32", "int32", "uint16", "int16", "uint8", "int8", "float16",
                 "float32", "float64", "bool_", "inf", "dtype"):
        setattr(cp, name, getattr(np, name))
    for name in ("empty", "zeros", "full", "empty_like", "ascontiguousarray", "moveaxis", "sort",
                 "concatenate", "where", "arange", "nonzero", "isfinite", "maximum", "clip", "eye", "ones"):
        setattr(cp, name, _f(name))
    # like CuPy: host input is copied to the "device"; device input passes through
    cp.asarray = lambda a, dtype=None: (  # type: ignore[attr-defined]
        a if isinstance(a, ndarray) and dtype is None else _wrap(np.array(a, dtype=dtype, copy=True))
    )
    cp.RawModule = RawModule  # type: ignore[attr-defined]
    cuda = types.SimpleNamespace(
        Device=_Device,
        ExternalStream=lambda *a: None,
        Event=_Event,
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
    )
    cp.cuda = cuda  # type: ignore[attr-defined]
    return cp


@contextmanager
def installed(monkeypatch: Any) -> Iterator[types.ModuleType]:
    from ordcore.gpu import _runtime

    cp = make()
    monkeypatch.setattr(_runtime, "cupy", lambda: cp)
    monkeypatch.setattr(_runtime, "_modules", {})
    monkeypatch.setattr(_runtime, "_kernels", {})
    yield cp

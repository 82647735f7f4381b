"""Benchmark ordcore.sfc against hilbertsfc (and hilbertcurve, numpy-hilbert-curve, pymorton).

One process, the same random points for every library, single-threaded (ordcore
``num_threads=1``, hilbertsfc ``parallel=False``), timed interleaved: each repeat runs every
library once on the same input, and the best of ``--repeat`` is kept. Inputs are separate
coordinate arrays of the narrowest unsigned dtype and outputs the narrowest dtype (what
hilbertsfc takes and returns); ordcore also runs on one ``(N, D)`` array. Hilbert and Morton,
2-D and 3-D, encode and decode, for a sweep of ``nbits``. Every output is checked equal
before timing (hilbertsfc's 3-D Hilbert curve is a different variant of the curve, so only its
timing is compared there; its 2-D curve at odd nbits is ours with x and y exchanged, checked as such). Ratios: ordcore time / hilbertsfc time (< 1: ordcore faster), for
separate arrays and for the ``(N, D)`` array. hilbertsfc takes separate arrays only, so the
``(N, D)`` ratio compares ordcore reading (writing) rows with hilbertsfc on contiguous
columns; the last column gives hilbertsfc the same ``(N, D)`` array too, as strided column
views (and, decoding, strided ``out_*`` views of an ``(N, D)`` array): the like-for-like
ratio for a user holding rows.

hilbertsfc needs Python >= 3.12. On 3.11, point ``HILBERTSFC_WHEEL`` at its wheel
(``pip download --no-deps --python-version 3.12 --only-binary=:all: hilbertsfc``) with numba
installed: this script then imports a temporary copy of it whose few PEP 695 definitions are
rewritten for 3.11. Otherwise hilbertsfc is skipped with the reason printed. JSON goes to
bench-results/sfc.json.

To compare AVX2 code with AVX2 code on an AVX-512 machine, cap ordcore with
``ORDCORE_SFC_KERNEL=avx2`` and compile hilbertsfc for an AVX2 CPU with
``NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=+avx2`` (``NUMBA_CPU_NAME`` alone keeps the
host's AVX-512 features); the header names the peer's target and the last lines count its
functions with 512-bit registers.

    python benches/sfc.py [--n 1000000] [--repeat 7] [--sub 5000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

import numpy as np

from ordcore import sfc

NBITS = {2: [4, 8, 12, 16, 20, 24, 28, 32], 3: [3, 6, 10, 14, 18, 21]}


def load_hilbertsfc() -> tuple[ModuleType | None, str]:
    """hilbertsfc, or None with the reason it cannot be imported."""
    try:
        import hilbertsfc

        return hilbertsfc, f"hilbertsfc {getattr(hilbertsfc, '__version__', '')}"
    except (ImportError, SyntaxError) as e:
        first = e
    wheel = os.environ.get("HILBERTSFC_WHEEL")
    if sys.version_info >= (3, 12) or not wheel:
        return None, (f"hilbertsfc cannot be imported ({type(first).__name__}: {first}); it "
                      "needs Python >= 3.12, or set HILBERTSFC_WHEEL to its wheel on 3.11")
    try:
        import numba  # noqa: F401
    except ImportError:
        return None, "hilbertsfc needs numba, which is not installed"
    root = Path(tempfile.mkdtemp(prefix="hilbertsfc-py311-"))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(root)
    for py in (root / "hilbertsfc").rglob("*.py"):
        src = py.read_text()
        new = re.sub(r"^type (\w+) =", r"\1 =", src, flags=re.M)  # PEP 695 aliases
        if re.search(r"^def \w+\[T, \*\*P\]", new, flags=re.M):  # PEP 695 generics
            new = re.sub(r"^(def \w+)\[T, \*\*P\]", r"\1", new, flags=re.M)
            new = re.sub(r"^(from typing import .*)$",
                         r"\1, ParamSpec, TypeVar\nT = TypeVar('T')\nP = ParamSpec('P')",
                         new, count=1, flags=re.M)
        if new != src:
            py.write_text(new)
    sys.path.insert(0, str(root))
    import hilbertsfc

    return hilbertsfc, (f"hilbertsfc from {Path(wheel).name} (PEP 695 definitions rewritten "
                        f"for Python {sys.version_info[0]}.{sys.version_info[1]})")


def peer_target() -> str:
    """The CPU numba compiles hilbertsfc for: the host's, or the one ``NUMBA_CPU_NAME`` and
    ``NUMBA_CPU_FEATURES`` name. numba keeps the host's features (AVX-512 included) unless
    ``NUMBA_CPU_FEATURES`` is set too, so an AVX2-only comparison on an AVX-512 host takes
    ``NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES=+avx2``; the line also says whether a probe
    loop compiled under these settings uses 512-bit (zmm) registers."""
    import numba
    from numba.core import config

    name = config.CPU_NAME
    feats = config.CPU_FEATURES
    if name is None and feats is None:
        return "the host's (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES unset)"

    @numba.njit
    def probe(a: np.ndarray) -> None:
        for i in range(a.size):
            a[i] = a[i] * np.uint32(3) ^ (a[i] >> np.uint32(1))

    probe(np.zeros(64, np.uint32))
    zmm = "zmm" in probe.inspect_asm(probe.signatures[0])
    feats_str = "the host's" if feats is None else repr(feats)
    return (f"NUMBA_CPU_NAME={name or 'host'}, features {feats_str}: a probe loop "
            f"{'uses' if zmm else 'has no'} 512-bit (zmm) registers")


def peer_zmm() -> str:
    """How many of hilbertsfc's compiled functions use 512-bit (zmm) registers."""
    import gc

    from numba.core.dispatcher import Dispatcher

    seen = zmm = 0
    for o in gc.get_objects():
        if (issubclass(type(o), Dispatcher)  # not isinstance: dead weak proxies raise
                and o.py_func.__module__.startswith("hilbertsfc")):
            for sig in o.signatures:
                seen += 1
                zmm += "zmm" in o.inspect_asm(sig)
    return f"{zmm} of hilbertsfc's {seen} compiled functions use 512-bit (zmm) registers"


def narrowest(bits: int) -> type:
    return next(t for b, t in ((8, np.uint8), (16, np.uint16), (32, np.uint32), (64, np.uint64))
                if b >= bits)


def interleaved(fns: dict[str, Callable[[], Any]], n: int, repeat: int) -> dict[str, float]:
    """Best ns per point of each function, running them in turn ``repeat`` times. Each
    timed call follows an untimed call of the same function, so every contender starts
    with its own input and output in cache (about 20 MB at 1M points: L3-resident);
    otherwise a call's time depends on which contender ran before it (one reading the
    other layout leaves it a cold cache: 10-40% at 1M points)."""
    for f in fns.values():
        f()  # warm-up (JIT, tables)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, f in fns.items():
            f()
            t = time.perf_counter()
            f()
            best[name] = min(best[name], time.perf_counter() - t)
    return {k: v / n * 1e9 for k, v in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--sub", type=int, default=5000,
                    help="points for the pure-Python peers (hilbertcurve, pymorton); 0 skips them")
    ap.add_argument("--curve", choices=("hilbert", "morton"), action="append",
                    help="only this curve (repeatable; default both)")
    ap.add_argument("--d", type=int, choices=(2, 3), action="append",
                    help="only this dimension (repeatable; default both)")
    ap.add_argument("--nbits", type=int, action="append",
                    help="only this nbits (repeatable; default the sweep)")
    args = ap.parse_args()
    n = args.n
    hs, note = load_hilbertsfc()
    print(f"peer: {note}" if hs else f"skipped hilbertsfc: {note}")
    if hs is not None:
        target = peer_target()
        note += f"; {target}"
        print(f"peer target CPU: {target}")
    print(f"ordcore sfc kernel: {sfc.kernel()}; {n} points; best of {args.repeat}, interleaved; "
          "ns per point, 1 thread")
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    head = (f"{'curve':<8}{'D':>2}{'nbits':>6} {'op':<7}| {'ordcore':>8} {'ord (N,D)':>9} "
            f"{'hilbertsfc':>10} {'hsfc (N,D)':>10} | {'ord/hsfc':>8} {'(N,D)/hsfc':>10} "
            f"{'both (N,D)':>10}  note")
    print(head)
    print("-" * len(head))
    for curve in args.curve or ("hilbert", "morton"):
        for d, widths in NBITS.items():
            if args.d and d not in args.d:
                continue
            for nbits in args.nbits or widths:
                if nbits * d > 64:
                    continue
                ct = narrowest(nbits)
                cols = tuple(rng.integers(0, 1 << nbits, n, dtype=np.uint64).astype(ct)
                             for _ in range(d))
                mat = np.ascontiguousarray(np.stack(cols, axis=1))
                enc = sfc.hilbert_encode if curve == "hilbert" else sfc.morton_encode
                dec = sfc.hilbert_decode if curve == "hilbert" else sfc.morton_decode
                code = enc(cols, nbits, dtype="narrowest", num_threads=1)
                note_row = ""
                fns_e: dict[str, Callable[[], Any]] = {
                    "ordcore": lambda: enc(cols, nbits, dtype="narrowest", num_threads=1),
                    "ordcore_rows": lambda: enc(mat, nbits, dtype="narrowest", num_threads=1),
                }
                fns_d: dict[str, Callable[[], Any]] = {
                    "ordcore": lambda: dec(code, nbits, d, dtype="narrowest", separate=True,
                                           num_threads=1),
                    "ordcore_rows": lambda: dec(code, nbits, d, dtype="narrowest",
                                                num_threads=1),
                }
                if hs is not None:
                    he = getattr(hs, f"{curve}_encode_{d}d")
                    hd = getattr(hs, f"{curve}_decode_{d}d")
                    theirs = he(*cols, nbits=nbits)
                    assert theirs.dtype == code.dtype, (theirs.dtype, code.dtype)
                    same = np.array_equal(theirs, code)
                    if curve == "morton" and not same:
                        # hilbertsfc puts coordinate 0 in the low bit? check the other order.
                        same = np.array_equal(
                            theirs, sfc.morton_encode(cols, nbits, axis0="msb",
                                                      dtype="narrowest", num_threads=1))
                        note_row = "hilbertsfc = axis0='msb'" if same else ""
                    if not same and curve == "hilbert" and d == 2 and nbits % 2:
                        # at odd nbits hilbertsfc's 2-D curve is ours with x and y exchanged
                        assert np.array_equal(theirs, enc(tuple(cols[::-1]), nbits, dtype="narrowest",
                                                          num_threads=1)), (curve, d, nbits)
                        same, note_row = True, "hilbertsfc = x, y exchanged (odd nbits)"
                    if not same:
                        assert curve == "hilbert" and d == 3, (curve, d, nbits)
                        note_row = "hilbertsfc 3-D is another curve variant"
                    back = hd(theirs, nbits=nbits)
                    assert all(np.array_equal(a, b) for a, b in zip(back, cols))
                    fns_e["hilbertsfc"] = lambda: he(*cols, nbits=nbits)
                    fns_d["hilbertsfc"] = lambda: hd(theirs, nbits=nbits)
                    views = tuple(mat[:, i] for i in range(d))
                    back_rows = np.empty_like(mat)
                    outs = dict(zip(("out_x", "out_y", "out_z"),
                                    (back_rows[:, i] for i in range(d))))
                    assert np.array_equal(he(*views, nbits=nbits), theirs)
                    hd(theirs, nbits=nbits, **outs)
                    assert np.array_equal(back_rows, mat)
                    fns_e["hilbertsfc_rows"] = lambda: he(*views, nbits=nbits)
                    fns_d["hilbertsfc_rows"] = lambda: hd(theirs, nbits=nbits, **outs)
                for op, fns in (("encode", fns_e), ("decode", fns_d)):
                    t = interleaved(fns, n, args.repeat)
                    h = t.get("hilbertsfc")
                    hr = t.get("hilbertsfc_rows")
                    r = {"curve": curve, "d": d, "nbits": nbits, "op": op, "n": n,
                         "ns_per_point": t, "ratio_ordcore_over_hilbertsfc":
                         t["ordcore"] / h if h else None,
                         "ratio_ordcore_rows_over_hilbertsfc": t["ordcore_rows"] / h if h else None,
                         "ratio_ordcore_rows_over_hilbertsfc_rows":
                         t["ordcore_rows"] / hr if hr else None,
                         "note": note_row}
                    rows.append(r)
                    hstr = f"{h:>10.2f} {hr:>10.2f}" if h and hr else f"{'-':>10} {'-':>10}"
                    rstr = (f"{t['ordcore'] / h:>7.2f}x {t['ordcore_rows'] / h:>9.2f}x "
                            f"{t['ordcore_rows'] / hr:>9.2f}x" if h and hr
                            else f"{'-':>8} {'-':>10} {'-':>10}")
                    print(f"{curve:<8}{d:>2}{nbits:>6} {op:<7}| {t['ordcore']:>8.2f} "
                          f"{t['ordcore_rows']:>9.2f} {hstr} | {rstr}  {note_row}", flush=True)
    # Pure-Python peers, on a subsample (hilbert 2-D 16 / 3-D 10 bits, encode).
    sub = args.sub
    for d, nbits in ((2, 16), (3, 10)) if sub > 0 else ():
        pts = rng.integers(0, 1 << nbits, (sub, d), dtype=np.int64)
        ref = sfc.hilbert_encode(pts, nbits)
        peers: dict[str, Callable[[], Any]] = {
            "ordcore": lambda: sfc.hilbert_encode(pts, nbits, num_threads=1)}
        try:
            from hilbertcurve.hilbertcurve import HilbertCurve

            hc = HilbertCurve(p=nbits, n=d)
            lst = pts.tolist()
            assert hc.distances_from_points(lst) == ref.tolist()
            peers["hilbertcurve"] = lambda: hc.distances_from_points(lst)
        except ImportError:
            print("skipped hilbertcurve: not installed")
        try:
            import hilbert as nhc  # numpy-hilbert-curve

            assert np.array_equal(nhc.encode(pts, d, nbits), ref)
            peers["numpy-hilbert-curve"] = lambda: nhc.encode(pts, d, nbits)
        except ImportError:
            print("skipped numpy-hilbert-curve: not installed")
        t = interleaved(peers, sub, 3)
        print(f"hilbert {d}-D nbits {nbits} encode, {sub} points: "
              + ", ".join(f"{k} {v:.1f} ns/pt ({v / t['ordcore']:.0f}x ordcore)"
                          for k, v in t.items()))
        rows.append({"curve": "hilbert", "d": d, "nbits": nbits, "op": "encode", "n": sub,
                     "ns_per_point": t, "note": "pure-Python peers"})
    if hs is not None:
        zmm = peer_zmm()
        note += f"; {zmm}"
        print(f"peer machine code: {zmm}")
    out = Path(__file__).resolve().parents[1] / "bench-results"
    out.mkdir(exist_ok=True)
    path = out / "sfc.json"
    path.write_text(json.dumps({"n": n, "repeat": args.repeat, "peer": note,
                                "kernel": sfc.kernel(), "machine": platform.processor()
                                or platform.machine(), "cpus": os.cpu_count(), "rows": rows},
                               indent=2))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""File-format fuzz test of ``BQGraphIndex.load``: random truncations, byte flips and crafted
headers (with and without recomputed checksums). ``load`` either returns an index that
searches, adds, removes, compacts and saves without error and never returns NaN, or raises
``IndexFormatError``; never an abort, a hang or another exception.

Runs in a subprocess so that an abort or a hang is a test failure rather than the end of the
test run. CI runs a fixed seed and a bounded count; set ``ORDCORE_FUZZ_EXAMPLES`` (and
optionally ``ORDCORE_FUZZ_SEED``) for a longer run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

_CHILD = r"""
import json, os, struct, sys, tempfile, zlib
import numpy as np
import ordcore
from ordcore import ann

count, seed = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(seed)
tmp = tempfile.mkdtemp()

def crcs(b):
    b[80:84] = struct.pack("<I", zlib.crc32(bytes(b[128:])))
    b[84:88] = struct.pack("<I", zlib.crc32(bytes(b[:84]) + (bytes(b[88:128]) if int.from_bytes(b[8:12], "little") >= 4 else b"")))

# Seed files: every metric, every code width, rotation on and off, removed nodes; format
# version 1 (1/2-bit codes, float32 store), 2 (compact rerank stores; 4/8-bit files of
# earlier releases, made here from version-4 ones), 3 (the automatic code choice as metadata: a made
# choice, and a pending one of an empty index), 4 (4/8-bit codes with their lists ordered
# for the search-time degree bound, at bytes 96..100; made here with ORDCORE_ANN_RENUMBER=0)
# and 5 (4/8-bit nodes renumbered in graph order, their insertion ranks as the last section).
bases = []
for i, (metric, bits, rot, dim, store) in enumerate([
    ("l2", 2, None, 16, "float32"), ("cosine", 1, None, 70, "float32"),
    ("ip", 2, "hadamard", 24, "float32"), ("cosine", 2, "hadamard", 8, "float32"),
    ("l2", 1, None, 1, "float32"), ("l2", 4, "hadamard", 20, "float32"),
    ("cosine", 8, None, 66, "float16"), ("ip", 4, None, 9, "int8"),
    ("cosine", 2, None, 12, "bfloat16"),
]):
    x = np.random.default_rng(i).standard_normal((120, dim)).astype(np.float32)
    idx = ann.BQGraphIndex(dim, metric=metric, bits=bits, R=8, L_build=16, rotation=rot,
                           rerank_dtype=store)
    idx.add(x)
    idx.remove(np.arange(0, 120, 7))
    p = os.path.join(tmp, f"base{i}.ordann")
    idx.save(p)
    with open(p, "rb") as f:
        bases.append((bytearray(f.read()), dim))
for i, (metric, dim, n) in enumerate([("l2", 12, 1200), ("cosine", 20, 150), ("ip", 6, 0)]):
    idx = ann.BQGraphIndex(dim, metric=metric, R=8, L_build=16)
    if n:
        idx.add(np.random.default_rng(50 + i).standard_normal((n, dim)).astype(np.float32))
        idx.remove(np.arange(0, n, 9))
    p = os.path.join(tmp, f"auto{i}.ordann")
    idx.save(p)
    with open(p, "rb") as f:
        b = bytearray(f.read())
    assert struct.unpack_from("<I", b, 8)[0] == (5 if n and b[25] > 2 else 3)
    bases.append((b, dim))
# A 4-bit file as the previous release wrote it (version 4: ordered lists, insertion numbering).
os.environ["ORDCORE_ANN_RENUMBER"] = "0"
idx = ann.BQGraphIndex(20, metric="l2", bits=4, R=8, L_build=16, rotation="hadamard")
idx.add(np.random.default_rng(5).standard_normal((120, 20)).astype(np.float32))
idx.remove(np.arange(0, 120, 7))
del os.environ["ORDCORE_ANN_RENUMBER"]
p = os.path.join(tmp, "v4.ordann")
idx.save(p)
with open(p, "rb") as f:
    bases.append((bytearray(f.read()), 20))
# A 4-bit file as earlier releases wrote it: version 2, no degree bound.
old = bytearray(bases[-1][0])
assert struct.unpack_from("<I", old, 8)[0] == 4
old[8:12] = struct.pack("<I", 2)
old[96:100] = bytes(4)
old[80:84] = struct.pack("<I", zlib.crc32(bytes(old[128:])))
old[84:88] = struct.pack("<I", zlib.crc32(bytes(old[:84]) + (bytes(old[88:128]) if int.from_bytes(old[8:12], "little") >= 4 else b"")))
with open(os.path.join(tmp, "old.ordann"), "wb") as f:
    f.write(old)
assert ann.BQGraphIndex.load(os.path.join(tmp, "old.ordann")).search_degree == 0
bases.append((old, 20))
versions = {struct.unpack_from("<I", b, 8)[0] for b, _ in bases}
assert versions == {1, 2, 3, 4, 5}, versions

def set_meta(b, text):
    # Replaces the metadata section (the payload's end) and fixes both lengths.
    old = struct.unpack_from("<Q", b, 88)[0]
    start = len(b) - ((old + 63) // 64 * 64)
    body = text + bytes((-len(text)) % 64)
    b[start:] = body
    struct.pack_into("<Q", b, 88, len(text))
    struct.pack_into("<Q", b, 72, len(b) - 128)

# Header fields a crafted header sets: (offset, struct format).
FIELDS = [(8, "<I"), (12, "<I"), (16, "<Q"), (24, "<B"), (25, "<B"), (26, "<B"), (27, "<B"),
          (28, "<I"), (32, "<I"), (36, "<I"), (40, "<d"), (48, "<Q"), (56, "<Q"), (64, "<Q"),
          (72, "<Q"), (88, "<Q"), (96, "<I")]
SPECIAL = [0, 1, 2, 3, 63, 64, 65, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**64 - 1]

def mutate(b, dim):
    kind = int(rng.integers(0, 8))
    b = bytearray(b)
    if kind == 0:  # truncation (or extension)
        cut = int(rng.integers(0, len(b) + 1))
        b = b[:cut] if rng.random() < 0.9 else b + bytes(int(rng.integers(1, 200)))
        if rng.random() < 0.5 and len(b) >= 128:
            crcs(b)
    elif kind in (1, 2):  # byte flips, checksums recomputed for kind 2
        for _ in range(int(rng.integers(1, 9))):
            o = int(rng.integers(0, len(b)))
            b[o] ^= 1 << int(rng.integers(0, 8)) if rng.random() < 0.7 else int(rng.integers(1, 256))
        if kind == 2:
            crcs(b)
    elif kind == 3:  # crafted header field, checksums recomputed
        for _ in range(int(rng.integers(1, 3))):
            off, fmt = FIELDS[int(rng.integers(0, len(FIELDS)))]
            size = struct.calcsize(fmt)
            if fmt == "<d":
                v = [float("nan"), float("inf"), -1.0, 0.0, 1.0, 1e300, 1.2][int(rng.integers(0, 7))]
            else:
                cap = 2 ** (8 * size) - 1
                v = SPECIAL[int(rng.integers(0, len(SPECIAL)))] & cap
                if rng.random() < 0.4:
                    v = int(struct.unpack_from(fmt, b, off)[0]) + int(rng.integers(-3, 4))
                    v = max(0, min(cap, v))
            struct.pack_into(fmt, b, off, v)
        crcs(b)
    elif kind == 4:  # payload words overwritten with special values, checksums recomputed
        for _ in range(int(rng.integers(1, 5))):
            o = 128 + 4 * int(rng.integers(0, (len(b) - 128) // 4))
            v = [b"\xff\xff\xff\xff", b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\x00\x00",
                 b"\x01\x00\x00\x00", b"\x77\x00\x00\x00", b"\x00\x00\x80\xff"][int(rng.integers(0, 7))]
            b[o:o + 4] = v
        crcs(b)
    elif kind == 6 and struct.unpack_from("<I", b, 8)[0] == 3:  # crafted metadata
        good = {"choice": {"bits": 4, "rotation": None, "target": 0.97, "base": 10,
                           "sample": 5, "estimates": {"4/none": 1.0}, "reason": "r"}}
        text = [b"", b"{", b"null", b"[]", b"\xff\xfe", b'{"pending": 1}',
                b'{"pending": {"rotation": "pca"}}', b'{"choice": {}}', json.dumps(good).encode(),
                b'{"pending": {"rotation": "auto"}}', bytes(rng.integers(0, 256, 40).astype(np.uint8)),
                ][int(rng.integers(0, 11))]
        set_meta(b, text)
        crcs(b)
    elif kind == 7 and struct.unpack_from("<I", b, 8)[0] == 5:  # crafted insertion ranks
        n = struct.unpack_from("<Q", b, 56)[0]
        start = len(b) - (4 * n + 63) // 64 * 64
        i, j = (int(rng.integers(0, n)) for _ in range(2))
        if rng.random() < 0.5:  # two ranks swapped: a valid file with another id order
            ri, rj = struct.unpack_from("<I", b, start + 4 * i)[0], struct.unpack_from("<I", b, start + 4 * j)[0]
            struct.pack_into("<I", b, start + 4 * i, rj)
            struct.pack_into("<I", b, start + 4 * j, ri)
        else:  # a rank repeated or out of range
            v = [n, n + 1, 2**32 - 1, struct.unpack_from("<I", b, start + 4 * j)[0]][int(rng.integers(0, 4))]
            struct.pack_into("<I", b, start + 4 * i, v)
        crcs(b)
    else:  # a random block copied elsewhere, checksums recomputed
        n = int(rng.integers(1, 256))
        src, dst = (int(rng.integers(128, max(129, len(b) - n))) for _ in range(2))
        b[dst:dst + n] = b[src:src + n]
        crcs(b)
    return bytes(b), kind

stats = {"loaded": 0, "refused": 0}
failures = []
for i in range(count):
    src, dim = bases[int(rng.integers(0, len(bases)))]
    data, kind = mutate(src, dim)
    p = os.path.join(tmp, f"f{i}.ordann")
    with open(p, "wb") as f:
        f.write(data)
    mmap = bool(rng.integers(0, 2))
    try:
        idx = ann.BQGraphIndex.load(p, mmap=mmap)
    except ordcore.IndexFormatError:
        stats["refused"] += 1
        os.unlink(p)
        continue
    except BaseException as e:
        failures.append(f"case {i} kind {kind}: load raised {type(e).__name__}: {e}")
        os.unlink(p)
        continue
    stats["loaded"] += 1
    try:
        d = idx.dim
        q = np.random.default_rng(i).standard_normal((4, d)).astype(np.float32)
        _ = (idx.bits, idx.rotation, idx.choice, repr(idx))
        if len(idx):
            got = idx.get(idx.ids[:3])
            if got.shape != (min(3, len(idx)), d) or not np.isfinite(got).all():
                failures.append(f"case {i} kind {kind}: bad get output {got}")
        for rerank in (True, False):
            flt = idx.ids[::2] if i % 2 else None
            ids, dist = idx.search(q, k=5, ef_search=16, rerank=rerank, filter=flt)
            if flt is not None and not np.isin(ids[ids >= 0], flt).all():
                failures.append(f"case {i} kind {kind}: filtered search returned {ids}")
            live = set(idx.ids.tolist())
            ok = (ids == -1) | np.isin(ids, list(live) or [-2])
            if not ok.all() or np.isnan(dist).any() or not np.isfinite(dist[ids >= 0]).all():
                failures.append(f"case {i} kind {kind}: bad search output {ids} {dist}")
        if i % 5 == 0:
            idx.add(q)
            idx.remove(idx.ids[:1])
            idx.compact()
            idx.save(p + ".again")
            back = ann.BQGraphIndex.load(p + ".again")
            if len(back) != len(idx):
                failures.append(f"case {i} kind {kind}: save/load changed len")
            del back
            os.unlink(p + ".again")
    except BaseException as e:
        failures.append(f"case {i} kind {kind}: loaded index failed: {type(e).__name__}: {e}")
    del idx
    os.unlink(p)
print(json.dumps({"stats": stats, "failures": failures[:20], "n_failures": len(failures)}))
"""


def test_load_of_corrupted_and_crafted_files_never_aborts_hangs_or_returns_nan() -> None:
    count = int(os.environ.get("ORDCORE_FUZZ_EXAMPLES", "5000"))
    seed = int(os.environ.get("ORDCORE_FUZZ_SEED", "20261201"))
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(count), str(seed)],
        capture_output=True,
        text=True,
        timeout=max(300, count // 10),
        env=dict(os.environ, RAYON_NUM_THREADS="2"),
    )
    assert proc.returncode == 0, (
        f"fuzz child exited with status {proc.returncode} (an abort or crash)\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["n_failures"] == 0, "\n".join(out["failures"])
    # The mutations reach both outcomes (so the test exercises validation and use).
    assert out["stats"]["loaded"] > count // 50 and out["stats"]["refused"] > count // 2

"""Sequence packing: ordcore against its peers, in one process, on real length sets.

Data (../shared/data/packing): the token counts of real documents (cl100k_base tokenizer) and
16,279,552 lengths drawn from the published Wikipedia histogram of Krell et al. (arXiv
2107.02027, shuffled with a fixed seed). Documents longer than ``max_len`` are split into
``max_len`` fragments first (ordcore: ``overlong="split"``; peers get the same fragment
lengths).

Peers:
* ``binpacking.to_constant_volume`` (pure Python, roughly quadratic): run on a random
  subsample of ``--binpacking-n`` items; ordcore is timed on the same subsample and the ratio
  is computed there (not extrapolated).
* ``trl-bfd-py``: a faithful pure-Python port of TRL's ``_pack_bfd`` (``trl.data_utils``):
  lengths sorted descending, a max segment tree over free space ``1..seq_length`` whose
  search returns the smallest free space that fits, a FIFO deque of bins per free space.
  Run on at most ``--trl-n`` items (a subsample of the Wikipedia set; full document sets).
* ``seqpacker`` (``Packer(capacity, strategy="obfd")``), when importable.

Datasets section (``--hf-n`` man pages at ``--hf-max-len`` tokens; token ids synthesized for
the real lengths, an int32 ``input_ids`` and an int8 ``attention_mask`` column, as a tokenizer
gives): ``ordcore.packing.pack_dataset`` (one plan for the whole dataset) against TRL's
``pack_dataset`` (``strategy="bfd"`` / ``"bfd_split"``, which plans every 1,000-row ``map``
batch on its own) on the same ``datasets.Dataset``, timed alternately, and torchtune's
``PackedDataset`` (next fit in input order; ``split_across_pack=False`` on rows truncated to
``max_len``, ``split_across_pack=True`` fills every pack and cuts documents across packs) on a
subsample of ``--torchtune-n`` rows with ordcore timed on the same subsample.

Prints a table (packs, efficiency, seconds, ns/item, speed-up of ordcore ``bfd`` over each peer
on the same input) and writes ``bench-results/packing.json``.

Usage: ``python benches/packing.py [--quick] [--skip-nnlshp] [--hf-only]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections import defaultdict, deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import ordcore
from ordcore.packing import pack

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ORDCORE_SHARED_DATA", ROOT.parent / "shared" / "data")) / "packing"


# ---------------------------------------------------------------- peers


class _TrlSegmentTree:
    """TRL's ``_SegmentTree(maxval)``: leaf ``v`` holds ``v`` when a bin has ``v`` free."""

    def __init__(self, maxval: int) -> None:
        self.maxval = maxval
        self.tree_size = 1 << (maxval - 1).bit_length()
        self.tree = [0] * (2 * self.tree_size)

    def add(self, val: int) -> None:
        i = self.tree_size + val - 1
        self.tree[i] = val
        while i > 1:
            i >>= 1
            left, right = self.tree[i << 1], self.tree[(i << 1) + 1]
            self.tree[i] = left if left >= right else right

    def remove(self, val: int) -> None:
        i = self.tree_size + val - 1
        self.tree[i] = 0
        while i > 1:
            i >>= 1
            left, right = self.tree[i << 1], self.tree[(i << 1) + 1]
            self.tree[i] = left if left >= right else right

    def search(self, val: int) -> int:
        i = 1
        while i < self.tree_size:
            i = i << 1 if self.tree[i << 1] >= val else (i << 1) + 1
        return self.tree[i]


def trl_bfd(lengths: np.ndarray, seq_length: int) -> list[list[int]]:
    """Best-fit decreasing as in TRL's ``_pack_bfd`` (pure Python)."""
    order = np.argsort(-lengths, kind="stable")
    tree = _TrlSegmentTree(seq_length)
    tree.add(seq_length)
    space_to_bin: defaultdict[int, deque[dict[str, Any]]] = defaultdict(deque)
    bins: list[dict[str, Any]] = []
    for idx, length in zip(order.tolist(), lengths[order].tolist()):
        space = tree.search(length)
        if space < seq_length:
            b = space_to_bin[space].popleft()
        else:
            b = {"ids": [], "length": 0}
            bins.append(b)
        b["ids"].append(idx)
        b["length"] += length
        if space < seq_length and not space_to_bin[space]:
            tree.remove(space)
        space -= length
        space_to_bin[space].append(b)
        if space > 0:
            tree.add(space)
    return [b["ids"] for b in bins]


def binpacking_peer(lengths: np.ndarray, cap: int) -> int:
    import binpacking

    return len(binpacking.to_constant_volume(lengths.tolist(), cap))


def seqpacker_peer() -> Callable[[np.ndarray, int], int] | str:
    try:
        import seqpacker
    except ImportError as exc:
        return f"seqpacker not importable ({exc}); pip download --no-deps seqpacker gives only an sdist that must be compiled"

    def run(lengths: np.ndarray, cap: int) -> int:
        result = seqpacker.Packer(capacity=cap, strategy="obfd").pack(lengths.tolist())
        return int(result.num_bins)

    return run


def hf_dataset(lengths: np.ndarray, rng: np.random.Generator) -> Any:
    """A tokenized ``datasets.Dataset`` with the given row lengths (random cl100k-range ids)."""
    import datasets
    import pyarrow as pa

    offsets = np.zeros(lengths.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    ids = pa.array(rng.integers(0, 100_256, int(offsets[-1]), dtype=np.int32))
    mask = pa.array(np.ones(int(offsets[-1]), dtype=np.int8))
    off = pa.array(offsets)
    table = pa.table({"input_ids": pa.ListArray.from_arrays(off, ids),
                      "attention_mask": pa.ListArray.from_arrays(off, mask)})
    return datasets.Dataset(datasets.table.InMemoryTable(table))


def trl_pack_dataset() -> Callable[..., Any] | str:
    try:
        import datasets
        from trl.data_utils import pack_dataset as trl_pack
    except ImportError as exc:
        return f"TRL not importable ({exc})"
    datasets.disable_progress_bars()
    return trl_pack


def torchtune_packed() -> Any:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torchtune.datasets import PackedDataset
    except Exception as exc:  # noqa: BLE001 - any import failure is reported, not fatal
        return f"torchtune does not import ({type(exc).__name__}: {exc})"
    return PackedDataset


def hf_section(args: argparse.Namespace, rows: list[dict[str, Any]], record: Callable[..., Any],
               rng: np.random.Generator) -> None:
    from ordcore.packing import pack_dataset

    path = DATA / "doclens_cl100k_manpages_roff.npy"
    lengths = np.load(path)[: args.hf_n]
    cap = args.hf_max_len
    name = f"manpages {lengths.size:,} @{cap}"
    ds = hf_dataset(lengths, rng)
    trl = trl_pack_dataset()
    repeat = max(args.repeat, 3)
    warm = ds.select(range(min(2000, len(ds))))  # imports and first-call costs, untimed
    pack_dataset(warm, cap)
    if not isinstance(trl, str):
        trl(warm, cap)
    for overlong, strategy in (("truncate", "bfd"), ("split", "bfd_split")):
        tokens = int(np.minimum(lengths, cap).sum()) if overlong == "truncate" else int(lengths.sum())
        best_o = best_t = float("inf")
        ours = theirs = None
        for _ in range(repeat):  # interleaved: ordcore, TRL, ordcore, TRL, ... (best of each)
            ours, secs = timed(lambda: pack_dataset(ds, cap, overlong=overlong))
            best_o = min(best_o, secs)
            if not isinstance(trl, str):
                theirs, secs = timed(lambda: trl(ds, cap, strategy=strategy))
                best_t = min(best_t, secs)
        assert ours is not None
        record(name, lengths.size, f"ordcore pack_dataset {overlong}", len(ours), tokens, cap,
               best_o)
        if isinstance(trl, str):
            print(f"skipping TRL: {trl}")
            continue
        assert theirs is not None
        r = record(name, lengths.size, f"TRL pack_dataset {strategy}", len(theirs), tokens, cap,
                   best_t, "plans per 1,000-row map batch")
        r["ordcore_bfd_same_input_s"] = best_o
        r["ordcore_bfd_same_input_packs"] = len(ours)
        r["speedup"] = best_t / best_o
    tt = torchtune_packed()
    if isinstance(tt, str):
        print(f"skipping torchtune: {tt}")
        return
    sub = lengths[: args.torchtune_n]
    sub_ds = hf_dataset(sub, rng)
    tname = f"manpages {sub.size:,} @{cap}"
    ids = sub_ds.with_format("arrow")[:].column("input_ids").to_pylist()
    for split in (False, True):
        samples = [{"tokens": t[:cap] if not split else t, "labels": t[:cap] if not split else t}
                   for t in ids]
        tokens = int(sum(len(x["tokens"]) for x in samples))
        import contextlib
        import io

        with contextlib.redirect_stderr(io.StringIO()):  # its tqdm bar
            packed, tt_secs = timed(lambda: tt(samples, max_seq_len=cap,
                                               split_across_pack=split))
        overlong = "split" if split else "truncate"
        ours, o_secs = timed(lambda: pack_dataset(sub_ds, cap, overlong=overlong), repeat)
        note = ("cuts documents across packs (no boundaries kept)" if split
                else "next fit in input order on rows truncated to max_len")
        r = record(tname, sub.size, f"torchtune PackedDataset split={split}", len(packed),
                   tokens, cap, tt_secs, note)
        r["ordcore_bfd_same_input_s"] = o_secs
        r["ordcore_bfd_same_input_packs"] = len(ours)
        r["speedup"] = tt_secs / o_secs


# ---------------------------------------------------------------- harness


def split_lengths(lengths: np.ndarray, cap: int) -> np.ndarray:
    """Fragment lengths after splitting at ``cap`` (what ``overlong="split"`` packs)."""
    full = lengths // cap
    rest = lengths % cap
    return np.concatenate([np.repeat(cap, int(full.sum())), rest[rest > 0]]).astype(np.int64)


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    best = float("inf")
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller subsamples")
    ap.add_argument("--skip-nnlshp", action="store_true")
    ap.add_argument("--binpacking-n", type=int, default=20_000)
    ap.add_argument("--trl-n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hf-only", action="store_true", help="only the datasets section")
    ap.add_argument("--hf-n", type=int, default=20_000, help="man pages in the datasets section")
    ap.add_argument("--hf-max-len", type=int, default=4096)
    ap.add_argument("--torchtune-n", type=int, default=5_000,
                    help="rows of the torchtune PackedDataset subsample (pure Python)")
    args = ap.parse_args()
    if args.quick:
        args.binpacking_n, args.trl_n, args.repeat = 5_000, 200_000, 1
        args.torchtune_n = 1_000
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    sp = seqpacker_peer()
    if isinstance(sp, str):
        print(f"skipping seqpacker: {sp}")

    def record(dataset: str, n: int, method: str, packs: int, tokens: int, cap: int,
               secs: float, note: str = "") -> dict[str, Any]:
        row = {
            "dataset": dataset, "n": n, "method": method, "packs": packs,
            "efficiency": tokens / (packs * cap), "seconds": secs, "ns_per_item": secs / n * 1e9,
            "note": note,
        }
        rows.append(row)
        return row

    hf_section(args, rows, record, rng)
    sets: list[tuple[str, np.ndarray, int]] = []
    if not args.hf_only:
        with open(DATA / "graphcore_histograms.json") as f:
            hist = np.asarray(json.load(f)["wikipedia_512"], dtype=np.int64)
        wiki = rng.permutation(np.repeat(np.arange(1, hist.size + 1, dtype=np.int64), hist))
        sets.append(("wikipedia_512 (16.3M)", wiki, 512))
        for path in sorted(DATA.glob("doclens_cl100k_*.npy")):
            lengths = np.load(path)
            sets.append((path.stem.replace("doclens_cl100k_", ""), lengths[lengths > 0], 2048))

    for name, lengths, cap in sets:
        tokens = int(lengths.sum())
        items = split_lengths(lengths, cap)
        n = items.size
        algos = ["lpfhp", "spfhp", "bfd", "ffd", "nf"]
        if not args.skip_nnlshp and cap == 512:
            algos.insert(2, "nnlshp")
        for alg in algos:
            # Timed from the raw int64 lengths: histogram, packing, slot assignment, stats.
            plan, secs = timed(
                lambda: pack(lengths, cap, algorithm=alg, overlong="split",
                             max_seqs_per_pack=3 if alg == "nnlshp" else None),
                1 if alg == "nnlshp" else args.repeat,
            )
            record(name, n, f"ordcore {alg}", plan.num_packs, tokens, cap, secs)
            if alg == "bfd":
                bfd_secs = secs
                bfd_packs = plan.num_packs
            if alg == "lpfhp":
                lb = plan.stats.lower_bound_l2
        record(name, n, "lower bound L2", lb, tokens, cap, float("nan"))
        # Peers, each compared with ordcore bfd on the same input.
        sub_n = min(args.binpacking_n, n)
        sub = items[rng.choice(n, sub_n, replace=False)] if sub_n < n else items
        bp_packs, bp_secs = timed(lambda: binpacking_peer(sub, cap))
        ob, ob_secs = timed(lambda: pack(sub, cap, algorithm="bfd"), args.repeat)
        note = f"subsample of {sub_n:,}" if sub_n < n else ""
        r = record(name, sub_n, "binpacking.to_constant_volume", bp_packs, int(sub.sum()), cap,
                   bp_secs, note)
        r["ordcore_bfd_same_input_s"] = ob_secs
        r["ordcore_bfd_same_input_packs"] = ob.num_packs
        r["speedup"] = bp_secs / ob_secs
        trl_n = min(args.trl_n, n)
        sub = items[rng.choice(n, trl_n, replace=False)] if trl_n < n else items
        trl_bins, trl_secs = timed(lambda: trl_bfd(sub, cap))
        ob, ob_secs = timed(lambda: pack(sub, cap, algorithm="bfd"), args.repeat)
        note = f"subsample of {trl_n:,}" if trl_n < n else ""
        same = [p.tolist() for p in ob] == trl_bins
        note = (note + "; " if note else "") + f"packs identical to ordcore bfd: {same}"
        r = record(name, trl_n, "trl-bfd-py", len(trl_bins), int(sub.sum()), cap, trl_secs, note)
        r["ordcore_bfd_same_input_s"] = ob_secs
        r["ordcore_bfd_same_input_packs"] = ob.num_packs
        r["speedup"] = trl_secs / ob_secs
        if not isinstance(sp, str):
            sp_packs, sp_secs = timed(lambda: sp(items, cap), args.repeat)
            r = record(name, n, "seqpacker obfd", sp_packs, tokens, cap, sp_secs)
            r["ordcore_bfd_same_input_s"] = bfd_secs
            r["ordcore_bfd_same_input_packs"] = bfd_packs
            r["speedup"] = sp_secs / bfd_secs

    print(f"\nordcore {ordcore.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    hdr = f"{'dataset':24} {'n':>11} {'method':30} {'packs':>10} {'eff%':>8} {'seconds':>9} {'ns/item':>8} {'bfd speed-up':>13}  note"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        spd = f"{r['speedup']:.0f}x" if "speedup" in r else ""
        if "ordcore_bfd_same_input_packs" in r:
            spd += f" ({r['ordcore_bfd_same_input_packs']:,} packs)"
        secs = "" if np.isnan(r["seconds"]) else f"{r['seconds']:.4f}"
        nsi = "" if np.isnan(r["seconds"]) else f"{r['ns_per_item']:.1f}"
        print(f"{r['dataset']:24} {r['n']:>11,} {r['method']:30} {r['packs']:>10,} "
              f"{100 * r['efficiency']:>8.3f} {secs:>9} {nsi:>8} {spd:>13}  {r['note']}")
    out = ROOT / "bench-results"
    out.mkdir(exist_ok=True)
    with open(out / "packing.json", "w") as f:
        json.dump({"rows": rows, "load": os.getloadavg()[0]}, f, indent=1, default=float)
    print(f"\nwrote {out / 'packing.json'}")


if __name__ == "__main__":
    main()

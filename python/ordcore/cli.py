"""The ``ordcore`` command line (also ``python -m ordcore``).

Subcommands: ``index build|search|eval|info``, ``pack``, ``scan``, ``plugins``,
``sample-data``, ``demo``.
Errors print one line and exit with status 2; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ordcore._text import fmt_bytes as _fmt_bytes
from ordcore._text import table as _table
from ordcore.errors import OrdcoreError

EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that point at the right ``--help``."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"ordcore: error: {message} (see '{self.prog} --help')\n")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Keeps the examples' line breaks and shows each option's default (except ``None``,
    whose meaning the help text itself gives)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _check_output(option: str, path: str) -> None:
    """Refuse an output path that cannot be written, before any work is done."""
    target = Path(path)
    if target.is_dir():
        raise CliError(f"{option} {path}: is a directory, not a file")
    folder = target.resolve().parent
    if not folder.is_dir():
        raise CliError(f"{option} {path}: folder {folder} does not exist")


def _int_list(text: str) -> list[int]:
    parts = text.split(",")
    if any(not p.strip() for p in parts):
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r} (an entry is empty)"
        )
    return [_positive_int(p) for p in parts]


# --------------------------------------------------------------------------- index


def _cmd_index_build(args: argparse.Namespace) -> int:
    from ordcore import ann
    from ordcore._io import read_vectors

    X = read_vectors(args.vectors)
    if X.shape[0] == 0:
        raise CliError(f"{args.vectors}: holds no vectors")
    _check_output("-o", args.output)
    index = ann.BQGraphIndex(
        X.shape[1],
        metric=args.metric,
        bits=args.bits if args.bits == "auto" else int(args.bits),
        R=args.R,
        L_build=args.L_build,
        alpha=args.alpha,
        rotation=None if args.rotation == "none" else args.rotation,
        seed=args.seed,
        rerank_dtype=args.rerank_dtype,
    )
    t0 = time.perf_counter()
    index.add(X, num_threads=args.threads, progress=not args.quiet and _has_tqdm())
    build_s = time.perf_counter() - t0
    index.save(args.output)
    mem = index.memory_usage()
    print(f"vectors      {len(index):,}")
    print(f"dimension    {X.shape[1]}")
    print(f"build time   {build_s:.2f} s")
    print(f"codes        {index.bits} bits, rotation {index.rotation}")
    if index.choice is not None:
        print(f"choice       {index.choice['reason']}")
    for part in ("codes", "graph", "float_vectors"):
        print(f"memory {part:<14}{_fmt_bytes(mem[part])}")
    print(f"saved        {args.output}")
    return 0


def _has_tqdm() -> bool:
    import importlib.util

    return importlib.util.find_spec("tqdm") is not None


def _load_index(path: str) -> Any:
    from ordcore import ann

    if Path(path).is_dir():
        raise CliError(f"{path}: is a directory, not an index file")
    if not Path(path).is_file():
        raise CliError(f"{path}: no such file")
    return ann.BQGraphIndex.load(path)


def _cmd_index_search(args: argparse.Namespace) -> int:
    from ordcore._io import read_vectors

    if args.output:
        _check_output("-o", args.output)
    index = _load_index(args.index)
    Q = read_vectors(args.queries)
    ids, dists = index.search(Q, k=args.k, ef_search=args.ef_search, num_threads=args.threads,
                              degree=args.degree)
    if args.output:
        np.savez(args.output, ids=ids, distances=dists)
        print(f"wrote ids and distances {ids.shape} to {args.output}")
    else:
        for row in range(min(len(ids), 10)):
            print(f"query {row}: " + " ".join(f"{i}:{d:.4f}" for i, d in zip(ids[row], dists[row])))
        if len(ids) > 10:
            print(f"... {len(ids) - 10} more queries (use -o RESULTS.npz)")
    return 0


def _cmd_index_eval(args: argparse.Namespace) -> int:
    from ordcore import ann
    from ordcore._io import read_vectors

    index = _load_index(args.index)
    Q = read_vectors(args.queries)
    if args.truth:
        truth = read_vectors(args.truth)
        if truth.dtype.kind not in "iu":
            raise CliError(f"--truth {args.truth}: expected integer ids, got {truth.dtype}")
        if truth.shape[1] < args.k:
            raise CliError(f"--truth {args.truth}: has {truth.shape[1]} columns, fewer than k={args.k}")
        truth = truth[:, : args.k]
        if truth.shape[0] != Q.shape[0]:
            raise CliError(f"--truth has {truth.shape[0]} rows for {Q.shape[0]} queries")
    else:
        base = read_vectors(args.exact)
        if base.ndim == 2 and base.shape[1] != index.dim:
            raise CliError(
                f"--exact {args.exact}: dimension {base.shape[1]} does not match the index "
                f"dimension {index.dim}"
            )
        truth, _ = ann.exact_search(base, Q, args.k, metric=index.metric)
    rows = []
    for ef in args.ef_search:
        t0 = time.perf_counter()
        found, _ = index.search(Q, k=args.k, ef_search=ef, num_threads=args.threads,
                                degree=args.degree)
        elapsed = time.perf_counter() - t0
        rows.append(
            {"ef_search": ef, "recall": ann.recall_at_k(found, truth), "qps": len(Q) / elapsed}
        )
    if args.json:
        print(json.dumps({"k": args.k, "results": rows}, indent=2))
    else:
        print(
            _table(
                ["ef_search", f"recall@{args.k}", "QPS"],
                [(r["ef_search"], f"{r['recall']:.4f}", f"{r['qps']:,.0f}") for r in rows],
            )
        )
    return 0


def _cmd_index_info(args: argparse.Namespace) -> int:
    index = _load_index(args.index)
    print(f"{'file':<16}{args.index}")
    print(f"{'vectors':<16}{len(index):,}")
    for key in ("dim", "metric", "bits", "R", "L_build", "alpha", "rotation", "seed", "rerank_dtype",
                "search_degree"):
        print(f"{key:<16}{getattr(index, key)}")
    if index.choice is not None:
        print(f"{'choice':<16}{index.choice['reason']}")
    mem = index.memory_usage()
    for part in ("codes", "graph", "float_vectors"):
        print(f"memory {part:<15}{_fmt_bytes(mem[part])}")
    print(f"{'vectors mapped':<16}{mem['float_vectors_mapped']}")
    return 0


# --------------------------------------------------------------------------- pack


def _unpacked_rows(lengths: np.ndarray, max_len: int, overlong: str) -> int:
    """Rows needed without packing (one sequence per row) under the overlong policy."""
    if overlong == "split":
        return int(np.ceil(lengths / max_len).sum())
    if overlong == "drop":
        return int(np.count_nonzero(lengths <= max_len))
    return len(lengths)


def _print_pack_stats(
    lengths: np.ndarray, max_len: int, overlong: str, plan: Any, seconds: float
) -> None:
    stats = plan.stats
    rows = _unpacked_rows(lengths, max_len, overlong)
    unpacked_eff = stats.real_tokens / max(rows * max_len, 1)
    print(f"sequences          {len(lengths):,} ({int(lengths.sum()):,} tokens)")
    print(f"packs              {stats.num_packs:,} (unpacked: {rows:,} rows)")
    print(f"efficiency         {stats.efficiency:.4%}")
    print(f"padding            {1 - unpacked_eff:.2%} unpacked -> {1 - stats.efficiency:.2%} packed")
    print(
        f"lower bound        {stats.lower_bound_sum:,} packs (ceil(sum/L)); "
        f"Martello-Toth L2: {stats.lower_bound_l2:,}"
    )
    print(
        f"{'overlong':<19}{overlong}: {stats.split_sequences:,} split, "
        f"{stats.truncated_sequences:,} truncated, {stats.dropped_sequences:,} dropped "
        f"sequences ({stats.dropped_tokens:,} tokens dropped)"
    )
    print(f"planning time      {seconds * 1e3:.1f} ms")


def _cmd_pack(args: argparse.Namespace) -> int:
    from ordcore import packing
    from ordcore._io import read_lengths
    from ordcore.packing import _files

    if args.output:
        _check_output("-o", args.output)
        src, dst = Path(args.lengths), Path(args.output)
        if dst.exists() and src.exists() and os.path.samefile(src, dst):
            raise CliError(
                f"-o {args.output}: is the input {args.lengths}; write to another path "
                "(packing would replace the tokens it reads)"
            )
    out = Path(args.output) if args.output else None
    packed_out = out is not None and out.suffix.lower() in (".parquet", ".pq")
    table = None
    if _files.is_token_file(args.lengths):
        from ordcore.packing import _arrow

        table = _files.read_token_table(args.lengths, split=args.split)
        columns = _arrow.packed_columns(table.schema, args.token_column)
        lengths = _arrow.token_lengths(table, args.token_column, columns)
    else:
        if packed_out:
            raise CliError(
                f"-o {args.output}: packed Parquet needs tokens (a .parquet, .jsonl or "
                f"save_to_disk input), {args.lengths} holds lengths; write the plan (.npz)"
            )
        lengths = read_lengths(args.lengths)
    if lengths.size == 0:
        raise CliError(f"{args.lengths}: holds no lengths")
    t0 = time.perf_counter()
    if table is not None and args.overlong in packing.PACK_DATASET_OVERLONG:
        from ordcore.packing._hf import plan_for_lengths

        plan = plan_for_lengths(
            lengths, args.max_len, algorithm=args.algorithm, overlong=args.overlong,
            max_seqs_per_pack=args.max_seqs_per_pack, seed=0, token_column=args.token_column,
        )
    else:
        try:
            plan = packing.pack(
                lengths,
                args.max_len,
                algorithm=args.algorithm,
                max_seqs_per_pack=args.max_seqs_per_pack,
                overlong=args.overlong,
                # token tables: empty rows are left out
                allow_empty=table is not None or args.allow_empty,
            )
        except OrdcoreError as exc:
            if "allow_empty=True" not in str(exc):
                raise
            # The library's advice, in the command line's terms.
            raise CliError(str(exc).replace("pass allow_empty=True", "pass --allow-empty")) from None
    seconds = time.perf_counter() - t0
    _print_pack_stats(lengths, args.max_len, args.overlong, plan, seconds)
    if out is not None and packed_out:
        assert table is not None
        packed = _arrow.pack_table(table, plan, columns, token_column=args.token_column)
        _files.write_parquet_atomic(packed, out)
        print(f"saved packed rows  {out} ({packed.num_rows:,} rows; columns "
              f"{', '.join(packed.column_names)})")
    elif out is not None:
        plan.to_npz(out)
        print(f"saved plan         {out}")
    return 0


# --------------------------------------------------------------------------- scan


def _cmd_scan(args: argparse.Namespace) -> int:
    from ordcore import sfc

    if args.plot:
        if importlib.util.find_spec("matplotlib") is None:
            raise CliError("--plot needs matplotlib: pip install 'ordcore[plot]'")
        _check_output("--plot", args.plot)
    order = sfc.scan_order(args.height, args.width, args.kind)
    loc = sfc.locality(order, args.height, args.width)
    print(f"{args.kind} scan of a {args.height}x{args.width} grid")
    for key, value in loc._asdict().items():
        print(f"{key:<22}{value:.4f}" if isinstance(value, float) else f"{key:<22}{value}")
    if args.plot:
        _plot_scan(order, args.height, args.width, args.kind, args.plot)
        print(f"plot written to {args.plot}")
    return 0


PLOT_MAX_PX = 2000
"""The longest side of a ``scan --plot`` figure, in pixels."""

PLOT_PATH_MAX_CELLS = 250
"""Grids with at most this many cells a side are drawn as a path (at least 8 px a cell);
larger ones as an image of each cell's visiting step."""


def _plot_scan(order: np.ndarray, height: int, width: int, kind: str, path: str) -> None:
    """Draw the scan in a figure of at most ``PLOT_MAX_PX`` pixels a side: the path itself
    for small grids (lines thinner as cells shrink), for large ones each cell coloured by
    the step at which the scan visits it (strided down to the pixel budget), so memory and
    file size stay bounded whatever the grid."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise CliError("--plot needs matplotlib: pip install 'ordcore[plot]'") from None
    dpi = 100
    cell_px = min(100 / 3, (PLOT_MAX_PX - 100) / max(height, width))  # 100 px for margins
    inches = (max(3.0, width * cell_px / dpi), max(3.0, height * cell_px / dpi))
    fig, ax = plt.subplots(figsize=inches)
    try:
        if max(height, width) <= PLOT_PATH_MAX_CELLS:
            rows, cols = np.divmod(order, width)
            ax.plot(cols, rows, "-", color="tab:blue", linewidth=min(1.5, 0.2 * cell_px))
            ax.scatter(cols[:1], rows[:1], color="tab:green", zorder=3, label="start")
            ax.scatter(cols[-1:], rows[-1:], color="tab:red", zorder=3, label="end")
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=2, fontsize="small")
            title = f"{kind} scan, {height}x{width}"
        else:
            step = max(1, -(-max(height, width) // (PLOT_MAX_PX - 100)))
            rank = np.empty(height * width, dtype=np.float32)
            rank[order] = np.arange(height * width, dtype=np.float32)
            image = rank.reshape(height, width)[::step, ::step]
            ax.imshow(image, cmap="viridis", interpolation="nearest",
                      extent=(-0.5, width - 0.5, height - 0.5, -0.5))  # fmt: skip
            title = f"{kind} scan, {height}x{width}: colour = visiting step"
            if step > 1:
                title += f" (every {step}th cell)"
        ax.set_xlim(-0.5, width - 0.5)
        ax.set_ylim(height - 0.5, -0.5)
        ax.set_aspect("equal")
        ax.set_title(title)
        fig.tight_layout()
        fig.savefig(path, dpi=dpi)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------- sample-data


def _cmd_sample_data(args: argparse.Namespace) -> int:
    from ordcore import datasets

    folder = Path(args.output)
    if folder.exists() and not folder.is_dir():
        raise CliError(f"-o {args.output}: is a file, not a folder")
    for path in datasets.export(folder):
        print(f"{str(path):<28} {datasets.EXPORT_FILES[path.name]}")
    return 0


# --------------------------------------------------------------------------- plugins


def _cmd_plugins(args: argparse.Namespace) -> int:
    from ordcore import plugins

    infos = plugins.list_plugins()
    comps = plugins.list_components(args.kind)
    conflict = "; ".join(i.error or "" for i in infos if i.status == "conflict") or None
    failed = any(i.status in ("error", "conflict") for i in infos)
    if args.json:
        out = {
            "plugins": [asdict(i) for i in infos],
            "components": [
                {
                    "kind": c.kind,
                    "name": c.name,
                    "plugin": c.plugin,
                    "plugin_version": c.plugin_version,
                    "requires": list(c.requires),
                    "missing": c.missing_requirements(),
                    "description": c.description,
                }
                for c in comps
            ],
            "conflict": conflict,
        }
        print(json.dumps(out, indent=2))
        return 1 if failed else 0
    print("plugins:")
    for info in infos:
        line = f"  {info.name:<20} {info.version:<10} {info.status:<9}"
        if info.distribution and info.distribution != info.name:
            line += f" ({info.distribution})"
        print(line.rstrip())
        if info.error:
            print(f"      {info.error}")
    print("components:")
    for c in comps:
        missing = c.missing_requirements()
        note = f"  [missing: {', '.join(missing)}]" if missing else ""
        print(f"  {c.key:<28} {c.plugin:<14} {c.description}{note}")
    return 1 if failed else 0


# --------------------------------------------------------------------------- parser

_EXAMPLES = {
    "build": "  ordcore index build base.fvecs -o sift.ordann --metric l2 --rotation hadamard\n"
    "  ordcore index build emb.npz:vectors -o emb.ordann --metric cosine --R 32",
    "search": "  ordcore index search emb.ordann queries.npy -k 10 --ef-search 64 -o results.npz",
    "eval": "  ordcore index eval sift.ordann queries.fvecs --truth gt.ivecs -k 10 "
    "--ef-search 16,32,64,128\n"
    "  ordcore index eval emb.ordann queries.npy --exact emb.npy -k 10 --json",
    "info": "  ordcore index info emb.ordann",
    "index": "  ordcore index build base.fvecs -o sift.ordann --metric l2 --rotation hadamard\n"
    "  ordcore index eval sift.ordann queries.fvecs --truth gt.ivecs -k 10\n"
    "  ordcore index search sift.ordann queries.fvecs -k 10 -o results.npz\n"
    "  ordcore index info sift.ordann",
    "pack": "  ordcore pack lengths.npy --max-len 8192 --algorithm lpfhp --overlong split\n"
    "  ordcore pack lengths.txt --max-len 2048 --algorithm bfd -o plan.npz\n"
    "  ordcore pack tokens.parquet --max-len 4096 --algorithm bfd --overlong truncate "
    "-o packed.parquet\n"
    "  ordcore pack saved_dataset/ --split train --max-len 4096 --overlong split -o packed.parquet",
    "scan": "  ordcore scan --height 14 --width 14 --kind hilbert --plot hilbert.png",
    "plugins": "  ordcore plugins\n  ordcore plugins --kind order --json",
    "demo": "  ordcore demo",
    "sample-data": "  ordcore sample-data -o .\n"
    "  ordcore index build base.fvecs -o glosses.ordann --metric cosine",
}


_COMMON = _Parser(add_help=False)
_COMMON.add_argument(
    "--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors"
)


def _parser_class(name: str) -> dict[str, Any]:
    return {
        "epilog": "examples:\n" + _EXAMPLES[name],
        "formatter_class": _HelpFormatter,
        "parents": [_COMMON],
    }


def _scan_kinds() -> list[str]:
    from ordcore.sfc import SCAN_KINDS

    return list(SCAN_KINDS)


def build_parser() -> argparse.ArgumentParser:
    from ordcore import __version__

    parser = _Parser(
        prog="ordcore",
        description="Order, pack, rotate and search vectors: ordcore's command line.",
        epilog="run 'ordcore demo' to see every module on bundled real data",
    )
    parser.add_argument("--version", action="version", version=f"ordcore {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    index = sub.add_parser(
        "index",
        help="build, search, evaluate and inspect BQ graph indexes",
        **_parser_class("index"),
    )
    isub = index.add_subparsers(
        dest="index_command", required=True, metavar="ACTION", parser_class=_Parser
    )

    p = isub.add_parser("build", help="build an index from a vector file", **_parser_class("build"))
    p.add_argument("vectors", help=".npy, .npz[:NAME], .fvecs, .bvecs or .ivecs")
    p.add_argument("-o", "--output", required=True, help="index file to write")
    p.add_argument("--metric", choices=["cosine", "ip", "l2"], default="cosine",
                   help="distance: cosine (1 - cos), ip (1 - <q, x>) or l2 (squared)")
    p.add_argument("--rerank-dtype", choices=["auto", "float32", "float16", "bfloat16", "int8"],
                   default="auto", help="element type of the vectors the exact rerank reads "
                                        "(auto, with --bits auto: float16, else bfloat16, when "
                                        "it holds the rows of the first add exactly, never "
                                        "under cosine; else float32)")
    p.add_argument("--bits", choices=["auto", "1", "2", "4", "8"], default="auto",
                   help="code bits per dimension (auto: the cheapest code estimated to reach "
                        "recall@10 0.97 on the data, 8 bits over 4 when its hot path is "
                        "within 25%% (not with --rerank-dtype int8); 2: sign + magnitude, "
                        "1: sign, "
                        "4 / 8: scalar codes scored against the query)")
    p.add_argument("--R", type=_positive_int, default=None,
                   help="max degree R of the graph (default 64; with 4/8-bit codes, chosen "
                        "or given, 56 below 64 dimensions)")
    p.add_argument("--L-build", type=_positive_int, default=None,
                   help="build beam width L (default 128; with 4/8-bit codes 64 below 64 "
                        "dimensions; with --bits auto and fewer than 50,000 rows 64, or 48 "
                        "for 4/8-bit codes below 64 dimensions)")
    p.add_argument("--alpha", type=float, default=1.2, help="RobustPrune alpha (>= 1)")
    p.add_argument("--rotation", choices=["auto", "none", "hadamard"], default="auto",
                   help="hadamard: center and rotate first (for Euclidean-native data); "
                        "auto: chosen with --bits auto, none with explicit bits")
    p.add_argument("--seed", type=int, default=0, help="seed of the build")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="threads (default: all cores)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar (the bar needs tqdm: pip install 'ordcore[progress]')")
    p.set_defaults(func=_cmd_index_build)

    p = isub.add_parser("search", help="search an index", **_parser_class("search"))
    p.add_argument("index", help="index file written by 'ordcore index build'")
    p.add_argument("queries", help=".npy, .npz[:NAME], .fvecs or .bvecs")
    p.add_argument("-k", type=_positive_int, default=10, help="neighbours per query")
    p.add_argument("--ef-search", type=_positive_int, default=64,
                   help="search beam width (raised to k if smaller)")
    p.add_argument("--degree", type=_positive_int, default=None,
                   help="neighbours expanded per node (default: automatic, "
                        "max(search_degree, 3 * beam) for 4/8-bit codes, all for 1/2-bit)")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="threads (default: all cores)")
    p.add_argument("-o", "--output", help="write ids and distances to this .npz")
    p.set_defaults(func=_cmd_index_search)

    p = isub.add_parser("eval", help="recall@k and QPS per ef_search", **_parser_class("eval"))
    p.add_argument("index", help="index file written by 'ordcore index build'")
    p.add_argument("queries", help=".npy, .npz[:NAME], .fvecs or .bvecs")
    truth = p.add_mutually_exclusive_group(required=True)
    truth.add_argument("--truth", help="ground-truth ids (.npy or .ivecs), nearest first")
    truth.add_argument("--exact", metavar="BASE", help="compute the truth by exact search")
    p.add_argument("-k", type=_positive_int, default=10, help="k of recall@k")
    p.add_argument("--ef-search", type=_int_list, default="16,32,64,128",
                   help="comma-separated ef_search values to sweep")
    p.add_argument("--degree", type=_positive_int, default=None,
                   help="neighbours expanded per node (default: automatic, "
                        "max(search_degree, 3 * beam) for 4/8-bit codes, all for 1/2-bit)")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="threads (default: all cores)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=_cmd_index_eval)

    p = isub.add_parser("info", help="print an index's parameters", **_parser_class("info"))
    p.add_argument("index", help="index file written by 'ordcore index build'")
    p.set_defaults(func=_cmd_index_info)

    p = sub.add_parser("pack", help="plan sequence packing from lengths or pack token files",
                       **_parser_class("pack"))
    p.add_argument("lengths", metavar="INPUT",
                   help="lengths (.npy, .npz[:NAME], a text file with one length per line) or "
                   "tokens (.parquet, .jsonl, a save_to_disk folder; needs 'ordcore[hf]')")
    p.add_argument("--token-column", default="input_ids",
                   help="column of token ids in a token file (every list column is packed)")
    p.add_argument("--split", default=None,
                   help="split of a saved DatasetDict")
    p.add_argument("--max-len", type=_positive_int, required=True, help="tokens per pack")
    p.add_argument(
        "--algorithm", choices=["lpfhp", "spfhp", "nnlshp", "bfd", "ffd", "nf"], default="lpfhp",
        help="histogram packers (lpfhp, spfhp, nnlshp), item-wise best/first fit decreasing "
        "(bfd, ffd) or next fit in input order (nf)",
    )
    p.add_argument("--max-seqs-per-pack", type=_positive_int, default=None,
                   help="at most this many sequences per pack (default: no limit)")
    p.add_argument("--overlong", choices=["error", "truncate", "split", "drop"], default="error",
                   help="what to do with sequences longer than --max-len")
    p.add_argument("--allow-empty", action="store_true",
                   help="leave zero lengths out of the plan instead of refusing them (empty "
                   "rows of a token file always are)")
    p.add_argument("-o", "--output",
                   help="write packed rows (TRL's format, from a token file) to this .parquet, "
                   "or the plan to this .npz")
    p.set_defaults(func=_cmd_pack)

    p = sub.add_parser("scan", help="locality of a patch scan order", **_parser_class("scan"))
    p.add_argument("--height", type=int, required=True, help="grid rows (patches)")
    p.add_argument("--width", type=int, required=True, help="grid columns (patches)")
    p.add_argument("--kind", default="hilbert", choices=_scan_kinds(), help="scan order")
    p.add_argument("--plot", metavar="FILE.png", help="draw the path (needs matplotlib)")
    p.set_defaults(func=_cmd_scan)

    p = sub.add_parser(
        "plugins",
        help="list plugins and components",
        description="List the plugins found through the 'ordcore' entry-point group, their "
        "status (loaded, error, conflict, disabled), load errors and components.",
        **_parser_class("plugins"),
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--kind", default=None, help="only list components of this kind")
    p.set_defaults(func=_cmd_plugins)

    p = sub.add_parser(
        "sample-data",
        help="write the bundled data as files the other commands read",
        description="Write the bundled real data (10,000 WordNet gloss embeddings with 200 "
        "queries and their exact top-10; token counts of 22,149 man pages) as base.fvecs, "
        "queries.fvecs, gt.ivecs, lengths.npy and lengths.txt.",
        **_parser_class("sample-data"),
    )
    p.add_argument("-o", "--output", default=".", help="folder to write the files to")
    p.set_defaults(func=_cmd_sample_data)

    p = sub.add_parser("demo", help="every module on bundled real data", **_parser_class("demo"))
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="threads (default: all cores)")
    p.set_defaults(func=_demo)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from ordcore.demo import run_demo

    return run_demo(num_threads=args.threads)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ordcore`` console script. Returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        result: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return result
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error. Point stdout at /dev/null so
        # the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (CliError, OrdcoreError, OSError, ValueError, TypeError, KeyError) as exc:
        if args.debug:
            raise
        message = str(exc) if not isinstance(exc, KeyError) else str(exc.args[0])
        print(f"ordcore: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ordcore: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

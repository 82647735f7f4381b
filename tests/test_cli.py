"""The ``ordcore`` command line: every subcommand, its errors and its file formats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ordcore import ann
from ordcore.errors import InvalidArgumentError
from ordcore._io import read_lengths, read_vecs, read_vectors
from ordcore.cli import main


def write_vecs(path: Path, arr: np.ndarray) -> None:
    """Write the TEXMEX .fvecs/.ivecs/.bvecs layout: int32 dim, then the row."""
    n, d = arr.shape
    header = np.full((n, 1), d, dtype="<i4").view(np.uint8)
    body = np.ascontiguousarray(arr).view(np.uint8).reshape(n, -1)
    np.concatenate([header, body], axis=1).tofile(path)


@pytest.fixture()
def vectors(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    base = rng.standard_normal((600, 24)).astype(np.float32)
    queries = rng.standard_normal((20, 24)).astype(np.float32)
    np.save(tmp_path / "base.npy", base)
    write_vecs(tmp_path / "queries.fvecs", queries)
    return tmp_path / "base.npy", tmp_path / "queries.fvecs", base, queries


def test_vecs_formats_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    for suffix, arr in (
        (".fvecs", rng.standard_normal((7, 5)).astype("<f4")),
        (".ivecs", rng.integers(-9, 9, (7, 5)).astype("<i4")),
        (".bvecs", rng.integers(0, 255, (7, 5)).astype(np.uint8)),
    ):
        write_vecs(tmp_path / f"x{suffix}", arr)
        np.testing.assert_array_equal(read_vecs(tmp_path / f"x{suffix}"), arr)


def test_truncated_fvecs_is_a_clear_error(tmp_path: Path) -> None:
    write_vecs(tmp_path / "x.fvecs", np.ones((3, 4), np.float32))
    data = (tmp_path / "x.fvecs").read_bytes()
    (tmp_path / "x.fvecs").write_bytes(data[:-1])
    with pytest.raises(ValueError, match="whole number of records"):
        read_vecs(tmp_path / "x.fvecs")


def test_npz_needs_a_name_when_ambiguous(tmp_path: Path) -> None:
    np.savez(tmp_path / "x.npz", a=np.ones((2, 3)), b=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="choose one"):
        read_vectors(tmp_path / "x.npz")
    assert read_vectors(f"{tmp_path / 'x.npz'}:b").sum() == 0


def test_lengths_text_file(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_text("3\n5\n7\n")
    np.testing.assert_array_equal(read_lengths(tmp_path / "l.txt"), [3, 5, 7])
    (tmp_path / "bad.txt").write_text("3\nfive\n")
    with pytest.raises(ValueError, match="one integer per line"):
        read_lengths(tmp_path / "bad.txt")


def test_index_build_search_eval_info(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_path, query_path, base, queries = vectors
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "--metric", "l2",
                 "--R", "16", "--L-build", "32", "-q"]) == 0
    out = capsys.readouterr().out
    assert "600" in out and "build time" in out
    assert main(["index", "search", str(index_path), str(query_path), "-k", "5",
                 "-o", str(tmp_path / "r.npz")]) == 0
    with np.load(tmp_path / "r.npz") as r:
        assert r["ids"].shape == (20, 5)
    capsys.readouterr()
    assert main(["index", "eval", str(index_path), str(query_path), "--exact", str(base_path),
                 "-k", "5", "--ef-search", "8,64", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["ef_search"] for r in report["results"]] == [8, 64]
    # The CLI reports exactly what the API computes.
    truth, _ = ann.exact_search(base, queries, 5, metric="l2")
    index = ann.BQGraphIndex.load(index_path)
    found, _ = index.search(queries, k=5, ef_search=64)
    assert report["results"][1]["recall"] == pytest.approx(ann.recall_at_k(found, truth))
    truth_path = tmp_path / "gt.npy"
    np.save(truth_path, truth)
    assert main(["index", "eval", str(index_path), str(query_path), "--truth", str(truth_path),
                 "-k", "5", "--ef-search", "64"]) == 0
    assert "recall@5" in capsys.readouterr().out
    assert main(["index", "info", str(index_path)]) == 0
    assert "l2" in capsys.readouterr().out


def test_index_degree_option_and_info(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--degree`` reaches ``search(degree=)`` in ``index search`` and ``index eval``, and
    ``index info`` prints the search-time degree bound."""
    base_path, query_path, base, queries = vectors
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "--metric", "l2",
                 "--bits", "8", "--R", "16", "--L-build", "32", "-q"]) == 0
    index = ann.BQGraphIndex.load(index_path)
    assert index.search_degree > 0
    capsys.readouterr()
    assert main(["index", "search", str(index_path), str(query_path), "-k", "5", "--ef-search", "8",
                 "--degree", "3", "-o", str(tmp_path / "r.npz")]) == 0
    want = index.search(queries, k=5, ef_search=8, degree=3)
    with np.load(tmp_path / "r.npz") as r:
        np.testing.assert_array_equal(r["ids"], want[0])
    capsys.readouterr()
    assert main(["index", "eval", str(index_path), str(query_path), "--exact", str(base_path),
                 "-k", "5", "--ef-search", "8", "--degree", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    truth, _ = ann.exact_search(base, queries, 5, metric="l2")
    assert report["results"][0]["recall"] == pytest.approx(ann.recall_at_k(want[0], truth))
    assert main(["index", "info", str(index_path)]) == 0
    assert f"search_degree   {index.search_degree}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["index", "search", str(index_path), str(query_path), "--degree", "0"])
    assert exc.value.code == 2
    assert "--degree" in capsys.readouterr().err


def test_pack_and_scan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "l.txt").write_text("\n".join(str(v) for v in [5, 3, 8, 2, 9, 1] * 20))
    assert main(["pack", str(tmp_path / "l.txt"), "--max-len", "10", "-o",
                 str(tmp_path / "plan.npz")]) == 0
    out = capsys.readouterr().out
    assert "efficiency" in out and (tmp_path / "plan.npz").exists()
    assert main(["scan", "--height", "14", "--width", "14", "--kind", "hilbert"]) == 0
    assert "14x14" in capsys.readouterr().out


def test_scan_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    assert main(["scan", "--height", "5", "--width", "7", "--kind", "snake",
                 "--plot", str(tmp_path / "s.png")]) == 0
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["index", "info", "missing.ordann"], "no such file"),
        (["pack", "missing.npy", "--max-len", "8"], "no such file"),
        (["scan", "--height", "0", "--width", "3"], "height"),
    ],
)
def test_errors_are_one_line_with_status_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordcore: error:") and message in err
    assert "Traceback" not in err and err.count("\n") == 1


def test_wrong_dimension_and_bad_option(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_path, _, _, _ = vectors
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "-q",
                 "--R", "8", "--L-build", "16"]) == 0
    np.save(tmp_path / "q.npy", np.ones((3, 7), np.float32))
    capsys.readouterr()
    assert main(["index", "search", str(index_path), str(tmp_path / "q.npy")]) == 2
    assert "dim" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["index", "build", str(base_path), "-o", "x", "--metric", "hamming"])
    assert exc.value.code == 2


def test_help_has_examples_and_module_entry_point() -> None:
    for args in (["index", "build"], ["index", "eval"], ["pack"], ["scan"], ["demo"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ordcore", *args, "--help"],
            capture_output=True, text=True, check=True,
        )
        assert "examples:" in proc.stdout


def test_debug_shows_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ordcore", "--debug", "index", "info", "missing.ordann"],
        capture_output=True, text=True,
    )
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_debug_after_the_subcommand() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ordcore", "index", "info", "missing.ordann", "--debug"],
        capture_output=True, text=True,
    )
    assert proc.returncode != 0 and "Traceback" in proc.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pack", "x.npy", "--max-len", "abc"], "--max-len"),
        (["pack", "x.npy", "--max-len", "-3"], "positive integer"),
        (["index", "search", "i", "q.npy", "--threads", "-1"], "--threads"),
        (["index", "build", "x.npy", "-o", "y", "--metric", "hamming"], "--metric"),
    ],
)
def test_usage_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "--help" in err


def test_pack_baseline_follows_the_overlong_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.save(tmp_path / "l.npy", np.array([100, 5, 30, 7]))
    assert main(["pack", str(tmp_path / "l.npy"), "--max-len", "40", "--overlong", "truncate"]) == 0
    out = capsys.readouterr().out
    assert "unpacked: 4 rows" in out and "1 truncated" in out
    assert main(["pack", str(tmp_path / "l.npy"), "--max-len", "40", "--overlong", "drop"]) == 0
    out = capsys.readouterr().out
    assert "unpacked: 3 rows" in out and "1 dropped" in out
    assert main(["pack", str(tmp_path / "l.npy"), "--max-len", "40", "--overlong", "split"]) == 0
    assert "unpacked: 6 rows" in capsys.readouterr().out


def test_pack_reads_npz_and_rejects_empty_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    np.savez(tmp_path / "l.npz", lengths=np.array([3, 4, 5]), other=np.array([1]))
    assert main(["pack", f"{tmp_path / 'l.npz'}:lengths", "--max-len", "8"]) == 0
    (tmp_path / "empty.txt").write_text("")
    capsys.readouterr()
    assert main(["pack", str(tmp_path / "empty.txt"), "--max-len", "8"]) == 2
    assert "holds no lengths" in capsys.readouterr().err


def test_pack_suggests_its_own_flag_for_empty_sequences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "l.txt").write_text("3\n0\n5\n")
    capsys.readouterr()
    assert main(["pack", str(tmp_path / "l.txt"), "--max-len", "8"]) == 2
    err = capsys.readouterr().err
    assert "pass --allow-empty" in err and "allow_empty=True" not in err
    assert main(["pack", str(tmp_path / "l.txt"), "--max-len", "8", "--allow-empty"]) == 0


def test_pack_refuses_to_write_over_its_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a fresh-user pass: -o equal to the token file replaced it with the packed rows."""
    pa = pytest.importorskip("pyarrow", reason="token files need pyarrow (ordcore[hf])")
    import pyarrow.parquet as pq

    src = tmp_path / "tokens.parquet"
    pq.write_table(pa.table({"input_ids": [[1, 2, 3], [4, 5]], "text": ["a", "b"]}), src)
    before = src.read_bytes()
    capsys.readouterr()
    for out in (src, tmp_path / "." / "tokens.parquet"):
        assert main(["pack", str(src), "--max-len", "8", "-o", str(out)]) == 2
        assert "is the input" in capsys.readouterr().err
    assert src.read_bytes() == before
    assert main(["pack", str(src), "--max-len", "8", "-o", str(tmp_path / "packed.parquet")]) == 0


def test_eval_rejects_float_truth(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_path, query_path, _, queries = vectors
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "-q",
                 "--R", "8", "--L-build", "16"]) == 0
    np.save(tmp_path / "t.npy", np.zeros((len(queries), 10), np.float32))
    capsys.readouterr()
    assert main(["index", "eval", str(index_path), str(query_path), "--truth",
                 str(tmp_path / "t.npy")]) == 2
    assert "integer ids" in capsys.readouterr().err


def test_trial_fixes_pipe_lists_directories_and_help(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    base_path, query_path, _, _ = vectors
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "-q"]) == 0
    # A reader that went away (`| head`) is not an error.
    proc = subprocess.Popen([sys.executable, "-m", "ordcore", "index", "search", str(index_path),
                             str(query_path), "-k", "3"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and err == ""
    capsys.readouterr()
    assert main(["index", "info", str(tmp_path)]) == 2
    assert "is a directory, not an index file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["index", "eval", str(index_path), str(query_path), "--exact", str(base_path),
              "--ef-search", "16,,32"])
    assert exc.value.code == 2
    assert "an entry is empty" in capsys.readouterr().err
    np.save(tmp_path / "wide.npy", np.ones((5, 30), np.float32))
    assert main(["index", "eval", str(index_path), str(query_path), "--exact",
                 str(tmp_path / "wide.npy")]) == 2
    assert "--exact" in capsys.readouterr().err
    helps = {sub: subprocess.run([sys.executable, "-m", "ordcore", "index", sub, "--help"],
                                 capture_output=True, text=True, check=True).stdout
             for sub in ("search", "eval", "build")}
    for out in helps.values():
        assert "(default: None)" not in out and "all cores" in out
    assert "(default: 16,32,64,128)" in " ".join(helps["eval"].split())


# --------------------------------------------------------------------------- cosmetics


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    assert captured.err.startswith("ordcore: error:"), captured.err
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    return captured.out, captured.err


def test_pack_overlong_line_reads_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It printed 'overlong (split   ) split 508, ...'."""
    np.save(tmp_path / "l.npy", np.array([5, 30, 8, 25]))
    assert main(["pack", str(tmp_path / "l.npy"), "--max-len", "10", "--overlong", "split"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("overlong"))
    assert line.split() == ["overlong", "split:", "2", "split,", "0", "truncated,", "0",
                            "dropped", "sequences", "(0", "tokens", "dropped)"]  # fmt: skip


@pytest.mark.parametrize("command", ["pack", "search", "build"])
def test_output_folder_is_checked_before_the_work(
    command: str, tmp_path: Path, vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`ordcore pack ... -o /nonexistent/plan.npz` printed the whole summary, then failed."""
    base_path, query_path, _, _ = vectors
    np.save(tmp_path / "l.npy", np.array([5, 3, 8]))
    index_path = tmp_path / "x.ordann"
    assert main(["index", "build", str(base_path), "-o", str(index_path), "-q",
                 "--R", "8", "--L-build", "16"]) == 0  # fmt: skip
    capsys.readouterr()
    missing = str(tmp_path / "nonexistent" / "out.npz")
    argv = {
        "pack": ["pack", str(tmp_path / "l.npy"), "--max-len", "10", "-o", missing],
        "search": ["index", "search", str(index_path), str(query_path), "-o", missing],
        "build": ["index", "build", str(base_path), "-q", "-o", missing],
    }[command]
    assert main(argv) == 2
    out, err = _one_line_error(capsys)
    assert out == "" and "nonexistent" in err and "does not exist" in err
    assert main([*argv[:-1], str(tmp_path)]) == 2  # a directory is no output file either
    out, err = _one_line_error(capsys)
    assert out == "" and "is a directory" in err


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_text_file_with_a_numpy_suffix(
    suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A text file named lens.npy reported NumPy's advice about pickled data."""
    path = tmp_path / f"lens{suffix}"
    path.write_text("5\n3\n8\n")
    assert main(["pack", str(path), "--max-len", "10"]) == 2
    _, err = _one_line_error(capsys)
    assert f"not a {suffix} file" in err and "pickle" not in err
    with pytest.raises(InvalidArgumentError, match=f"not a {suffix} file"):
        read_vectors(path)


def test_huge_max_len_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--max-len 99999999999999999999` printed an OverflowError traceback, exit 1."""
    np.save(tmp_path / "l.npy", np.array([5, 3, 8]))
    proc = subprocess.run(
        [sys.executable, "-m", "ordcore", "pack", str(tmp_path / "l.npy"),
         "--max-len", "99999999999999999999"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "max_len" in proc.stderr.replace("-", "_")
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- scan --plot


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.parametrize("height, width", [(14, 14), (500, 500), (7, 2000), (300, 40)])
def test_scan_plot_is_bounded(height: int, width: int, tmp_path: Path) -> None:
    """500 x 500 wrote a 16,666 px square PNG; every figure is now at most 2,000 px a side."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "s.png"
    assert main(["scan", "--height", str(height), "--width", str(width), "--plot", str(path)]) == 0
    w, h = _png_size(path)
    assert max(w, h) <= 2000 and min(w, h) >= 200
    assert (w > h) == (width > height) or width == height


def test_scan_plot_of_a_huge_grid_stays_small(tmp_path: Path) -> None:
    """3000 x 3000 ended in MemoryError: std::bad_alloc (2,000 x 2,000 was killed at 14 GB):
    under a 3 GiB address-space limit it now writes a bounded PNG."""
    pytest.importorskip("matplotlib")
    from isolated import run_isolated

    path = tmp_path / "big.png"
    result = run_isolated(
        f"""
        from ordcore.cli import main
        assert main(["scan", "--height", "3000", "--width", "3000", "--plot", {str(path)!r}]) == 0
        """,
        limit_bytes=3 * 2**30,
    )
    assert "plot written" in result.stdout
    assert max(_png_size(path)) <= 2000


# --------------------------------------------------------------------------- sample-data


def test_sample_data_writes_the_bundled_sets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ordcore import datasets

    assert main(["sample-data", "-o", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    g = datasets.load_glosses()
    np.testing.assert_array_equal(read_vecs(tmp_path / "base.fvecs"), g.base.astype(np.float32))
    np.testing.assert_array_equal(read_vecs(tmp_path / "queries.fvecs"), g.queries.astype(np.float32))
    np.testing.assert_array_equal(read_vecs(tmp_path / "gt.ivecs"), g.truth)
    lengths = datasets.load_doc_lengths()
    np.testing.assert_array_equal(read_lengths(str(tmp_path / "lengths.npy")), lengths)
    np.testing.assert_array_equal(read_lengths(str(tmp_path / "lengths.txt")), lengths)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(datasets.EXPORT_FILES)
    assert all(name in out for name in datasets.EXPORT_FILES)
    # A missing folder is created (it used to be refused), a file is refused with one line.
    assert main(["sample-data", "-o", str(tmp_path / "new" / "d")]) == 0
    assert sorted(p.name for p in (tmp_path / "new" / "d").iterdir()) == sorted(datasets.EXPORT_FILES)
    capsys.readouterr()
    assert main(["sample-data", "-o", str(tmp_path / "lengths.npy")]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_index_build_bits(
    tmp_path: Path,
    vectors: tuple[Path, Path, np.ndarray, np.ndarray],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--bits auto`` (the default) records and prints the choice; explicit bits and
    rotation are kept; a width outside {auto, 1, 2, 4, 8} is a usage error."""
    base_path, _, _, _ = vectors
    auto_path, four_path = tmp_path / "auto.ordann", tmp_path / "four.ordann"
    assert main(["index", "build", str(base_path), "-o", str(auto_path), "--metric", "l2",
                 "--R", "8", "--L-build", "16", "-q"]) == 0
    out = capsys.readouterr().out
    index = ann.BQGraphIndex.load(auto_path)
    assert index.choice is not None and index.choice["reason"] in out
    assert main(["index", "info", str(auto_path)]) == 0
    assert index.choice["reason"] in capsys.readouterr().out
    assert main(["index", "build", str(base_path), "-o", str(four_path), "--metric", "l2",
                 "--R", "8", "--L-build", "16", "-q", "--bits", "4",
                 "--rotation", "hadamard"]) == 0
    four = ann.BQGraphIndex.load(four_path)
    assert (four.bits, four.rotation, four.choice) == (4, "hadamard", None)
    with pytest.raises(SystemExit):
        main(["index", "build", str(base_path), "-o", "x", "--bits", "3"])
    assert "--bits" in capsys.readouterr().err


@pytest.mark.parametrize("bits", ["2", "4", "auto"])
def test_index_build_resolves_the_defaults_of_the_width(tmp_path: Path, bits: str) -> None:
    # The CLI leaves R / L_build to the index: the defaults of the code width (chosen or
    # given), the same as BQGraphIndex's.
    x = np.random.default_rng(7).standard_normal((1200, 16)).astype(np.float32)
    np.save(tmp_path / "base.npy", x)
    out = tmp_path / "ix.ordann"
    assert main(["index", "build", str(tmp_path / "base.npy"), "-o", str(out), "--metric", "l2",
                 "--bits", bits, "-q"]) == 0
    idx = ann.BQGraphIndex.load(out)
    assert isinstance(idx.bits, int)
    # bits="auto" resolves them with the rows of the build (a small base: a narrower beam).
    rows = len(x) if bits == "auto" else None
    assert (idx.R, idx.L_build) == ann._default_build(16, idx.bits, rows)
    if bits == "auto":
        assert (idx.R, idx.L_build) == ((64, 64) if idx.bits <= 2 else (56, 48))
    else:
        assert (idx.R, idx.L_build) == ((64, 128) if idx.bits <= 2 else (56, 64))

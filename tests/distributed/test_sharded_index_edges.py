"""ShardedIndex edge cases: crash consistency of the manifest commit, manifest validation,
the index before its first add, search arguments, Dataset adds (see conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ordcore
from ordcore import ann
from ordcore.distributed import ShardedIndex
from ordcore.distributed._shard import shard_of

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _x(n: int = 200, d: int = 8, seed: int = 0) -> Any:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _shard_files(path: Path) -> list[str]:
    return sorted(p.name for p in path.glob("shard-*.ordcann"))


def test_a_change_the_manifest_never_recorded_is_rolled_back_on_load(
    tmp_path: Path, ray_cluster: Any
) -> None:
    # A driver killed during add(): one shard committed (wrote its new file), the manifest
    # was never rewritten. load() must open the committed index, not refuse it.
    X = _x()
    path = tmp_path / "ix"
    with ShardedIndex(8, 2, path=path, metric="l2", bits=2) as ix:
        ix.add(X[:100])
        ix.add(X[100:150])
        assert len(_shard_files(path)) == 2  # superseded generations are removed
        want = ix.search(X[:5], 3, ef_search=150)
        new = np.arange(10**6, 10**6 + 40)
        new = new[shard_of(new, 2) == 1]
        actor = ix.actors[1]
        ray_cluster.get(actor.stage.remote("t", "0", X[150 : 150 + new.size], new,
                                           np.arange(new.size)))
        ray_cluster.get(actor.commit.remote("t"))  # the shard's file is newer than the manifest
        assert len(_shard_files(path)) == 3
    with ShardedIndex.load(path) as ix:
        assert len(ix) == 150
        assert len(_shard_files(path)) == 2  # the uncommitted generation is gone
        got = ix.search(X[:5], 3, ef_search=150)
        np.testing.assert_array_equal(got[0], want[0])
        ix.add(X[150:190])  # default ids continue at 150
        assert len(ix) == 190
    with ShardedIndex.load(path) as ix:
        assert len(ix) == 190
        np.testing.assert_array_equal(ix.get([189]), X[189:190])


def _manifest_error(path: Path, m: dict[str, Any], match: str) -> None:
    (path / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ordcore.IndexFormatError, match=match):
        ShardedIndex.load(path)


def test_load_validates_manifest_values(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    with ShardedIndex(8, 2, path=path, metric="l2", bits=2) as ix:
        ix.add(_x(60))
    good = json.loads((path / "manifest.json").read_text())
    _manifest_error(path, {**good, "num_shards": 0}, r"num_shards: must be an integer in \[1")
    _manifest_error(path, {**good, "dim": -1}, "dim:")
    _manifest_error(path, {**good, "next_id": 2**63 + 1}, "next_id:")
    _manifest_error(path, {**good, "next_id": -5}, "next_id:")
    _manifest_error(path, {**good, "next_id": "7"}, "next_id:")
    _manifest_error(path, {**good, "shards": good["shards"][::-1]},
                    r"shards\[0\]\.file: .* not a file of shard 0")
    _manifest_error(path, {**good, "shard_params": {**good["shard_params"], "bits": 3}},
                    "shard_params:")
    _manifest_error(path, {**good, "shard_params": None}, "shard_params:")
    (path / "manifest.json").write_text(json.dumps(good))
    with ShardedIndex.load(path) as ix:
        assert len(ix) == 60


def test_default_ids_stop_at_int64_max(tmp_path: Path) -> None:
    X = _x(4)
    with ShardedIndex(8, 2, path=tmp_path / "ix", metric="l2", bits=2) as ix:
        ix.add(X[:1], [2**63 - 1])
        before = json.loads((tmp_path / "ix" / "manifest.json").read_text())
        with pytest.raises(ordcore.InvalidArgumentError, match="ids: automatic ids .* 2\\*\\*63"):
            ix.add(X[1:3])
        assert json.loads((tmp_path / "ix" / "manifest.json").read_text()) == before
        ix.add(X[1:3], [5, 6])  # explicit ids still work
        assert len(ix) == 3
    with ShardedIndex.load(tmp_path / "ix") as ix:  # next_id 2**63 loads
        with pytest.raises(ordcore.InvalidArgumentError, match="automatic ids"):
            ix.add(X[3:])


def test_search_arguments_as_the_single_index(tmp_path: Path) -> None:
    X = _x(40, seed=3)
    single = ann.BQGraphIndex(8, metric="l2", bits=2)
    single.add(X, num_threads=1)
    want = single.search(X[:4], 5, ef_search=40, rerank=False)
    with ShardedIndex(8, 1, path=tmp_path / "one", metric="l2", bits=2) as ix:
        ix.add(X)
        got = ix.search(X[:4], 5, ef_search=40, rerank=False)  # code order, as the single
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    with ShardedIndex(8, 2, path=tmp_path / "two", metric="l2", bits=2) as ix:
        ix.add(X)
        full = ix.search(X[:4], 5, ef_search=40)
        for nt in (1, np.int64(2), None):
            np.testing.assert_array_equal(ix.search(X[:4], 5, ef_search=40, num_threads=nt)[0],
                                          full[0])
        with pytest.raises(ordcore.InvalidArgumentError, match="num_threads"):
            ix.search(X[:4], 5, num_threads=0)
        np.testing.assert_array_equal(ix.search(X[:4], 5, ef_search=40,
                                                timeout_s=float("inf"))[0], full[0])
        ids, _, missing = ix.search(X[:4], 5, ef_search=40, timeout_s=np.float64("inf"),
                                    allow_partial=np.True_)
        assert missing == () and np.array_equal(ids, full[0])
        with pytest.raises(ordcore.InvalidArgumentError, match="allow_partial: must be a bool"):
            ix.search(X[:4], 5, allow_partial="no")
        with pytest.raises(ordcore.InvalidArgumentError, match="timeout_s"):
            ix.search(X[:4], 5, timeout_s=float("nan"))


def test_before_the_first_add_as_the_single_index(tmp_path: Path) -> None:
    path = tmp_path / "ix"
    with ShardedIndex(8, 2, path=path) as ix:  # bits="auto": no shard file yet
        assert ix.bits == "auto"
        with pytest.raises(ordcore.UnknownIdError, match=r"not in the index, first \[1\]"):
            ix.remove([1])
        ix.remove([])
        ix.compact()
        with pytest.raises(ordcore.UnknownIdError, match="filter: .* first \\[5\\]"):
            ix.search(_x(2), 3, filter=np.array([5]))
        ids, _ = ix.search(_x(2), 3, filter=np.zeros(4, bool))
        assert (ids == -1).all()
        assert _shard_files(path) == []
        ix.add(_x(30))
        assert ix.bits != "auto" and len(ix) == 30


def test_numpy_scalar_parameters(tmp_path: Path) -> None:
    params = {"R": np.int64(16), "seed": np.int64(5), "alpha": np.float32(1.5),
              "bits": np.int64(2)}
    with ShardedIndex(8, 1, path=tmp_path / "ix", **params) as ix:
        ix.add(_x(20))
        assert ix.bits == 2
    m = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert m["params"]["R"] == 16 and m["params"]["seed"] == 5 and m["params"]["bits"] == 2
    with ShardedIndex.load(tmp_path / "ix") as ix:
        assert len(ix) == 20


def test_dataset_add_edge_cases(tmp_path: Path, ray_cluster: Any) -> None:
    import ray.data

    X = _x(40)
    path = tmp_path / "ix"
    with ShardedIndex(8, 2, path=path) as ix:  # bits="auto"
        # a refused add fixes no choice and creates no shard
        dup = ray.data.from_items([{"vector": x, "id": i % 20} for i, x in enumerate(X)])
        with pytest.raises(ordcore.InvalidArgumentError, match="appears twice"):
            ix.add(dup, id_column="id")
        assert ix.bits == "auto" and ix.choice is None and _shard_files(path) == []
        null = ray.data.from_items([{"vector": list(X[0])}, {"vector": None}])
        with pytest.raises(ordcore.InvalidArgumentError, match="vector: row 1 is null"):
            ix.add(null)
        ragged = ray.data.from_items([{"vector": list(X[0])}, {"vector": list(X[1][:7])}])
        with pytest.raises(ordcore.InvalidArgumentError, match=r"vector: row 1 has shape \(7,\)"):
            ix.add(ragged)
        with pytest.raises(ordcore.InvalidArgumentError, match="id_column: 'vector' is also"):
            ix.add(dup, id_column="vector")
        ix.add(ray.data.from_items([]))  # empty, no schema: nothing to add
        ix.add(ray.data.range(0))
        assert ix.bits == "auto" and len(ix) == 0 and _shard_files(path) == []
        ix.add(ray.data.from_items([{"vector": x} for x in X]))
        assert ix.choice is not None and ix.choice["base"] == 40 and len(ix) == 40
    with ShardedIndex(8, 2, path=tmp_path / "b", bits=2) as ix:
        null = ray.data.from_items([{"vector": list(X[0])}, {"vector": None}])
        with pytest.raises(ordcore.InvalidArgumentError, match="vector: row 1 is null"):
            ix.add(null)
        assert len(ix) == 0


def test_path_that_is_a_file(tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(ordcore.InvalidArgumentError, match="path: .* is a file"):
        ShardedIndex(8, 2, path=f, bits=2)
    assert f.read_text() == "x"

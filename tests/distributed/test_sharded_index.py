"""ordcore.distributed.ShardedIndex on a real local Ray cluster (see conftest.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ordcore
from ordcore import ann
from ordcore.distributed import ShardedIndex, merge_topk
from ordcore.distributed._shard import shard_of

pytestmark = pytest.mark.usefixtures("ray_cluster")


def _data(n: int = 1200, d: int = 16, nq: int = 40, seed: int = 0) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(np.float32)
    X[n // 2 : n // 2 + 20] = X[:20]  # exact duplicates: distance ties across shards
    Q = np.concatenate([X[:10], rng.standard_normal((nq - 10, d)).astype(np.float32)])
    return X, Q


def _exact_by_id(
    X: Any, ids: Any, Q: Any, k: int, metric: str = "l2"
) -> tuple[Any, Any]:
    """Brute force over all rows, ordered by (distance, id) (independent of the index)."""
    rows, dist = ann.exact_search(X, Q, X.shape[0], metric)
    lab = ids[rows]
    order = np.lexsort((lab, dist), axis=1)[:, :k]
    return np.take_along_axis(lab, order, 1), np.take_along_axis(dist, order, 1)


def _wait_dead(ray: Any, actor: Any) -> None:
    for _ in range(200):
        try:
            ray.get(actor.info.remote(), timeout=5)
        except ray.exceptions.RayActorError:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor still answers")


def _wait_restarted(ray: Any, actor: Any, old_pid: int) -> None:
    for _ in range(600):
        if ray.get(actor.info.remote(), timeout=60)["pid"] != old_pid:
            return
        time.sleep(0.05)
    raise AssertionError("the killed actor was not restarted")


def test_id_hash_is_splitmix64() -> None:
    # SplitMix64's first output from state 0 is 0xE220A8397B1DCDAF (Vigna's reference code).
    assert shard_of(np.array([0]), 2**62)[0] == 0xE220A8397B1DCDAF % 2**62
    counts = np.bincount(shard_of(np.arange(40_000), 4), minlength=4)
    assert counts.min() > 9_700  # consecutive ids spread evenly


def test_merge_orders_by_distance_then_id() -> None:
    a = (np.array([[5, 9, -1]]), np.array([[0.5, 1.0, np.inf]], np.float32))
    b = (np.array([[2, 7, 8]]), np.array([[0.5, 0.7, 1.0]], np.float32))
    ids, d = merge_topk([a[0], b[0]], [a[1], b[1]], 5)
    assert ids.tolist() == [[2, 5, 7, 8, 9]]
    assert d[0].tolist() == pytest.approx([0.5, 0.5, 0.7, 1.0, 1.0])


@pytest.mark.parametrize("shards", [1, 3, 20])
def test_merge_equals_sorting_every_candidate(shards: int) -> None:
    rng = np.random.default_rng(shards)
    ids = [rng.permutation(10_000)[:500].reshape(50, 10) for _ in range(shards)]
    dist = [np.sort(rng.integers(0, 6, (50, 10)).astype(np.float32), 1) for _ in range(shards)]
    dist[0][:5, 7:] = np.inf  # padding
    ids[0][:5, 7:] = -1
    got_ids, got_d = merge_topk(ids, dist, 10)
    all_ids, all_d = np.concatenate(ids, 1), np.concatenate(dist, 1)
    key = np.where(all_ids < 0, 2**62, all_ids)
    order = np.lexsort((key, all_d), axis=1)[:, :10]  # heavy ties: distances 0..5 only
    np.testing.assert_array_equal(got_ids, np.take_along_axis(all_ids, order, 1))
    np.testing.assert_array_equal(got_d, np.take_along_axis(all_d, order, 1))


def test_exhaustive_shards_merge_to_the_exact_top_k(tmp_path: Path) -> None:
    X, Q = _data()
    ids = np.random.default_rng(1).permutation(X.shape[0]).astype(np.int64) * 7 + 3
    with ShardedIndex(16, 4, path=tmp_path / "ix", metric="l2", R=16) as ix:
        ix.add(X, ids)
        assert sum(ix.shard_sizes) == X.shape[0] and min(ix.shard_sizes) > 0
        got_ids, got_d = ix.search(Q, 10, ef_search=X.shape[0])
    want_ids, want_d = _exact_by_id(X, ids, Q, 10)
    np.testing.assert_array_equal(got_ids, want_ids)
    np.testing.assert_allclose(got_d, want_d, rtol=1e-6, atol=1e-6)


def test_shards_share_parameters_threads_and_zero_copy(tmp_path: Path, ray_cluster: Any) -> None:
    with ShardedIndex(
        16, 2, path=tmp_path / "ix", num_cpus_per_shard=0.5, metric="l2", seed=11,
        rotation="hadamard", bits=2,
    ) as ix:
        q = ray_cluster.put(np.zeros((3, 16), np.float32))
        infos = ray_cluster.get([a.info.remote(q) for a in ix.actors])
        assert [i["num_threads"] for i in infos] == [1, 1]
        # the query arrived as a read-only view of the object store, not a copy
        assert not any(i["q_writeable"] or i["q_owndata"] for i in infos)
        m = json.loads((tmp_path / "ix" / "manifest.json").read_text())
        assert m["params"] == {"metric": "l2", "seed": 11, "rotation": "hadamard", "bits": 2}
        assert m["shard_params"] == m["params"] and m["choice"] is None and ix.choice is None
        assert m["id_hash"] == "splitmix64(id) % num_shards" and m["format_version"] == 2
        for s in m["shards"]:
            assert ann.BQGraphIndex.load(tmp_path / "ix" / s["file"]).seed == 11


def _sharded_vs_single(base: Any, queries: Any, metric: str, tmp: Path, **params: Any) -> None:
    truth, _ = ann.exact_search(base, queries, 10, metric)
    single = ann.BQGraphIndex(base.shape[1], metric=metric, **params)
    single.add(base)
    with ShardedIndex(base.shape[1], 4, path=tmp, metric=metric, **params) as ix:
        ix.add(base)
        for ef in (10, 32):
            r1 = ann.recall_at_k(single.search(queries, 10, ef_search=ef)[0], truth)
            r4 = ann.recall_at_k(ix.search(queries, 10, ef_search=ef)[0], truth)
            assert r4 >= r1, (metric, ef, r1, r4)


def test_sharded_recall_at_least_single_on_sift(shared_data: Path, tmp_path: Path) -> None:
    base = np.load(shared_data / "ann" / "sift_base.npy")[:10_000]
    queries = np.load(shared_data / "ann" / "sift_queries.npy")[:200]
    _sharded_vs_single(base, queries, "l2", tmp_path / "s", rotation="hadamard", R=32, bits=2)


def test_sharded_recall_at_least_single_on_glosses(shared_data: Path, tmp_path: Path) -> None:
    base = np.load(shared_data / "ann" / "glosses_base.npy")[:10_000]
    queries = np.load(shared_data / "ann" / "glosses_queries.npy")[:200]
    _sharded_vs_single(base, queries, "cosine", tmp_path / "g", R=32, bits=2)


def test_killed_shard_costs_a_retry_not_an_answer(tmp_path: Path, ray_cluster: Any) -> None:
    X, Q = _data()
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2") as ix:
        ix.add(X)
        want = ix.search(Q, 10, ef_search=32)
        pid = ray_cluster.get(ix.actors[1].info.remote())["pid"]
        # killed while idle: the next search waits for the restart and reloads the file
        ray_cluster.kill(ix.actors[1], no_restart=False)
        got = ix.search(Q, 10, ef_search=32)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        _wait_restarted(ray_cluster, ix.actors[1], pid)
        # killed during a search (a query batch large enough to be in flight)
        big = np.repeat(Q, 50, axis=0)
        out: dict[str, Any] = {}
        t = threading.Thread(target=lambda: out.update(r=ix.search(big, 10, ef_search=32)))
        t.start()
        time.sleep(0.05)
        ray_cluster.kill(ix.actors[2], no_restart=False)
        t.join(60)
        np.testing.assert_array_equal(out["r"][0], np.repeat(want[0], 50, axis=0))
        # acknowledged changes survive a restart
        ix.remove(np.arange(0, 1200, 2))
        pid = ray_cluster.get(ix.actors[0].info.remote())["pid"]
        ray_cluster.kill(ix.actors[0], no_restart=False)
        _wait_restarted(ray_cluster, ix.actors[0], pid)  # a fresh process, from the file
        ids, _ = ix.search(Q, 10, ef_search=64)
        assert not np.isin(ids, np.arange(0, 1200, 2)).any()


def test_timeout_and_allow_partial(tmp_path: Path) -> None:
    X, Q = _data()
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2") as ix:
        ix.add(X)
        ix.actors[1].__ray_call__.remote(lambda self: time.sleep(3))  # shard 1 stops answering
        with pytest.raises(ordcore.ShardTimeoutError, match=r"shards \[1\]") as err:
            ix.search(Q, 5, ef_search=X.shape[0], timeout_s=0.5)
        assert err.value.missing == (1,)
        ids, d, missing = ix.search(
            Q, 5, ef_search=X.shape[0], timeout_s=0.5, allow_partial=True
        )
    assert missing == (1,)
    keep = shard_of(np.arange(X.shape[0]), 3) != 1  # the rows shards 0 and 2 hold
    want_ids, want_d = _exact_by_id(X[keep], np.flatnonzero(keep), Q, 5)
    np.testing.assert_array_equal(ids, want_ids)


def test_save_load_and_manifest_checks(tmp_path: Path) -> None:
    X, Q = _data()
    path = tmp_path / "ix"
    with ShardedIndex(16, 2, path=path, metric="l2", R=16, bits=2) as ix:
        ix.add(X[:800])
        ix.add(X[800:])  # an incremental add
        ix.remove([5, 6, 7])
        ix.save()
        want = ix.search(Q, 10, ef_search=48)
    with ShardedIndex.load(path) as ix:
        assert len(ix) == X.shape[0] - 3 and ix.params == {"metric": "l2", "R": 16, "bits": 2}
        got = ix.search(Q, 10, ef_search=48)
        np.testing.assert_array_equal(got[0], want[0])
        ix.add(Q[:2] + 50)  # default ids continue after the largest id ever added
        assert ix.search(Q[:2] + 50, 1, ef_search=48)[0].ravel().tolist() == [1200, 1201]
    with pytest.raises(FileExistsError, match="ShardedIndex.load"):
        ShardedIndex(16, 2, path=path)

    m = json.loads((path / "manifest.json").read_text())
    shard_file = path / m["shards"][1]["file"]
    good = shard_file.read_bytes()
    shard_file.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(ordcore.IndexFormatError, match=r"shard 1: .*SHA-256"):
        ShardedIndex.load(path)
    shard_file.unlink()
    with pytest.raises(FileNotFoundError, match=r"shard 1: .* is missing"):
        ShardedIndex.load(path)
    shard_file.write_bytes(good)
    v1 = {k: v for k, v in m.items() if k not in ("shard_params", "choice")}
    (path / "manifest.json").write_text(json.dumps({**v1, "format_version": 1}))
    with ShardedIndex.load(path) as old:  # written before bits="auto": explicit parameters
        assert old.shard_params == old.params and old.choice is None and len(old) == 1199
        assert old.bits == 2
    (path / "manifest.json").write_text(json.dumps({**m, "format_version": 99}))
    with pytest.raises(ordcore.IndexFormatError, match="newer"):
        ShardedIndex.load(path)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(ordcore.IndexFormatError, match="not a valid manifest"):
        ShardedIndex.load(path)
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        ShardedIndex.load(tmp_path / "elsewhere")


def test_remove_and_re_add_across_shards(tmp_path: Path) -> None:
    X, Q = _data()
    gone = np.arange(0, 60)
    assert len(set(shard_of(gone, 4).tolist())) == 4
    with ShardedIndex(16, 4, path=tmp_path / "ix", metric="l2") as ix:
        ix.add(X)
        with pytest.raises(ordcore.UnknownIdError, match="not in the index"):
            ix.remove([3, 10**9])
        assert len(ix) == X.shape[0]  # nothing removed
        ix.remove(gone)
        assert len(ix) == X.shape[0] - gone.size
        ids, _ = ix.search(Q, 10, ef_search=X.shape[0])
        assert not np.isin(ids, gone).any()
        ix.add(X[gone] + 100, gone)  # the same ids, new vectors
        ids, _ = ix.search(X[gone] + 100, 1, ef_search=64)
        assert ids.ravel().tolist() == gone.tolist()


def test_dataset_add_streams_to_the_shards(tmp_path: Path, ray_cluster: Any) -> None:
    import ray.data

    X, Q = _data()
    ids = np.arange(X.shape[0], dtype=np.int64) * 3
    ds = ray.data.from_items([{"emb": x, "key": int(i)} for x, i in zip(X, ids)])
    with ShardedIndex(16, 2, path=tmp_path / "b", metric="l2") as b:
        b.add(X, ids)
        want_sizes, want = b.shard_sizes, b.search(Q, 10, ef_search=X.shape[0])[0]
    # Default CPUs leave a whole CPU free, so the Ray Data read tasks (1 CPU each) run: with
    # 3/4 of the 2 CPUs reserved by the shards this add never returned.
    with ShardedIndex(16, 2, path=tmp_path / "a", metric="l2") as a:
        assert a.num_cpus_per_shard * 2 <= 1.0
        done = threading.Event()
        result: list[Any] = []

        def run() -> None:
            try:
                a.add(ds, vector_column="emb", id_column="key")
            except BaseException as e:  # noqa: BLE001 - reported below
                result.append(e)
            done.set()

        threading.Thread(target=run, daemon=True).start()
        assert done.wait(120), "add of a ray.data.Dataset did not return"
        assert not result, result
        assert a.shard_sizes == want_sizes
        np.testing.assert_array_equal(a.search(Q, 10, ef_search=X.shape[0])[0], want)
        with pytest.raises(ordcore.InvalidArgumentError, match="no column 'vec'"):
            a.add(ds, vector_column="vec")
        dup = ray.data.from_items([{"emb": X[0], "key": 10**6}] * 2)
        with pytest.raises(ordcore.InvalidArgumentError, match="appears twice"):
            a.add(dup, vector_column="emb", id_column="key")
        assert len(a) == X.shape[0]


def test_add_failing_on_one_shard_names_it_and_leaves_it_unchanged(tmp_path: Path) -> None:
    X, Q = _data()
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2") as ix:
        ix.add(X[:600])
        before = ix.shard_sizes
        good = ix.actors[1].__ray_call__.remote(lambda self: str(self.folder))
        # shard 1 can no longer write its file: it fails after validation, at the commit
        ix.actors[1].__ray_call__.remote(lambda self: setattr(self, "folder", Path("/nonexistent")))
        with pytest.raises(ordcore.ClusterError, match=r"applied on shards \[0, 2\] but failed on shards \[1\]") as err:
            ix.add(X[600:])
        assert err.value.applied == (0, 2) and err.value.failed == (1,)
        new = np.arange(600, X.shape[0])
        per = np.bincount(ix.shard_of(new), minlength=3)
        assert ix.shard_sizes == [before[0] + per[0], before[1], before[2] + per[2]]
        m = json.loads((tmp_path / "ix" / "manifest.json").read_text())
        assert [s["count"] for s in m["shards"]] == ix.shard_sizes
        # shard 1 can write again: it answers from what it acknowledged (its file), and
        # takes its rows when they are sent again
        import ray

        path = ray.get(good)
        ix.actors[1].__ray_call__.remote(lambda self: setattr(self, "folder", Path(path)))
        ids, _ = ix.search(X[600:], 1, ef_search=64)
        assert not np.isin(ids, new[ix.shard_of(new) == 1]).any()
        redo = new[ix.shard_of(new) == 1]
        ix.add(X[redo], redo)
        ids, _ = ix.search(X[620:], 1, ef_search=64)  # rows 600..619 repeat rows 0..19
        np.testing.assert_array_equal(ids.ravel(), new[20:])


def test_unplaceable_shards_are_a_clear_error(tmp_path: Path, monkeypatch: Any) -> None:
    from ordcore.distributed import index

    # More than the cluster has: refused at once.
    t0 = time.perf_counter()
    with pytest.raises(ordcore.ClusterError, match=r"2 shards x 3 CPUs exceed the cluster's 2"):
        ShardedIndex(16, 2, path=tmp_path / "ix", num_cpus_per_shard=3)
    assert time.perf_counter() - t0 < 10
    assert not (tmp_path / "ix").exists()  # the folder it made is gone (it was left empty)
    # Within the cluster but not free now (another index holds 1.5 CPUs): the timeout.
    with ShardedIndex(16, 2, path=tmp_path / "hog", num_cpus_per_shard=0.75, metric="l2"):
        monkeypatch.setattr(index, "START_TIMEOUT_S", 1.0)
        with pytest.raises(ordcore.ClusterError, match=r"not placed within 1 s"):
            ShardedIndex(16, 2, path=tmp_path / "iy", num_cpus_per_shard=0.5)
        assert not (tmp_path / "iy").exists()
        # a folder that existed keeps what it held, and only that
        (tmp_path / "mine").mkdir()
        (tmp_path / "mine" / "notes.txt").write_text("x")
        with pytest.raises(ordcore.ClusterError, match=r"not placed within 1 s"):
            ShardedIndex(16, 2, path=tmp_path / "mine" / "a" / "b", num_cpus_per_shard=0.5)
        with pytest.raises(ordcore.ClusterError, match=r"not placed within 1 s"):
            ShardedIndex(16, 2, path=tmp_path / "mine", num_cpus_per_shard=0.5)
        assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_bad_input_changes_no_shard(tmp_path: Path, ray_cluster: Any) -> None:
    X, Q = _data()
    with pytest.raises(ordcore.InvalidArgumentError, match="num_shards"):
        ShardedIndex(16, 0, path=tmp_path / "z")
    with pytest.raises(ordcore.InvalidArgumentError, match="R:"):
        ShardedIndex(16, 2, path=tmp_path / "z", R=1)
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2") as ix:
        ix.add(X[:600])
        sizes, want = ix.shard_sizes, ix.search(Q, 10)
        with pytest.raises(ordcore.InvalidArgumentError, match="dimension 8 does not match"):
            ix.add(X[:5, :8])
        with pytest.raises(ordcore.InvalidArgumentError, match="dimension 8 does not match"):
            ix.search(Q[:, :8])
        with pytest.raises(ordcore.InvalidArgumentError, match="k:"):
            ix.search(Q, 0)
        with pytest.raises(ordcore.InvalidArgumentError, match=r"ids: id (\d+) \(row \1\) is already in the index"):
            ix.add(X[600:], np.arange(X.shape[0] - 600))  # collides with the first add
        bad = X[600:].copy()
        bad[40, 3] = np.nan
        with pytest.raises(ordcore.InvalidArgumentError, match="row 40 holds NaN"):
            ix.add(bad)
        # a dead shard fails the add before any shard applied it
        ray_cluster.kill(ix.actors[2], no_restart=True)
        _wait_dead(ray_cluster, ix.actors[2])  # ray.kill is asynchronous
        with pytest.raises(ordcore.ClusterError, match="shard 2 is unavailable.*no shard applied") as err:
            ix.add(X[600:])
        assert err.value.failed == (2,)
        with pytest.raises(ordcore.ClusterError, match="search: shard 2 is unavailable"):
            ix.search(Q)
        ids, _, missing = ix.search(Q, 10, ef_search=600, allow_partial=True)
        assert missing == (2,) and not np.isin(ids, np.flatnonzero(shard_of(np.arange(600), 3) == 2)).any()
        assert ix.shard_sizes == sizes
        for s in (0, 1):
            assert ray_cluster.get(ix.actors[s].info.remote())["len"] == sizes[s]
        assert not list((tmp_path / "ix").glob("*.staging"))


def test_dataset_blocks_reach_the_shards_without_the_driver(
    tmp_path: Path, ray_cluster: Any, monkeypatch: Any
) -> None:
    """Each block is routed by a Ray task of its own; the driver iterated every batch."""
    import ray.data

    X, Q = _data()
    keys = np.arange(X.shape[0], dtype=np.int64) * 5 + 10**5
    ds = ray.data.from_numpy_refs([ray_cluster.put(X[i:i + 300]) for i in range(0, 1200, 300)])
    keyed = ray.data.from_items([{"emb": x, "key": int(i)} for x, i in zip(X, keys)],
                                override_num_blocks=3)
    # explicit bits: with bits="auto" a sample of the first add (at most CHOICE_SAMPLE_ROWS
    # rows) is meant to reach the driver
    with ShardedIndex(16, 3, path=tmp_path / "ref", metric="l2", bits=2) as ref:
        ref.add(X[:50])
        ref.add(X, keys)
        ref.add(X[50:])
        want, want_sizes = ref.search(Q, 10, ef_search=1200)[0], ref.shard_sizes
    for name in ("iter_batches", "iter_rows", "take_batch", "take", "take_all", "to_pandas",
                 "iter_torch_batches"):
        def refuse(self: Any, *a: Any, name: str = name, **k: Any) -> Any:
            raise AssertionError(f"Dataset.{name} ran on the driver")
        monkeypatch.setattr(ray.data.Dataset, name, refuse)
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2", bits=2) as ix:
        ix.add(ds.limit(50), vector_column="data")  # default ids 0..49
        ix.add(keyed, vector_column="emb", id_column="key")
        ix.add(X[50:])  # default ids continue after the largest id
        assert ix.shard_sizes == want_sizes
        np.testing.assert_array_equal(ix.search(Q, 10, ef_search=1200)[0], want)
        # validation still comes first: a repeat across blocks, a NaN in the third block
        sizes = ix.shard_sizes
        dup = ray.data.from_items([{"emb": X[0], "key": 10**6}, {"emb": X[1], "key": 10**6}],
                                  override_num_blocks=2)
        with pytest.raises(ordcore.InvalidArgumentError, match="appears twice in this add"):
            ix.add(dup, vector_column="emb", id_column="key")
        bad = X.copy()
        bad[700, 2] = np.inf
        bad_ds = ray.data.from_numpy_refs([ray_cluster.put(bad[i:i + 300])
                                           for i in range(0, 1200, 300)])
        with pytest.raises(ordcore.InvalidArgumentError, match="row 700 holds NaN or inf"):
            ix.add(bad_ds, vector_column="data")
        assert ix.shard_sizes == sizes
        for s in range(3):
            assert ray_cluster.get(ix.actors[s].info.remote())["len"] == sizes[s]
        assert not list((tmp_path / "ix").glob("*.staging"))


@pytest.mark.filterwarnings("ignore:Use 'expr' instead of 'fn':UserWarning")
def test_dataset_blocks_a_filter_emptied_are_skipped(tmp_path: Path, ray_cluster: Any) -> None:
    """A block that filter() emptied has no columns: routing it failed the whole add."""
    import ray.data

    X, _ = _data(n=90)
    ds = ray.data.from_items([{"emb": x, "key": int(i)} for i, x in enumerate(X)],
                             override_num_blocks=3)
    kept = ds.filter(lambda r: r["key"] < 20)  # the 2nd and 3rd blocks end up empty
    with ShardedIndex(16, 2, path=tmp_path / "ix", metric="l2", bits=2) as ix:
        ix.add(kept, vector_column="emb", id_column="key")
        assert sum(ix.shard_sizes) == 20
        np.testing.assert_array_equal(ix.get(np.arange(20)), X[:20])


def test_default_shard_cpus_leave_one_cpu_for_dataset_tasks() -> None:
    """On 1 CPU the shards reserved 0.5 and a Dataset add waited forever for a 1-CPU task."""
    from ordcore.distributed.index import default_shard_cpus

    for total in (1.0, 1.5, 2.0, 3.0, 8.0, 64.0):
        for shards in (1, 2, 3, 7):
            cpus = default_shard_cpus(total, shards)
            assert cpus >= 0.01
            if total - 1.0 >= 0.01 * shards:
                assert total - cpus * shards >= 1.0
    assert default_shard_cpus(8.0, 2) == 3.5


def test_dataset_add_without_a_free_cpu_is_a_clear_error(tmp_path: Path,
                                                           ray_cluster: Any) -> None:
    """Ray Data's 1-CPU tasks could never be placed beside the shards: the add hung."""
    import ray.data

    X, _ = _data(n=40)
    ds = ray.data.from_items([{"emb": x} for x in X])
    total = ray_cluster.cluster_resources()["CPU"]
    with ShardedIndex(16, 2, path=tmp_path / "ix", metric="l2", bits=2,
                      num_cpus_per_shard=total / 2) as ix:
        with pytest.raises(ordcore.ClusterError, match=r"^X: a ray.data.Dataset needs 1 CPU"):
            ix.add(ds, vector_column="emb")
        assert sum(ix.shard_sizes) == 0
        ix.add(X)  # arrays need no Ray Data task
        assert sum(ix.shard_sizes) == 40


# -- the single-index API of the ANN codes issue, passed through ------------------------
def test_auto_bits_are_chosen_once_for_every_shard(tmp_path: Path, ray_cluster: Any) -> None:
    X, Q = _data(n=2000, d=32)
    with ShardedIndex(32, 3, path=tmp_path / "ix", metric="l2", bits="auto") as ix:
        assert ix.bits == "auto" and ix.choice is None and ix.shard_params is None
        assert ix.search(Q, 5)[0].tolist() == [[-1] * 5] * Q.shape[0]  # nothing added yet
        ix.add(X[:1500])
        want = ann.choose_codes(X[:1500], metric="l2", base_size=1500, seed=0)
        assert ix.choice == dict(want)
        assert ix.bits == want["bits"] and ix.rotation == want["rotation"]
        for s in range(3):  # every shard was created with the explicit choice
            got = ray_cluster.get(ix.actors[s].__ray_call__.remote(
                lambda self: (self._idx().bits, self._idx().rotation, self._idx().choice,
                              self._idx().R, self._idx().L_build)))
            # ... and the chosen width's default R / L_build (the single index's rule)
            assert got == (want["bits"], want["rotation"], None,
                           *ann._default_build(32, want["bits"]))
        ix.add(X[1500:])  # later adds keep the choice
        assert ix.choice == dict(want)
        single = ann.BQGraphIndex(32, metric="l2", bits=want["bits"], rotation=want["rotation"])
        single.add(X)
        np.testing.assert_array_equal(ix.search(Q, 10, ef_search=2000)[0],
                                      single.search(Q, 10, ef_search=2000)[0])
        m = json.loads((tmp_path / "ix" / "manifest.json").read_text())
        assert m["choice"] == json.loads(json.dumps(dict(want)))
        assert m["params"]["bits"] == "auto" and m["shard_params"]["bits"] == want["bits"]
        assert (m["shard_params"]["R"], m["shard_params"]["L_build"]) == ann._default_build(
            32, want["bits"])
    with ShardedIndex.load(tmp_path / "ix") as back:
        assert back.choice == ix.choice and back.bits == want["bits"]
    # an empty auto index saved and loaded still chooses on its first add
    with ShardedIndex(32, 2, path=tmp_path / "empty", metric="l2") as e:
        assert e.bits == "auto"
    with ShardedIndex.load(tmp_path / "empty") as e:
        assert e.bits == "auto" and len(e) == 0
        e.add(X[:1500])
        assert e.choice == dict(want)
    # a Dataset's first add: the choice from its rows, base_size its row count
    import ray.data

    with ShardedIndex(32, 2, path=tmp_path / "ds", metric="l2") as d:
        d.add(ray.data.from_numpy(X[:1500]), vector_column="data")
        assert d.choice is not None and d.choice["base"] == 1500
        assert (d.bits, d.rotation) == (want["bits"], want["rotation"])


def test_get_routes_ids_and_names_unknown_ones(tmp_path: Path) -> None:
    X, _ = _data()
    ids = np.arange(X.shape[0], dtype=np.int64) * 7
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2", bits=2) as ix:
        ix.add(X, ids)
        ask = ids[[5, 900, 5, 0, 1199]]
        np.testing.assert_array_equal(ix.get(ask), X[[5, 900, 5, 0, 1199]])
        assert ix.get(np.zeros(0, np.int64)).shape == (0, 16)
        ix.remove(ids[[900]])
        with pytest.raises(ordcore.UnknownIdError, match=r"first \[3, 6300\]"):
            ix.get(np.array([ids[1], 3, ids[900], ids[2]]))
        with pytest.raises((TypeError, ordcore.InvalidArgumentError), match="ids"):
            ix.get(np.array([1.0, 2.0]))
        # As the single index: a negative id is unknown (a KeyError), not a bad argument.
        with pytest.raises(ordcore.UnknownIdError, match="-1"):
            ix.get([-1])


def test_filtered_search_splits_allow_lists_by_shard(tmp_path: Path, ray_cluster: Any) -> None:
    X, Q = _data()
    ids = np.arange(X.shape[0], dtype=np.int64) * 3
    with ShardedIndex(16, 3, path=tmp_path / "ix", metric="l2", bits=2) as ix:
        ix.add(X, ids)
        rng = np.random.default_rng(1)
        allow = rng.choice(ids, 50, replace=False)
        rows = np.flatnonzero(np.isin(ids, allow))
        exact = _exact_by_id(X[rows], ids[rows], Q, 10, "l2")[0]
        got = ix.search(Q, 10, ef_search=1200, filter=allow)[0]
        np.testing.assert_array_equal(got, exact)
        bitmap = np.zeros(ids.max() + 1, bool)
        bitmap[allow] = True
        np.testing.assert_array_equal(ix.search(Q, 10, ef_search=1200, filter=bitmap)[0], exact)
        # each shard sees only its own ids; a shard with no share is not asked
        one = allow[shard_of(allow, 3) == 1]
        seen: list[Any] = []
        orig = ShardedIndex._filter_shares

        def spy(self: Any, flt: Any) -> Any:
            out = orig(self, flt)
            seen.append(out)
            return out

        ShardedIndex._filter_shares = spy  # type: ignore[method-assign]
        try:
            got = ix.search(Q, 60, ef_search=1200, filter=one)[0]
        finally:
            ShardedIndex._filter_shares = orig  # type: ignore[method-assign]
        assert list(seen[0]) == [1]
        assert set(got[got >= 0].tolist()) == set(one.tolist())
        assert (got[:, one.size:] == -1).all()
        with pytest.raises(ordcore.UnknownIdError):
            ix.search(Q, 10, filter=np.array([1]))  # 1 is not an id here
        with pytest.raises((TypeError, ordcore.InvalidArgumentError), match="filter"):
            ix.search(Q, 10, filter=np.ones((2, 2), bool))
        with pytest.raises((TypeError, ordcore.InvalidArgumentError), match="filter"):
            ix.search(Q, 10, filter=np.ones(4, np.float32))

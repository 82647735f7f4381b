"""ordcore.packing.torch: the collator against transformers' DataCollatorWithFlattening and
TRL's padding-free collator, packed batches through tiny transformers Llama and GPT-2 models
(random weights, config in code) against each sequence alone, and the streaming dataset's
rank split and exact resumption through torchdata's StatefulDataLoader."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import numpy as np
import pytest

import ordcore

torch = pytest.importorskip("torch", reason="ordcore.packing.torch needs torch")
from ordcore.packing import ShardedPackStream  # noqa: E402
from ordcore.packing.torch import PackedCollator, PackedIterableDataset  # noqa: E402


def examples(lengths: list[int], seed: int = 0, labels: bool = False) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        ex: dict[str, Any] = {"input_ids": rng.integers(3, 100, n).tolist()}
        if labels:
            ex["labels"] = rng.integers(3, 100, n).tolist()
        out.append(ex)
    return out


def assert_same_batch(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        if isinstance(b[k], torch.Tensor):
            assert a[k].dtype == b[k].dtype, k
            assert a[k].shape == b[k].shape, k
            assert torch.equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


# ---------------------------------------------------------------- collator vs peers


@pytest.mark.parametrize("with_labels", [False, True])
@pytest.mark.parametrize("start", [0, 2])
def test_flat_equals_data_collator_with_flattening(with_labels: bool, start: int) -> None:
    transformers = pytest.importorskip("transformers")
    feats = examples([5, 1, 0, 17, 3, 9], labels=with_labels)
    theirs = transformers.DataCollatorWithFlattening(
        return_flash_attn_kwargs=True, return_seq_idx=True, position_ids_start=start
    )([dict(f) for f in feats], return_tensors="pt")
    ours = PackedCollator(position_ids_start=start)(feats)
    assert_same_batch(ours, dict(theirs))


@pytest.mark.skipif(sys.version_info < (3, 11), reason="TRL 1.16 needs Python >= 3.11")
def test_packed_rows_equal_trl_padding_free() -> None:
    datasets = pytest.importorskip("datasets")
    sft = pytest.importorskip("trl.trainer.sft_trainer")
    from ordcore.packing import pack_dataset

    feats = examples([40, 3, 17, 64, 1, 22, 9, 30], seed=1, labels=True)
    packed = pack_dataset(datasets.Dataset.from_list(feats), 64)
    rows = [packed[i] for i in range(len(packed))]
    theirs = sft.DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)(rows)
    ours = PackedCollator(64)(rows)
    assert_same_batch(ours, dict(theirs))


def test_rows_layout_and_mask() -> None:
    feats = examples([5, 3, 0, 7, 2])
    out = PackedCollator(8, layout="rows", return_attention_mask=True, pad_id=1)(feats)
    ids, lab, pos, seg = (out[k] for k in ("input_ids", "labels", "position_ids", "seq_idx"))
    assert ids.shape == lab.shape == pos.shape == seg.shape and ids.shape[1] == 8
    assert ids.shape[0] == 3  # 17 tokens at 8 per row, bfd: [7], [5, 3], [2]
    cu = out["cu_seq_lens_q"].tolist()
    assert cu[-1] == ids.numel() and out["cu_seq_lens_k"].tolist() == cu
    flat_pos, flat_lab, flat_ids = pos.reshape(-1), lab.reshape(-1), ids.reshape(-1)
    for a, b in zip(cu[:-1], cu[1:]):
        assert flat_pos[a:b].tolist() == list(range(b - a))  # positions restart per segment
        assert flat_lab[a] == -100  # no label across a boundary
        assert (seg.reshape(-1)[a:b] == seg.reshape(-1)[a]).all()
    real = flat_ids != 1
    assert int(real.sum()) == 17
    assert (flat_lab[~real] == -100).all()
    mask = out["attention_mask"]
    assert mask.shape == (3, 1, 8, 8) and mask.dtype == torch.bool
    s = seg[:, :, None] == seg[:, None, :]
    assert torch.equal(mask[:, 0], s & torch.ones(8, 8, dtype=torch.bool).tril())
    fmask = PackedCollator(8, layout="rows", return_attention_mask=True,
                           mask_dtype=torch.float32)(feats)["attention_mask"]
    assert torch.equal(fmask == 0, mask)


def test_collator_bad_input() -> None:
    c = PackedCollator(8)
    with pytest.raises(ordcore.InvalidArgumentError, match="every sequence in the batch is empty"):
        c([{"input_ids": []}])
    with pytest.raises(ordcore.InvalidArgumentError, match="has 2 labels for 3 tokens"):
        c([{"input_ids": [1, 2, 3], "labels": [1, 2]}])
    with pytest.raises(ordcore.InvalidArgumentError, match="seq_lengths add up to 2"):
        c([{"input_ids": [1, 2, 3], "seq_lengths": [1, 1]}])
    with pytest.raises(ordcore.InvalidArgumentError, match="longer than max_len=8"):
        c([{"input_ids": list(range(9)), "seq_lengths": [9]}])
    with pytest.raises(ordcore.DTypeError, match="must be integers"):
        c([{"input_ids": [1.5]}])
    with pytest.raises(ordcore.InvalidArgumentError, match="mixes packed rows"):
        c([{"input_ids": [1], "seq_lengths": [1]}, {"input_ids": [2]}])
    with pytest.raises(ordcore.InvalidArgumentError, match="max_len: must be at least 1"):
        PackedCollator(0)


def test_collator_errors_name_the_feature() -> None:
    """Found by a fresh-user pass: bare IndexError / ValueError / TypeError / RuntimeError."""
    good = {"input_ids": [1, 2]}
    for bad, kind in ((5, "int"), (None, "NoneType"), (torch.tensor([3, 4]), "Tensor")):
        with pytest.raises(ordcore.InvalidArgumentError, match=f"features\\[1\\]: .*got {kind}"):
            PackedCollator()([good, bad])
    for key in ("input_ids", "labels"):
        f = {"input_ids": [1, 2, 3], key: [[1], [2, 3]]}
        with pytest.raises(ordcore.InvalidArgumentError, match=f"features\\[0\\]\\['{key}'\\]: .*ragged"):
            PackedCollator()([f])
    with pytest.raises(ordcore.InvalidArgumentError, match="holds ids beyond int64"):
        PackedCollator()([{"input_ids": np.array([5, 2**63 + 1], dtype=np.uint64)}])
    # A batch whose every sequence is dropped as overlong, in both layouts.
    for layout in ("flat", "rows"):
        with pytest.raises(ordcore.InvalidArgumentError, match="dropped"):
            PackedCollator(2, overlong="drop", layout=layout)([{"input_ids": [1, 2, 3]}])
    with pytest.raises(ordcore.InvalidArgumentError, match=r"features\[1\]: has 3 tokens"):
        PackedCollator(2, overlong="error")([{"input_ids": [1, 2]}, {"input_ids": [1, 2, 3]}])


# ---------------------------------------------------------------- tiny transformers models


def tiny_model(arch: str, attn: str) -> Any:
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    if arch == "llama":
        config = transformers.LlamaConfig(
            vocab_size=100, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        )
    else:
        config = transformers.GPT2Config(
            vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=256,
            attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, bos_token_id=1, eos_token_id=2,
        )
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn)
    return model.eval()


def token_losses(logits: Any, labels: Any) -> Any:
    """Per-token next-token cross entropy (the model's shift), 0 where the label is ignored."""
    lab = torch.nn.functional.pad(labels, (0, 1), value=-100)[..., 1:]
    return torch.nn.functional.cross_entropy(
        logits.transpose(1, 2).float(), lab, ignore_index=-100, reduction="none"
    )


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("path", ["position_ids-flat", "position_ids-rows", "4d-mask"])
def test_packed_batch_equals_each_sequence_alone(arch: str, attn: str, path: str) -> None:
    model = tiny_model(arch, attn)
    lengths = [7, 13, 1, 20, 5, 31, 2, 11]
    feats = examples(lengths, seed=2)
    layout = "flat" if path == "position_ids-flat" else "rows"
    collate = PackedCollator(
        32, layout=layout, return_attention_mask=path == "4d-mask",
        mask_dtype=torch.bool if attn == "sdpa" else torch.float32,
    )
    batch = collate(feats)
    assert ("attention_mask" in batch) == (path == "4d-mask")
    with torch.no_grad():
        out = model(**batch, use_cache=False)  # the whole batch, as the docstring says
        packed_logits = out.logits
        packed_loss = token_losses(packed_logits, batch["labels"])
        # Match each segment to its source sequence by its tokens.
        ids = batch["input_ids"].reshape(-1)
        cu = batch["cu_seq_lens_q"].tolist()
        flat_logits = packed_logits.reshape(-1, packed_logits.shape[-1])
        flat_loss = packed_loss.reshape(-1)
        remaining = list(range(len(feats)))
        total, count, max_diff = 0.0, 0, 0.0
        for a, b in zip(cu[:-1], cu[1:]):
            if (ids[a:b] == 0).all():
                continue  # the padding tail of a row (token ids of the data are >= 3)
            seg = ids[a:b].tolist()
            i = next(i for i in remaining if feats[i]["input_ids"] == seg)
            remaining.remove(i)
            alone_ids = torch.tensor([seg])
            alone_labels = alone_ids.clone()
            alone_labels[0, 0] = -100
            alone = model(input_ids=alone_ids, use_cache=False).logits
            max_diff = max(max_diff, float((flat_logits[a:b] - alone[0]).abs().max()))
            alone_loss = token_losses(alone, alone_labels)[0]
            np.testing.assert_allclose(flat_loss[a:b].numpy(), alone_loss.numpy(), atol=1e-4)
            total += float(alone_loss.sum())
            count += max(b - a - 1, 0)
        assert remaining == []  # every sequence was in the batch once
        assert max_diff < 1e-4, max_diff
        print(f"{arch} {attn} {path}: max |logits diff| {max_diff:.2e}")
        # The model's own loss (it shifts the labels) is the token mean over all sequences:
        # no position predicted a token of the next sequence.
        assert abs(float(out.loss) - total / count) < 1e-4


# ---------------------------------------------------------------- streaming


def stream_source(n: int = 600, seed: int = 0) -> list[np.ndarray]:
    """Sequences of globally unique ids (each token identifies its sequence and position)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 200, n)
    lengths[::53] = 0
    lengths[5::71] = 300  # longer than max_len: split
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return [np.arange(starts[i], starts[i + 1], dtype=np.int64) + 1 for i in range(n)]


def make_ds(src: list[np.ndarray], **kw: Any) -> PackedIterableDataset:
    args: dict[str, Any] = {"buffer_size": 50, "seed": 1}
    args.update(kw)
    return PackedIterableDataset(src, 128, **args)


def trained_tokens(rows: list[dict[str, Any]]) -> Counter[int]:
    """Tokens that carry a training signal (labels not ignored), with multiplicity."""
    c: Counter[int] = Counter()
    for r in rows:
        ids, lab = np.asarray(r["input_ids"]), np.asarray(r["labels"])
        c.update(ids[lab != -100].tolist())
    return c


@pytest.mark.parametrize("world_size", [1, 2, 3])
@pytest.mark.parametrize("remainder", ["drop", "pad"])
def test_ranks_see_every_sequence_once(world_size: int, remainder: str) -> None:
    src = stream_source()
    want = Counter(np.concatenate(src).tolist())
    per_rank = [list(make_ds(src, rank=r, world_size=world_size, remainder=remainder))
                for r in range(world_size)]
    assert len({len(rows) for rows in per_rank}) == 1  # the same number of rows on every rank
    got = trained_tokens([row for rows in per_rank for row in rows])
    assert max(got.values()) == 1  # nothing trained twice
    for rows in per_rank:
        for row in rows:
            assert row["input_ids"].size == int(row["seq_lengths"].sum()) <= 128
    if remainder == "pad" or world_size == 1:
        assert got == want  # every token once
    else:
        lost = set(want) - set(got)
        assert len(lost) < 128 * world_size  # at most world_size - 1 packs at the very end
        assert set(got) <= set(want)


def test_stream_bad_state() -> None:
    src = stream_source(100)
    ds = make_ds(src)
    it = iter(ds)
    next(it)
    state = ds.state_dict()
    with pytest.raises(ordcore.InvalidArgumentError, match=r"buffer_size=50 \(this stream has 60\)"):
        make_ds(src, buffer_size=60).load_state_dict(state)
    with pytest.raises(ordcore.InvalidArgumentError, match="world_size=1"):
        make_ds(src, rank=0, world_size=2).load_state_dict(state)
    with pytest.raises(ordcore.InvalidArgumentError, match="not a state saved"):
        make_ds(src).load_state_dict({**state, "version": 99})
    with pytest.raises(ordcore.InvalidArgumentError, match="rank: must be below world_size=2"):
        make_ds(src, rank=2, world_size=2)


def test_hf_iterable_source_is_read_whole_in_every_worker() -> None:
    """Found by a fresh-user pass: a datasets.IterableDataset hands each DataLoader worker
    only its own shards, so each worker planned part of the stream as if it were all of it
    and about half the tokens were never yielded. Every worker now reads it whole: the
    loader yields exactly the rows of the stream's shards over the same items as a list."""
    datasets = pytest.importorskip("datasets", reason="datasets is a test dependency")
    src = stream_source(300, seed=5)
    items = [{"input_ids": s.tolist()} for s in src]
    for num_shards in (1, 4):
        hf = datasets.Dataset.from_list(items).to_iterable_dataset(num_shards=num_shards)
        loader = torch.utils.data.DataLoader(make_ds(hf), batch_size=None, num_workers=2)
        got = sorted(tuple(r["input_ids"].tolist()) for r in loader)
        want = sorted(tuple(r["input_ids"].tolist()) for shard in range(2)
                      for r in ShardedPackStream(src, 128, buffer_size=50, seed=1,
                                                 num_shards=2, shard=shard))
        assert got == want
        assert len(got) > 30


def _batches_equal(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert_same_batch(x, y)


# torchdata 0.11 (the newest) still calls torch.set_vital, which torch 2.15 deprecates with a
# UserWarning and otherwise ignores; StatefulDataLoader works.
@pytest.mark.filterwarnings("ignore:'set_vital' is deprecated:UserWarning")
@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("world_size", [1, 2])
def test_stateful_dataloader_resumes_exactly(num_workers: int, world_size: int) -> None:
    sdl = pytest.importorskip("torchdata.stateful_dataloader",
                              reason="torchdata's StatefulDataLoader is a test dependency")
    src = stream_source(400, seed=3)
    collate = PackedCollator(128, layout="rows")

    def loader(rank: int) -> Any:
        return sdl.StatefulDataLoader(make_ds(src, rank=rank, world_size=world_size),
                                      batch_size=3, collate_fn=collate, num_workers=num_workers)

    counts = []
    for rank in range(world_size):
        full = list(loader(rank))
        counts.append(len(full))
        assert len(full) > 10
        for stop in (1, 6, len(full) - 1):
            dl = loader(rank)
            it = iter(dl)
            head = [next(it) for _ in range(stop)]
            state = dl.state_dict()
            del it, dl
            resumed = loader(rank)
            resumed.load_state_dict(state)
            rest = list(resumed)
            _batches_equal(head + rest, full)
    assert len(set(counts)) == 1  # every rank has the same number of batches


def test_collator_refuses_non_positive_seq_lengths() -> None:
    """A negative entry was reported as 'seq_lengths add up to 3, the row has 3 tokens'."""
    with pytest.raises(ordcore.InvalidArgumentError, match=r"seq_lengths\[0\] is -1"):
        PackedCollator(4)([{"input_ids": [1, 2, 3], "seq_lengths": [-1, 4]}])
    with pytest.raises(ordcore.InvalidArgumentError, match=r"seq_lengths\[0\] is 0"):
        PackedCollator(4)([{"input_ids": [1, 2, 3], "seq_lengths": [0, 3]}])

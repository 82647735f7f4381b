"""ordcore.packing: StreamingPacker (no token lost or duplicated, determinism, resume), the
SDPA mask, and the equivalence of packed and unpacked forward passes of a small causal
transformer layer written in NumPy."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest

import ordcore
from ordcore.packing import (
    PackedBatch,
    StreamingPacker,
    attention_mask_from_segments,
    materialize,
    pack,
)


def source(n: int = 700, seed: int = 0) -> list[np.ndarray]:
    """Sequences with globally unique token ids (so a multiset check sees every token)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 300, n)
    lengths[::50] = 0  # a few empty sequences
    lengths[7::97] = 700  # and a few longer than max_len
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return [np.arange(starts[i], starts[i + 1]) + 1 for i in range(n)]


def stream_tokens(batches: Iterator[PackedBatch]) -> list[int]:
    out: list[int] = []
    for b in batches:
        out.extend(b.input_ids[b.segment_ids > 0].tolist())
    return out


def packer(**kw: object) -> StreamingPacker:
    args: dict[str, object] = {
        "buffer_size": 64, "batch_rows": 4, "allow_empty": True, "seed": 3,
    }
    args.update(kw)
    return StreamingPacker(256, **args)  # type: ignore[arg-type]


@pytest.mark.parametrize("algorithm", ["bfd", "lpfhp", "nf", "ffd", "spfhp"])
def test_stream_keeps_every_token_once(algorithm: str) -> None:
    src = source()
    got = stream_tokens(packer(algorithm=algorithm)(src))
    want = np.concatenate(src).tolist()
    assert Counter(got) == Counter(want)  # flushes the last partial window too
    assert len(got) == len(want)


def test_stream_is_deterministic_and_resumes() -> None:
    src = source(seed=1)
    full = [b.as_dict() for b in packer()(src)]
    again = [b.as_dict() for b in packer()(src)]
    assert len(full) == len(again) > 20
    for a, b in zip(full, again):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    for stop_after in (1, 7, 16, len(full) - 1):
        p = packer()
        it = p(src)
        for _ in range(stop_after):
            next(it)
        state = p.state_dict()
        resumed = packer()
        resumed.load_state_dict(state)
        rest = [b.as_dict() for b in resumed(src)]
        assert len(rest) == len(full) - stop_after
        for a, b in zip(full[stop_after:], rest):
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
        # A source that already starts at the saved window start works too.
        resumed = packer()
        resumed.load_state_dict(state)
        start = state["window_start"]
        tail = [b.as_dict() for b in resumed(iter(src[start:]), source_offset=start)]
        assert len(tail) == len(rest)
        np.testing.assert_array_equal(tail[0]["input_ids"], rest[0]["input_ids"])


def test_stream_state_mismatch_is_an_error() -> None:
    p = packer()
    with pytest.raises(ordcore.InvalidArgumentError, match="seed"):
        p.load_state_dict({"window": 0, "window_start": 0, "rows_done": 0, "seed": 99})


def test_stream_epochs_restart_and_states_must_fit_the_source() -> None:
    """Found by a fresh-user pass: a second call yielded nothing, and a state that did not
    fit the source silently yielded nothing or skipped a window."""
    src = source(n=300, seed=2)
    p = packer()
    first = [b.as_dict() for b in p(src)]
    second = [b.as_dict() for b in p(src)]  # a second epoch with the same packer
    assert len(first) == len(second) > 5
    for a, b in zip(first, second):
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    # A partly consumed call does not leak into the next one either.
    it = p(src)
    next(it)
    assert len(list(p(src))) == len(first)
    # After the last batch the saved state resumes to nothing (not an error).
    p = packer()
    for _ in p(src):
        pass
    done = packer()
    done.load_state_dict(p.state_dict())
    assert list(done(src)) == []
    late = packer()
    late.load_state_dict({"window": 0, "window_start": 10**9, "rows_done": 0})
    with pytest.raises(ordcore.InvalidArgumentError, match="fewer than the saved window start"):
        list(late(src))
    many = packer()
    many.load_state_dict({"window": 0, "window_start": 0, "rows_done": 10**6})
    with pytest.raises(ordcore.InvalidArgumentError, match="rows_done=1000000"):
        list(many(src))


def test_stream_settings_are_checked_up_front_and_errors_name_source_items() -> None:
    for kw, match in (({"max_seqs_per_pack": 0}, "max_seqs_per_pack"),
                      ({"fragment_positions": "resume"}, "fragment_positions"),
                      ({"pad_to_multiple_of": 3}, "pad_to_multiple_of: 3 does not divide"),
                      ({"allow_empty": "no"}, "allow_empty: must be a bool")):
        with pytest.raises(ordcore.InvalidArgumentError, match=match):
            packer(**kw)
    with pytest.raises(ordcore.DTypeError, match="dtype"):
        packer(dtype=np.float32)
    src = [np.arange(1, 9)] * 20
    bad = [*src, np.array([1.5, 2.5])]
    with pytest.raises(ordcore.DTypeError, match="source: item 20 has dtype float64"):
        list(StreamingPacker(16, buffer_size=17)(bad))
    big = [*src, np.array([300])]
    with pytest.raises(ordcore.InvalidArgumentError, match=r"token 300 \(item 20, position"):
        list(StreamingPacker(16, buffer_size=17, dtype=np.uint8)(big))


def test_attention_mask_from_segments() -> None:
    seg = np.array([[1, 1, 2, 2, 2, 0]])
    m = attention_mask_from_segments(seg)
    assert m.shape == (1, 6, 6) and m.dtype == np.bool_
    want = np.zeros((6, 6), dtype=bool)
    want[np.ix_([0, 1], [0, 1])] = np.tril(np.ones((2, 2), dtype=bool))
    want[np.ix_([2, 3, 4], [2, 3, 4])] = np.tril(np.ones((3, 3), dtype=bool))
    want[5, 5] = True  # padding attends to itself only (no empty softmax row)
    np.testing.assert_array_equal(m[0], want)
    np.testing.assert_array_equal(attention_mask_from_segments(seg[0]), want)


# ---------------------------------------------------------------- packed == unpacked


class TinyLayer:
    """One pre-norm causal transformer block (single head, RoPE or learned positions, GELU
    MLP) with a tied LM head, in float64 NumPy."""

    def __init__(self, vocab: int, d: int, positions: str, max_pos: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        s = 1 / np.sqrt(d)
        self.emb = rng.normal(0, 1, (vocab, d))
        self.wq, self.wk, self.wv, self.wo = (rng.normal(0, s, (d, d)) for _ in range(4))
        self.w1 = rng.normal(0, s, (d, 4 * d))
        self.w2 = rng.normal(0, s / 2, (4 * d, d))
        self.positions = positions
        self.pos_emb = rng.normal(0, 0.5, (max_pos, d))
        self.d = d

    def rope(self, x: np.ndarray, pos: np.ndarray) -> np.ndarray:
        half = self.d // 2
        freq = 10000.0 ** (-np.arange(half) / half)
        ang = pos[..., None] * freq
        cos, sin = np.cos(ang), np.sin(ang)
        x1, x2 = x[..., :half], x[..., half:]
        return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)

    def forward(self, ids: np.ndarray, pos: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """ids, pos: (T,); mask: (T, T) bool. Returns logits (T, vocab)."""
        h = self.emb[ids]
        if self.positions == "learned":
            h = h + self.pos_emb[pos]
        x = h / np.sqrt((h**2).mean(-1, keepdims=True) + 1e-6)
        q, k, v = x @ self.wq, x @ self.wk, x @ self.wv
        if self.positions == "rope":
            q, k = self.rope(q, pos), self.rope(k, pos)
        att = (q @ k.T) / np.sqrt(self.d)
        att = np.where(mask, att, -np.inf)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        h = h + (att @ v) @ self.wo
        x = h / np.sqrt((h**2).mean(-1, keepdims=True) + 1e-6)
        u = x @ self.w1
        h = h + (0.5 * u * (1 + np.tanh(0.7978845608 * (u + 0.044715 * u**3)))) @ self.w2
        return h @ self.emb.T


def token_losses(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Hugging Face causal-LM loss terms: logits[t] predicts labels[t + 1]; ignored = NaN."""
    lg = logits[:-1] - logits[:-1].max(-1, keepdims=True)
    logp = lg - np.log(np.exp(lg).sum(-1, keepdims=True))
    tgt = labels[1:]
    out = np.full(tgt.shape, np.nan)
    ok = tgt != -100
    out[ok] = -logp[np.flatnonzero(ok), tgt[ok]]
    return out


@pytest.mark.parametrize("positions", ["rope", "learned"])
@pytest.mark.parametrize("layout", ["rows", "flat"])
@pytest.mark.parametrize("start", [0, 2])
def test_packed_equals_unpacked(positions: str, layout: str, start: int) -> None:
    rng = np.random.default_rng(11)
    vocab, cap = 50, 48
    lengths = rng.integers(1, 30, 12)
    tokens = [rng.integers(0, vocab, n) for n in lengths]
    model = TinyLayer(vocab, 16, positions, max_pos=cap + start + 1)
    plan = pack(lengths, cap, algorithm="bfd")
    b = materialize(plan, tokens, pad_id=0, layout=layout, position_ids_start=start)
    masks = attention_mask_from_segments(b.segment_ids)
    logits = [
        model.forward(b.input_ids[r], b.position_ids[r], masks[r]) for r in range(b.input_ids.shape[0])
    ]
    packed_losses = [token_losses(lg, lab) for lg, lab in zip(logits, b.labels)]
    flat_logits = np.concatenate(logits)
    flat_losses = np.concatenate([np.append(x, np.nan) for x in packed_losses])
    real = np.flatnonzero(b.segment_ids.ravel())
    seen = 0
    for k, i in enumerate(b.seq_index):
        seg = real[b.cu_seqlens[k] : b.cu_seqlens[k + 1]]
        n = int(lengths[i])
        alone = model.forward(tokens[i], np.arange(n) + start, np.tril(np.ones((n, n), bool)))
        np.testing.assert_allclose(flat_logits[seg], alone, rtol=1e-12, atol=1e-12)
        loss_alone = token_losses(alone, tokens[i])
        # The packed loss terms of a sequence sit at its first n-1 tokens; the term at its
        # last token predicts the next sequence's first label, which is ignored (NaN).
        np.testing.assert_allclose(flat_losses[seg[:-1]], loss_alone, rtol=1e-12, atol=1e-12)
        assert np.isnan(flat_losses[seg[-1]])
        seen += 1
    assert seen == len(tokens)
    total = np.nansum(flat_losses)
    np.testing.assert_allclose(
        total,
        sum(np.nansum(token_losses(model.forward(t, np.arange(t.size) + start,
            np.tril(np.ones((t.size, t.size), bool))), t)) for t in tokens),
        rtol=1e-12,
    )

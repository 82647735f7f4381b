"""The bundled real data: shapes, provenance, licence, size, and its ground truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import ordcore.datasets as ds


def test_glosses_shapes_and_norms() -> None:
    g = ds.load_glosses()
    assert g.base.shape == (10_000, 384) and g.base.dtype == np.float16
    assert g.queries.shape == (200, 384) and g.truth.shape == (200, 10)
    assert len(g.base_texts) == 10_000 and len(g.query_texts) == 200
    norms = np.linalg.norm(g.base.astype(np.float32), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=2e-3)
    assert all(text.strip() for text in g.base_texts[:100])


def test_glosses_truth_is_exact_cosine_top10() -> None:
    g = ds.load_glosses()
    b = g.base.astype(np.float64)
    q = g.queries.astype(np.float64)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    sims = q @ b.T
    kth = np.sort(sims, axis=1)[:, -10]
    got = np.take_along_axis(sims, g.truth.astype(np.int64), axis=1)
    assert np.all(got >= kth[:, None] - 1e-12)
    assert np.all(np.diff(got, axis=1) <= 1e-12)  # nearest first


def test_doc_lengths() -> None:
    lengths = ds.load_doc_lengths()
    assert lengths.shape == (22_149,) and lengths.dtype == np.int64
    assert lengths.min() >= 1 and lengths.max() > 8192  # real long tail


def test_licence_and_size() -> None:
    assert "Princeton University" in ds.wordnet_license()
    folder = Path(ds.__file__).parent
    total = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    assert total < 10 * 2**20

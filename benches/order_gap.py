"""The order gap on real data: an SSM probe on scikit-learn's 8x8 handwritten digits
(1,797 real images; each pixel is a token) trained with different token orders.

Orders: raster, column, snake, Hilbert (``ordcore.sfc.scan_order``), a random fixed order,
and a learned Gumbel-Sinkhorn order (initialized at raster, evaluated with its Hungarian hard
permutation). A few seeds each, CPU, a few minutes. Prints test accuracy (mean +- std over
seeds) per order and writes JSON to bench-results/order_gap.json.

    python benches/order_gap.py [--seeds 3] [--epochs 40]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import ordcore
from ordcore_torch.order import FixedOrder, SinkhornOrder

SIDE = 8
ORDERS = ["raster", "column", "snake", "hilbert", "random", "sinkhorn"]


def scan(kind: str) -> np.ndarray:
    """``ordcore.sfc.scan_order(8, 8, kind)``; falls back to a local construction when the
    sfc Python API is absent (hilbertcurve for the Hilbert scan)."""
    if hasattr(ordcore.sfc, "scan_order"):
        return np.asarray(ordcore.sfc.scan_order(SIDE, SIDE, kind), dtype=np.int64)
    grid = np.arange(SIDE * SIDE).reshape(SIDE, SIDE)
    if kind == "raster":
        return grid.ravel()
    if kind == "column":
        return grid.T.ravel()
    if kind == "snake":
        return np.concatenate([row if i % 2 == 0 else row[::-1] for i, row in enumerate(grid)])
    if kind == "hilbert":
        from hilbertcurve.hilbertcurve import HilbertCurve

        pts = np.array(HilbertCurve(int(math.log2(SIDE)), 2).points_from_distances(range(SIDE**2)))
        return pts[:, 0] * SIDE + pts[:, 1]
    raise ValueError(kind)


def make_order(name: str, seed: int) -> torch.nn.Module:
    if name == "random":
        return FixedOrder(SIDE, SIDE, "random", seed=1000 + seed)
    if name == "sinkhorn":
        return SinkhornOrder(SIDE * SIDE, temperature=0.5, n_iters=20, init=scan("raster"),
                             init_scale=3.0, seed=seed)  # fmt: skip
    return FixedOrder(permutation=scan(name))


def run(name: str, seed: int, data: tuple[torch.Tensor, ...], epochs: int) -> float:
    xtr, ytr, xte, yte = data
    torch.manual_seed(seed)
    probe = ordcore.create("probe", "ssm_probe", in_features=1, num_classes=10,
                           order=make_order(name, seed), d_model=32, d_state=16)  # fmt: skip
    order_params = list(probe.order.parameters())
    other = [p for n, p in probe.named_parameters() if not n.startswith("order.")]
    groups = [{"params": other, "lr": 3e-3}]
    if order_params:
        groups.append({"params": order_params, "lr": 3e-2})
    opt = torch.optim.Adam(groups)
    gen = torch.Generator().manual_seed(seed)
    n = xtr.shape[0]
    for _ in range(epochs):
        probe.train()
        for idx in torch.randperm(n, generator=gen).split(64):
            loss = F.cross_entropy(probe(xtr[idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    probe.eval()
    with torch.no_grad():
        return float((probe(xte).argmax(-1) == yte).float().mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    digits = load_digits()
    x = torch.tensor(digits.images.reshape(-1, SIDE * SIDE, 1) / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target)
    itr, ite = train_test_split(np.arange(len(y)), test_size=0.3, random_state=0, stratify=y)
    data = (x[itr], y[itr], x[ite], y[ite])
    print(f"digits: {len(y)} images, {len(itr)} train / {len(ite)} test, 64 pixel tokens; "
          f"SSM probe d_model=32 d_state=16, {args.epochs} epochs, seeds 0..{args.seeds - 1}")  # fmt: skip
    results: dict[str, list[float]] = {}
    t0 = time.perf_counter()
    for name in ORDERS:
        results[name] = [run(name, s, data, args.epochs) for s in range(args.seeds)]
        accs = np.array(results[name])
        print(f"  {name:<9} test acc {accs.mean():.4f} +- {accs.std():.4f}  "
              f"({', '.join(f'{a:.3f}' for a in accs)})  [{time.perf_counter() - t0:.0f}s]", flush=True)  # fmt: skip
    best = max(np.mean(v) for v in results.values())
    print("\norder      mean acc   gap to best")
    for name, accs in results.items():
        print(f"{name:<9}  {np.mean(accs):.4f}     {best - np.mean(accs):+.4f}")
    out = Path("bench-results")
    out.mkdir(exist_ok=True)
    (out / "order_gap.json").write_text(json.dumps({"epochs": args.epochs, "results": results}, indent=2))


if __name__ == "__main__":
    main()

"""How close are randomized Hadamard rotations to a uniform random rotation?

For each dimension d in 64..8192 and a fixed unit input x, the output coordinate
y_j = R(x)_j (j = 1) of a uniformly random rotation R has the exact law of one coordinate
of a uniform point on the sphere S^(d-1): (y_j + 1) / 2 ~ Beta((d-1)/2, (d-1)/2). We draw
N independent randomized Hadamard rotations (1, 2 and 3 blocks; N seeds realized as one
grouped rotation, whose signs are independent per group) and report the Kolmogorov
distance sup_t |F_N(t) - F_uniform(t)| of the empirical law of y_j, for the two worst-case
inputs e_1 and (e_1 + e_2)/sqrt(2) ("two equal spikes"). Reference rows: the same
statistic for N exact uniform-rotation samples (Gaussian vectors normalized, the law of
Q x for Q ~ Haar; i.e. the noise floor of N samples), and at d = 64 for N' draws of
scipy.stats.special_ortho_group (too slow above). The two-block structured-rotation paper (Zilca and
Mendelson, arXiv 2604.23418) predicts per-coordinate distances shrinking like d^(-1/5);
we print d^(-1/5) and the fitted slope of log(distance) against log(d).

Joint discrepancy: for the two-spike input, the 2-D Kolmogorov distance of (y_1, y_2)
(sup over a 24 x 24 grid of quantile points of |F_N(a, b) - F_ref(a, b)|, with F_ref from
N uniform-rotation samples), against the same statistic between two independent uniform
samples (the floor).

    python benches/rotation_quality.py [--samples 8000] [--dmax 8192]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import scipy.stats

from ordcore.hadamard import RandomizedHadamard

COORD = 1


def structured_samples(d: int, blocks: int, x: np.ndarray, n_samples: int, seed: int) -> np.ndarray:
    """(n_samples, d) outputs R_s(x) for n_samples independent rotations R_s."""
    out = []
    chunk = max(1, min(n_samples, (1 << 21) // d))
    done = 0
    while done < n_samples:
        k = min(chunk, n_samples - done)
        # Groups of size d with signs indexed by the global coordinate: k independent rotations.
        r = RandomizedHadamard(d * k, seed=seed + done, blocks=blocks, group_size=d, dtype=np.float64)
        out.append(r.forward(np.tile(x, k)).reshape(k, d))
        done += k
    return np.concatenate(out)


def uniform_samples(d: int, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """First 3 coordinates of n_samples uniform points on S^(d-1) (law of Q x, Q Haar)."""
    # g / ||g|| for g ~ N(0, I_d), drawing only the 3 coordinates we need and the squared
    # norm of the other d - 3 as a chi-square variable (the same joint law).
    g = rng.standard_normal((n_samples, 3))
    rest = rng.chisquare(d - 3, n_samples)
    return g / np.sqrt((g**2).sum(axis=1) + rest)[:, None]


def ks_marginal(samples: np.ndarray, d: int) -> float:
    a = (d - 1) / 2
    return float(scipy.stats.kstest((samples + 1) / 2, scipy.stats.beta(a, a).cdf).statistic)


def ks_joint(p: np.ndarray, q: np.ndarray, grid: int = 24) -> float:
    """sup over a grid of |F_p(a, b) - F_q(a, b)| for 2-D samples p, q of shape (N, 2)."""
    qs = np.linspace(0.02, 0.98, grid)
    ga = np.quantile(q[:, 0], qs)
    gb = np.quantile(q[:, 1], qs)

    def cdf(s: np.ndarray) -> np.ndarray:
        le_a = s[:, 0][:, None] <= ga[None, :]
        le_b = s[:, 1][:, None] <= gb[None, :]
        return (le_a.astype(np.float64).T @ le_b.astype(np.float64)) / len(s)

    return float(np.abs(cdf(p) - cdf(q)).max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=8000)
    ap.add_argument("--dmin", type=int, default=64)
    ap.add_argument("--dmax", type=int, default=8192)
    ap.add_argument("--sog-samples", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    dims = [d for d in (2**k for k in range(4, 16)) if args.dmin <= d <= args.dmax]
    n = args.samples
    rows: list[dict[str, Any]] = []
    print(f"Kolmogorov distance of coordinate y_{COORD} to the uniform-rotation marginal, N = {n}")
    hdr = (f"{'d':>5} | {'e1 B=1':>7} {'e1 B=2':>7} {'e1 B=3':>7} | {'sp B=1':>7} {'sp B=2':>7} "
           f"{'sp B=3':>7} | {'unif':>6} {'SO(d)':>6} | {'d^-1/5':>6} | {'joint sp B=1':>12} "
           f"{'B=2':>6} {'B=3':>6} {'floor':>6}")
    print(hdr)
    print("-" * len(hdr))
    for d in dims:
        e1 = np.zeros(d)
        e1[0] = 1.0
        spikes = np.zeros(d)
        spikes[0] = spikes[1] = 1 / np.sqrt(2)
        row: dict[str, Any] = {"d": d, "d_pow_minus_one_fifth": d ** -0.2}
        for blocks in (1, 2, 3):
            y = structured_samples(d, blocks, e1, n, seed=1000 * blocks)
            row[f"ks_e1_b{blocks}"] = ks_marginal(y[:, COORD], d)
            y = structured_samples(d, blocks, spikes, n, seed=1000 * blocks + 7)
            row[f"ks_spikes_b{blocks}"] = ks_marginal(y[:, COORD], d)
            ref = uniform_samples(d, n, rng)
            row[f"joint_spikes_b{blocks}"] = ks_joint(y[:, 1:3], ref[:, 1:3])
        u = uniform_samples(d, n, rng)
        row["ks_uniform_floor"] = ks_marginal(u[:, COORD], d)
        row["joint_floor"] = ks_joint(u[:, 1:3], uniform_samples(d, n, rng)[:, 1:3])
        if d <= 64:
            qs = scipy.stats.special_ortho_group(d, seed=d).rvs(size=args.sog_samples)
            row["ks_special_ortho_group"] = ks_marginal((qs @ e1)[:, COORD], d)
        else:
            row["ks_special_ortho_group"] = None
        rows.append(row)
        sog_s = f"{row['ks_special_ortho_group']:>6.3f}" if row["ks_special_ortho_group"] is not None else f"{'-':>6}"
        print(f"{d:>5} | {row['ks_e1_b1']:>7.3f} {row['ks_e1_b2']:>7.3f} {row['ks_e1_b3']:>7.3f} | "
              f"{row['ks_spikes_b1']:>7.3f} {row['ks_spikes_b2']:>7.3f} {row['ks_spikes_b3']:>7.3f} | "
              f"{row['ks_uniform_floor']:>6.3f} {sog_s} | {d ** -0.2:>6.3f} | "
              f"{row['joint_spikes_b1']:>12.3f} {row['joint_spikes_b2']:>6.3f} "
              f"{row['joint_spikes_b3']:>6.3f} {row['joint_floor']:>6.3f}")
    floor = 2 * float(np.median([r["ks_uniform_floor"] for r in rows]))
    slopes: dict[str, float | None] = {}
    for key in ("ks_e1_b2", "ks_spikes_b2", "ks_e1_b3", "ks_spikes_b3"):
        pts = [(r["d"], r[key]) for r in rows if r[key] > floor]
        if len(pts) >= 3:
            ld, lk = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            slopes[key] = float(np.polyfit(ld, lk, 1)[0])
        else:
            slopes[key] = None
    print(f"\nfitted slope of log(distance) vs log(d) over points above 2x the noise floor "
          f"({floor:.3f}); the d^(-1/5) prediction is -0.200:")
    for key, sl in slopes.items():
        print(f"  {key:<14} {'n/a (too few points above the floor)' if sl is None else f'{sl:+.3f}'}")
    print(f"elapsed {time.perf_counter() - t0:.1f} s")
    outdir = Path(__file__).resolve().parents[1] / "bench-results"
    outdir.mkdir(exist_ok=True)
    (outdir / "rotation_quality.json").write_text(json.dumps(
        {"bench": "rotation_quality", "samples": n, "coordinate": COORD, "rows": rows,
         "slopes": slopes, "noise_floor_x2": floor}, indent=2))
    print(f"wrote {outdir / 'rotation_quality.json'}")


if __name__ == "__main__":
    main()

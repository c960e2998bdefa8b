"""Accuracy and speed of Pólya-Gamma draws: ``polyagamma``'s methods vs ``draw_polya_gamma``.

For every ``b`` and ``z`` of the grid, prints the z-score of the sample mean (exact
standard error) and the relative error of the sample variance against the closed forms
``E = b tanh(z/2) / (2z)``, ``Var = b (2 tanh(z/2) - z sech^2(z/2)) / (4 z^3)``; then the
draws per CPU-second on 2 M activations of mixed size. The figures quoted in the SBN
user guide (section "Pólya-Gamma draws") come from this script.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sbn_polya_gamma.py \\
        > benchmarks/results/sbn_polya_gamma.txt
"""
import argparse
import os
import sys
import time

import numpy as np
from polyagamma import random_polyagamma

from skdgm.sbn._polya_gamma import draw_polya_gamma, pg_mean_var

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402

Z_GRID = [0.0, 1e-3, 1.0, 10.0, 50.0, 200.0, 500.0, 1000.0]


def sampler(method):
    if method == "skdgm":
        return lambda b, z, rng: draw_polya_gamma(z, rng, b)
    return lambda b, z, rng: random_polyagamma(b, z, method=method, random_state=rng)


def accuracy(method, b_values, n, rng):
    draw = sampler(method)
    for b in b_values:
        cells = []
        for z in Z_GRID:
            try:
                x = draw(b, np.full(n, z), rng)
            except Exception as exc:          # the package rejects some (b, method)
                cells.append(f"{'error: ' + type(exc).__name__:>16s}")
                continue
            m, v = pg_mean_var(z, b)
            cells.append(f"{(x.mean() - m) / np.sqrt(v / n):+8.1f}/{x.var() / v - 1:+7.3f}")
        print(f"{str(method):>9s} b={b:<5g}" + " ".join(cells), flush=True)


def speed(method, b, z, rng):
    draw = sampler(method)
    t = time.process_time()
    draw(b, z, rng)
    return z.size / (time.process_time() - t) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000, help="draws per (b, z) cell")
    args = ap.parse_args()
    header()
    rng = np.random.default_rng(0)
    print("mean z-score / variance relative error, z =", Z_GRID)
    for method in ("skdgm", None, "alternate", "devroye", "gamma", "saddle"):
        accuracy(method, [0.01, 0.5, 1.0, 2.0, 3.5], args.n, rng)
    print("\nmillion draws per CPU-second, 2 M activations")
    for label, z in [("|z| ~ N(0, 2)", rng.normal(0, 2, 2_000_000)),
                     ("|z| ~ N(0, 300)", rng.normal(0, 300, 2_000_000))]:
        for b in (1.0, 0.5, 0.01):
            print(f"{label}, b={b}: default {speed(None, b, z, rng):.1f}, "
                  f"draw_polya_gamma {speed('skdgm', b, z, rng):.1f}")


if __name__ == "__main__":
    main()

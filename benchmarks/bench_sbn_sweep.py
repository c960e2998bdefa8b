"""Time one Pólya-Gamma hidden-unit sweep: Cython kernel vs its NumPy reference.

The issue's setting: 784 visible, 200 hidden units, batch 100 (Gan et al. 2015, Sec. 3.1).
Both versions consume the same random stream and give the same units (checked here).

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sbn_sweep.py
"""
import argparse
import time

import numpy as np

from skdgm.sbn._gibbs import draw_polya_gamma, pg_hidden_sweep, pg_hidden_sweep_numpy


def setup(n, J, K, ar, seed=0):
    r = np.random.default_rng(seed)
    h = (r.random((n, K)) < 0.5).astype(float)
    x = (r.random((n, J)) < 0.2).astype(float)
    w = 0.1 * r.normal(size=(J, K))
    lat = np.tril(0.1 * r.normal(size=(K, K)), -1) if ar else None
    a = r.normal(size=(n, K)) + (h @ lat.T if ar else 0.0)
    psi = h @ w.T + r.normal(size=J)
    return [h, a, x, psi, draw_polya_gamma(psi, r), w, lat, draw_polya_gamma(a, r)]


def best_time(f, args, repeats):
    times = []
    for _ in range(repeats):
        a = [None if v is None else v.copy() for v in args]
        t = time.perf_counter()
        f(*a, np.random.default_rng(1))
        times.append(time.perf_counter() - t)
    return min(times), a


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--visible", type=int, default=784)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    for ar in (False, True):
        data = setup(args.batch, args.visible, args.hidden, ar)
        t_c, a = best_time(pg_hidden_sweep, data, args.repeats)
        t_n, b = best_time(pg_hidden_sweep_numpy, data, args.repeats)
        same = np.array_equal(a[0], b[0])
        print(f"{args.visible}->{args.hidden}, batch {args.batch}, autoregressive={ar}: "
              f"Cython {1e3 * t_c:.1f} ms, NumPy {1e3 * t_n:.1f} ms, "
              f"speed-up {t_n / t_c:.2f}x, identical units: {same}")


if __name__ == "__main__":
    main()

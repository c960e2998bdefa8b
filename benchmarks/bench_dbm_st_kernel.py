"""Cost of the sequential temperature moves of adaptive ST: Cython kernel vs NumPy twin.

The moves of Alg. 1 (Salakhutdinov 2010, steps 4-5) loop over chains because the
shared Wang-Landau weights change after every chain. Printed: microseconds per
call (CPU time) for 50 and 100 chains, and the cost of one Gibbs sweep of a
784-100-200 DBM on the same chains for scale. A few seconds of CPU.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_dbm_st_kernel.py \\
        > benchmarks/results/bench_dbm_st_kernel.txt
"""

import os
import sys

import numpy as np

from skdgm.dbm import _model, _tempering

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, header  # noqa: E402


def per_call(fn, n_rep):
    """CPU microseconds per call, over ``n_rep`` calls."""
    def repeat():
        for _ in range(n_rep):
            fn()
    return 1e6 * cpu_timed(repeat)[1] / n_rep


def main():
    header()
    betas = _tempering.temperature_ladder(20, 0.9)
    for n in (50, 100):
        rng = np.random.default_rng(0)
        k = rng.integers(0, 20, n).astype(np.intp)
        e = rng.normal(-300, 20, n)
        g = np.zeros(20)
        r1, r2 = np.random.default_rng(1), np.random.default_rng(1)
        t_py = per_call(lambda: _tempering.st_temperature_moves_numpy(k, e, betas, g, 0.01, r1),
                        300)
        t_cy = per_call(lambda: _tempering._st_fast(k, e, betas, g, 0.01, r2), 3000)
        sizes = [784, 100, 200]
        W = [rng.normal(0, 0.01, (a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
        b = [np.zeros(s) for s in sizes]
        layers = [(rng.random((n, s)) < 0.5).astype(float) for s in sizes]
        t_sweep = per_call(lambda: _model.gibbs_sweep_energy(layers, W, b, rng, betas[k]), 100)
        print(f"{n:4d} chains: NumPy twin {t_py:8.1f} us, Cython {t_cy:6.1f} us "
              f"({t_py / t_cy:5.1f}x); one tempered Gibbs sweep of 784-100-200: "
              f"{t_sweep:8.1f} us")


if __name__ == "__main__":
    main()

"""The exact collapsed Gibbs sweep (Du et al. Eq. 15): C kernel against the NumPy reference.

One sweep over 200 hidden units, 784 visible units, 100 rows x L = 5 chains (the
shape of one DSGHMC-Gibbs step on MNIST), from the same generator state: the two
must return the same hidden layers. Times are CPU seconds (best of a few).

Usage (under a minute)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sbn_dsghmc_sweep.py \\
        > benchmarks/results/sbn_dsghmc_sweep.txt
"""

import os
import sys
import time

import numpy as np

from skdgm.sbn._dsghmc import gibbs_sweep_fast
from skdgm.sbn._model import gibbs_sweep, init_params, sample_hidden_prior

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402


def best_cpu(fn, repeats):
    out, best = None, np.inf
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def main():
    header()
    rng = np.random.default_rng(0)
    params = init_params(784, (200,), rng, scale=0.3)
    X = (rng.random((100, 784)) < 0.15).astype(float)
    state = [X] + sample_hidden_prior(params, (5, 100), rng)
    t_np, ref = best_cpu(lambda: gibbs_sweep(params, state, np.random.default_rng(1)), 2)
    t_c, fast = best_cpu(lambda: gibbs_sweep_fast(params, state, np.random.default_rng(1)), 5)
    same = all(np.array_equal(a, b) for a, b in zip(ref[1:], fast[1:]))
    print("sweep 784-200, 500 chains (100 rows x L=5)")
    print(f"  NumPy reference : {t_np:.3f} CPU s")
    print(f"  C kernel        : {t_c:.3f} CPU s   ({t_np / t_c:.1f}x faster)")
    print(f"  identical chains: {same}")


if __name__ == "__main__":
    main()

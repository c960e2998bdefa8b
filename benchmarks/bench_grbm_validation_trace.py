"""Why GaussianBernoulliRBM's ``early_stopping="auto"`` stops at pass 2 on 10k MNIST rows (issue 25).

``GaussianBernoulliRBM(random_state=0, early_stopping=True, n_iter_no_change=10**6)``
on the data of ``bench_defaults_convergence.py --only GaussianBernoulliRBM``
(``--rows`` dequantised, standardised MNIST training rows; 10 % held out as early
stopping holds them out; ``--test-rows`` test rows), so that it runs the whole
``"auto"`` cap. After every ``--every`` passes, one line: early stopping's figure
(mean held-out ``log p`` with its cheap 300-temperature ``log Z``), the same rows'
mean, median and worst-10-rows mean under a 3,000-temperature ``log Z`` (16 runs,
the same stream), and the test rows' mean and median. The mean of a few rows that
the model scores ever worse can fall while the typical row (and the test mean) rises.

Usage::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 5 python \\
        benchmarks/bench_grbm_validation_trace.py [--every 2] \\
        > benchmarks/results/grbm_validation_trace.txt
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header, shown  # noqa: E402
from bench_defaults_convergence import load  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--test-rows", type=int, default=2_000)
    ap.add_argument("--every", type=int, default=2)
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    X, Xte, desc = load("GaussianBernoulliRBM", home, args.rows, args.test_rows)
    header([f"data: {shown(home)}", f"# GaussianBernoulliRBM: {desc}"])
    warnings.simplefilter("ignore")
    import skdgm
    from skdgm._core.random import seed_for
    from skdgm.grbm._train import log_partition_estimate

    every = args.every
    print(f"{'pass':>4s} {'ES figure':>10s} {'val mean':>10s} {'val median':>10s} "
          f"{'val worst10':>12s} {'test mean':>10s} {'test median':>11s} {'log Z':>9s}")

    class Traced(skdgm.GaussianBernoulliRBM):
        def _validation_score(self, X_val):
            figure = super()._validation_score(X_val)
            p = len(self.history_.get("validation_score", [])) + 1
            if p % every == 0 or p == 1:
                log_z, _ = log_partition_estimate(
                    self._params(), exact=False, n_runs=16, n_betas=3000,
                    random_state=seed_for(0, 0xE5))
                v = -self.free_energy(X_val) - log_z
                t = -self.free_energy(Xte) - log_z
                print(f"{p:4d} {figure:10.2f} {v.mean():10.2f} {np.median(v):10.2f} "
                      f"{np.sort(v)[:10].mean():12.1f} {t.mean():10.2f} {np.median(t):11.2f} "
                      f"{log_z:9.2f}", flush=True)
            return figure

    est = Traced(random_state=0, early_stopping=True, n_iter_no_change=10**6)
    t = time.process_time()
    est.fit(X)
    print(f"# {est.n_iter_} passes in {time.process_time() - t:.1f} CPU-s (AIS of this "
          f"trace included); held-out rows: {int(np.ceil(0.1 * X.shape[0]))}")


if __name__ == "__main__":
    main()

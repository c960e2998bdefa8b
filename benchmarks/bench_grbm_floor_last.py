"""The GRBM's large-data cap floor with the last pass kept, on all 60,000 MNIST images (issue 25).

An experiment, not a default: ``GaussianBernoulliRBM(256, batch_size=100,
random_state=0)`` fitted as ``bench_paper_tables.py --row grbm_mnist --fit`` fits it
(the row's data, ``load_mnist_standardised``), with the cap's large-data floor on
(``AUTO_CAP_FLOOR_PASSES = 48``: a cap of 48 passes here) and early stopping's
restore of the best held-out pass switched off, so that the fit keeps the
parameters of the pass at which the held-out trend stopped it. With the floor on
and the restore kept, the default stopped after 41 passes and kept pass 24, which
read -838.78 on the test images (``paper_grbm_mnist_fit_auto.txt``); the held-out
figure's cheap ``log Z`` misranks the passes (``grbm_heldout_figure.txt``). The run
is the same as that one up to its stop (same seed, cap and schedule), so this
scores the last pass of the same run. Printed: fit CPU-seconds, passes, why it
stopped, and the mean test ``log p`` on all 10,000 test images with ``log Z`` by
AIS at the estimator's 3,000 temperatures x 100 runs (as the row's final figure).

Usage (about 0.3 CPU-hours)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_grbm_floor_last.py > benchmarks/results/grbm_floor_last.txt
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, data_home, header, shown  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_home_arg(ap)
    ap.add_argument("--floor-passes", type=int, default=48)
    args = ap.parse_args(argv)
    home = data_home(args.data_home)

    from bench_paper_tables import load_mnist_standardised

    from skdgm import GaussianBernoulliRBM
    from skdgm._core import stopping
    from skdgm.grbm import _defaults

    header([f"data: {shown(home)}"])
    _defaults.AUTO_CAP_FLOOR_PASSES = args.floor_passes
    restore = stopping.EarlyStopping.finish

    def keep_last(self, est):
        self.best_state = None          # nothing to restore: the last pass stays
        return restore(self, est)

    stopping.EarlyStopping.finish = keep_last
    data = load_mnist_standardised(home, argparse.Namespace(n_train=0, n_test=0,
                                                            curve_n_test=1))
    est = GaussianBernoulliRBM(256, batch_size=100, random_state=0, verbose=1)
    t = time.process_time()
    est.fit(data["train"])
    fit_cpu = time.process_time() - t
    print(f"fit: {fit_cpu:.1f} CPU-s ({fit_cpu / 3600:.3f} CPU-h), {est.n_iter_} passes "
          f"(floor {args.floor_passes}), stopped: {est.stopping_reason_}; the last "
          f"pass's parameters kept (the held-out figure's best: pass {est.best_iter_})",
          flush=True)
    t = time.process_time()
    est.set_params(verbose=0, n_jobs=1)
    log_z, se = est.log_partition()
    log_p = -est.free_energy(data["test"]) - log_z
    print(f"test log p on {len(log_p):,} images, {data['kept_pixels']} pixels: "
          f"{log_p.mean():.3f} (log Z {log_z:.3f}, AIS {est.n_ais_betas:,} x "
          f"{est.n_ais_runs}, s.e. {se:.3f}; s.e. over images "
          f"{log_p.std(ddof=1) / len(log_p) ** 0.5:.3f}) "
          f"[{time.process_time() - t:.0f} CPU-s]")


if __name__ == "__main__":
    main()

"""BayesianSBN at its defaults on 10,000 and 50,000 binarised MNIST rows (issue 25).

``BayesianSBN(random_state=0).fit(X)`` on the first ``n`` rows of the binarised MNIST
training set (Larochelle's 50,000-row split), then ``score_samples`` (the default
scorer, ``return_std=True``) on the first ``--test-rows`` test images. Prints the
resolved settings, the fit's CPU seconds, the scoring cost per row and the mean test
``log p`` with its Monte-Carlo standard error and its sampling error over images.
Issue 25's target: at 50,000 rows the fit within 15 CPU-minutes, and a test ``log p``
no worse than the default reached at 10,000 rows.

``--rescore`` scores the models the runs saved (``results/sbn_default_<n>.joblib``,
not committed) again with the current scorer, without refitting. ``--max-passes k``
times the initialisation and the first ``k`` passes of the same fit only and
projects the fit's CPU time to the passes ``"auto"`` chose (no model, no test
score), with ``bench_defaults_scaling.py``'s timing, for a host too busy for the
full fit.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 SKDGM_DATA=... nice python \\
        benchmarks/bench_sbn_scaling_defaults.py --only sbn_10k sbn_50k \\
        > benchmarks/results/sbn_scaling_defaults.txt

Results: ``benchmarks/results/sbn_scaling_defaults.txt``. CPU seconds of this
process, one BLAS thread.
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import RESULTS, header, shown  # noqa: E402
from bench_defaults_scaling import time_fit  # noqa: E402

RUNS = {"sbn_10k": 10_000, "sbn_50k": 50_000}


def load(home):
    from skdgm import datasets

    tr = datasets.fetch_binarized_mnist(data_home=home, subset="train",
                                        download_if_missing=False).data
    te = datasets.fetch_binarized_mnist(data_home=home, subset="test",
                                        download_if_missing=False).data
    return np.asarray(tr, dtype=np.float64), np.asarray(te, dtype=np.float64)


def score(est, Xte):
    t = time.process_time()
    lp, se = est.score_samples(Xte, return_std=True)
    cpu = time.process_time() - t
    return (float(lp.mean()), float(np.sqrt(np.sum(se ** 2)) / len(se)),
            float(lp.std() / np.sqrt(len(lp))), float(np.median(se)), float(se.max()),
            1000.0 * cpu / len(lp))


def report(name, est, Xte, fit_cpu):
    mean, mc_se, img_se, med_se, max_se, ms = score(est, Xte)
    fit = "" if fit_cpu is None else f"fit {fit_cpu:7.1f} CPU-s, "
    print(f"{name:8s} n_components_={est.n_components_} inference={est.inference} "
          f"n_iter_={est.n_iter_}: {fit}test log p {mean:8.2f} (MC s.e. {mc_se:.3f}, "
          f"+- {img_se:.2f} over images; per-row s.e. median {med_se:.3f}, max {max_se:.3f}), "
          f"score {ms:.1f} CPU-ms/row", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(RUNS), default=sorted(RUNS))
    ap.add_argument("--test-rows", type=int, default=1000)
    ap.add_argument("--rescore", action="store_true",
                    help="score the saved models again instead of fitting")
    ap.add_argument("--max-passes", type=int, default=None,
                    help="time only this many passes and project the fit's CPU time")
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    header([f"data: {shown(home)}; binarized MNIST: first n training rows, "
            f"first {args.test_rows} test rows"])
    warnings.simplefilter("ignore")
    import joblib

    from skdgm import BayesianSBN

    Xtr, Xte = load(home)
    Xte = Xte[:args.test_rows]
    for name in args.only:
        n = RUNS[name]
        path = RESULTS / f"sbn_default_{n}.joblib"
        if args.rescore:
            report(name, joblib.load(path), Xte, None)
            continue
        if args.max_passes is not None:
            # the timing of bench_defaults_scaling.py (BayesianSBN(random_state=0),
            # its fit step by step; the score it times there is skipped: 1 row)
            init, per_pass, n_passes, _ = time_fit("BayesianSBN", Xtr[:n], args.max_passes,
                                                   score_rows=1)
            sizes = BayesianSBN()._check_settings(n, Xtr.shape[1])[0]
            print(f"{name:8s} BayesianSBN(random_state=0), n_components_={sizes}: "
                  f"init {init:.1f} CPU-s, {len(per_pass)} of {n_passes} passes timed, "
                  f"{np.mean(per_pass):.2f} CPU-s per pass (each: "
                  f"{', '.join(f'{x:.2f}' for x in per_pass)}); projected fit "
                  f"{init + np.mean(per_pass) * n_passes:.0f} CPU-s", flush=True)
            continue
        est = BayesianSBN(random_state=0)
        t = time.process_time()
        est.fit(Xtr[:n])
        fit_cpu = time.process_time() - t
        joblib.dump(est, path)
        report(name, est, Xte, fit_cpu)


if __name__ == "__main__":
    main()

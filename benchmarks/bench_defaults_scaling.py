"""How long each estimator's defaults take at 1k, 10k and 100k rows (issue 13).

For every estimator at its defaults (``Estimator(random_state=0)``), on rows resampled
from the real data it is meant for (binarised MNIST for BayesianSBN and DBMCAST,
standardised MNIST for GaussianBernoulliRBM, the paper's 20 Newsgroups for DeepLDA;
``--synthetic`` or missing data: resampled ``load_digits``), the script times the
whole ``fit`` (``n_iter="auto"`` stops when converged, issue 25; ``init`` is then the
whole fit) and ``score_samples`` per 1,000 rows (timed on ``--score-rows`` rows), for
sizes up to ``--full-up-to`` rows. Above, the steps of ``fit`` are run as the training
skeleton runs them: the initialisation (pre-training included), then only the first
``--max-passes`` passes are timed and the rest is *projected* from their mean to the
*cap* of ``"auto"`` (an upper bound; the line says so).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_defaults_scaling.py \\
        [--sizes 1000 10000 100000] [--max-passes 2] [--only DeepLDA ...]

Its results file holds the rules *before* issue 25's convergence stops (projected
above 1k rows). The user guide's "How long" table now comes from whole fits by
``bench_defaults_convergence.py --rows N --skip-long`` (``--rows 100000`` draws the
rows with replacement where the data have fewer).

Results: ``benchmarks/results/defaults_scaling.txt``. CPU seconds of this process, one
BLAS thread.
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


def _digits(kind):
    from sklearn.datasets import load_digits

    X = load_digits().data
    if kind == "binary":
        return (X > 7).astype(np.float64)
    if kind == "counts":
        return X.astype(np.float64)
    return (X - X.mean(0)) / np.maximum(X.std(0), 1e-6)


def load(kind, home, synthetic):
    """The base rows for a kind of data, and their name."""
    from skdgm import datasets

    if not synthetic and home is not None:
        try:
            if kind == "binary":
                X = datasets.fetch_binarized_mnist(data_home=home, subset="all",
                                                   download_if_missing=False).data
                return np.asarray(X, dtype=np.float64), "binarized MNIST"
            if kind == "continuous":
                X, _ = datasets.fetch_mnist(data_home=home, subset="all",
                                            download_if_missing=False, return_X_y=True)
                X = np.asarray(X, dtype=np.float64)
                X = X[:, X.std(0) > 1.0]
                return (X - X.mean(0)) / X.std(0), "MNIST (pixels with std > 1), standardised"
            if kind == "counts":
                b = datasets.fetch_20newsgroups_bow(data_home=home)
                return b.train, "20 Newsgroups training documents (paper's vocabulary)"
        except (OSError, ValueError, TypeError) as exc:
            print(f"# {kind}: real data not usable ({type(exc).__name__}); digits instead")
    return _digits(kind), "load_digits (resampled)"


def rows(X, n, seed):
    idx = np.random.default_rng(seed).integers(0, X.shape[0], n)
    return X[idx]


ESTIMATORS = {
    "BayesianSBN": "binary",
    "DBMCAST": "binary",
    "GaussianBernoulliRBM": "continuous",
    "DeepLDA": "counts",
}


def time_fit(name, X, max_passes, score_rows=1000):
    """``(init CPU-s, per-pass CPU-s list, passes, score CPU-s per 1,000 rows, note)``.

    When ``max_passes`` covers the cap, the whole ``fit`` is run and timed (its
    ``n_iter="auto"`` stop included, issue 25): ``init`` is then the whole fit and
    the per-pass list empty. Otherwise the skeleton's steps are run by hand and
    ``passes`` is the *cap* of ``"auto"`` (an upper bound: the plateau may stop it
    sooner). The score is timed on ``score_rows`` rows and scaled to 1,000.
    """
    import skdgm

    est = getattr(skdgm, name)(random_state=0)
    est._validate_params()
    t = time.process_time()
    Xv = est._validate_training_data(X, reset=True)
    stopper = est._stopper(Xv)
    if stopper is not None:
        Xv = stopper.training_rows(Xv)
    ctx = est._initialize(Xv, fit=True)
    n_cap = int(est._n_passes())
    if n_cap <= max_passes:
        est = getattr(skdgm, name)(random_state=0)
        t = time.process_time()
        est.fit(X)
        fit_s = time.process_time() - t
        per_pass, n_passes = [], est.n_iter_
        note = "measured: " + getattr(est, "stopping_reason_", "fixed passes")
    else:
        fit_s = time.process_time() - t
        per_pass = []
        for _ in range(max_passes):
            t = time.process_time()
            est._fit_pass(Xv, ctx)
            per_pass.append(time.process_time() - t)
        est._end_call(ctx)
        n_passes = n_cap
        note = f"projected from {len(per_pass)} passes to the cap of {n_cap}"
    t = time.process_time()
    est.score_samples(X[:score_rows])
    score = (time.process_time() - t) * 1000 / min(score_rows, X.shape[0])
    return fit_s, per_pass, n_passes, score, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="*", type=int, default=[1000, 10000, 100000])
    ap.add_argument("--max-passes", type=int, default=2,
                    help="passes timed above 1k rows; the rest is projected")
    ap.add_argument("--full-up-to", type=int, default=1000,
                    help="sizes up to this run the whole fit (the auto stop included)")
    ap.add_argument("--only", nargs="*", choices=sorted(ESTIMATORS), default=None)
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--score-rows", type=int, default=1000,
                    help="rows scored (the time is scaled to 1,000 rows)")
    _common.add_data_home_arg(ap)
    args = ap.parse_args()
    home = _common.data_home(args.data_home)
    header([f"data: {shown(home)}"])
    warnings.simplefilter("ignore")
    print(f"{'estimator':22s} {'rows':>7s} {'init':>8s} {'per pass':>9s} {'passes':>6s} "
          f"{'score':>7s} {'total CPU-s':>12s}  note (score: CPU-s per 1,000 rows)")
    for name in args.only or sorted(ESTIMATORS):
        base, label = load(ESTIMATORS[name], home, args.synthetic)
        print(f"# {name}: {label}, {base.shape[1]} features", flush=True)
        for n in args.sizes:
            X = rows(base, n, seed=n)
            limit = 10**9 if n <= args.full_up_to else args.max_passes
            init, per_pass, n_passes, score, note = time_fit(name, X, limit,
                                                             args.score_rows)
            mean = float(np.mean(per_pass)) if per_pass else 0.0
            total = init + mean * n_passes + score
            print(f"{name:22s} {n:7d} {init:8.1f} {mean:9.2f} {n_passes:6d} {score:7.1f} "
                  f"{total:12.1f}  {note}", flush=True)


if __name__ == "__main__":
    main()

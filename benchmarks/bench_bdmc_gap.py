"""Bidirectional Monte Carlo gaps of the estimators' AIS on digits, against the temperature count.

For a GaussianBernoulliRBM, a BayesianSBN and a DBMCAST fitted on the 8x8 digits
(``sklearn.datasets.load_digits``; standardised for the GRBM, ``X > 7`` for the
binary models) with hidden layers too large to enumerate, prints the BDMC lower
and upper bounds (on ``log Z``, or on the mean ``log p(x)`` of 50 simulated points
for the SBN), their gap with its standard error, and the CPU seconds of each run
(one BLAS thread), for a ladder of temperature counts that includes each
estimator's default ``n_ais_betas``; then what ``n_betas="auto"`` chooses at the
default ``ais_tol=0.5``. The GRBM and DBM reverse runs start from long Gibbs
chains (``exact_start=False``: the upper bound is approximate); the SBN's from
exact ancestral samples. A small enumerable GRBM is run too, as a check that the
exact ``log Z`` lies between the bounds on a fitted model.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_bdmc_gap.py \
        > benchmarks/results/bdmc_gap.txt
"""

import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from _common import cpu_timed, header
from skdgm import BayesianSBN, DBMCAST, GaussianBernoulliRBM
from skdgm.grbm import _bounds as grbm_bounds


def row(label, res, secs):
    exact = "" if res.exact is None else f"  exact {float(res.exact):10.3f}"
    print(f"{label:<34} n_betas {res.n_betas:>6}  lower {float(res.lower):10.3f} "
          f"± {float(res.lower_std_err):.3f}  upper {float(res.upper):10.3f} "
          f"± {float(res.upper_std_err):.3f}  gap {float(res.gap):7.3f} "
          f"± {float(res.gap_std_err):.3f}  exact_start {res.exact_start!s:<5} "
          f"cpu {secs:6.1f}s{exact}", flush=True)


def ladder(label, est, counts, **kw):
    for n in counts:
        res, secs = cpu_timed(est.log_likelihood_bounds, n_betas=n, **kw)
        row(label, res, secs)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always", ConvergenceWarning)
        res, secs = cpu_timed(est.log_likelihood_bounds, n_betas="auto", **kw)
    row(label + " auto (tol 0.5)", res, secs)
    for m in w:
        print(f"  warning: {m.message}")


def main():
    header(["data: sklearn load_digits (1,797 rows, 64 pixels); fits on all rows, "
            "random_state=0"])
    X = load_digits().data
    C = StandardScaler().fit_transform(X)
    B = (X > 7).astype(float)

    small, secs = cpu_timed(GaussianBernoulliRBM(n_components=12, random_state=0).fit, C)
    print(f"GRBM 12 hidden fitted in {secs:.1f}s CPU")
    ladder("GRBM 12 hidden (enumerable)", small, [30, 100, 300])

    grbm, secs = cpu_timed(GaussianBernoulliRBM(n_components=64, random_state=0).fit, C)
    print(f"GRBM 64 hidden fitted in {secs:.1f}s CPU")
    ladder("GRBM 64 hidden", grbm, [100, 300, 1000, 3000])
    # Diagnostics for the large GRBM: the forward estimate's spread over seeds at the
    # default 3,000 temperatures, and the reverse bound from longer start chains.
    params = grbm._params()
    fwd = []
    for seed in range(5):
        res, secs = cpu_timed(grbm_bounds.log_partition_bounds, params, n_betas=3000,
                              n_runs=100, exact_start=False, n_chain_steps=1000,
                              random_state=100 + seed)
        fwd.append(float(res.lower))
        row(f"GRBM 64 seed {100 + seed}", res, secs)
    print(f"forward log Z over 5 seeds at 3000 betas: mean {np.mean(fwd):.3f}, "
          f"sd {np.std(fwd, ddof=1):.3f}")
    for steps in (1000, 10000):
        res, secs = cpu_timed(grbm_bounds.log_partition_bounds, params, n_betas=3000,
                              n_runs=100, exact_start=False, n_chain_steps=steps,
                              random_state=0)
        row(f"GRBM 64, {steps} start sweeps", res, secs)

    sbn, secs = cpu_timed(BayesianSBN(32, inference="vb", n_iter=30, random_state=0).fit, B)
    print(f"SBN 32 hidden (VB) fitted in {secs:.1f}s CPU")
    ladder("SBN 32 hidden, 50 simulated points", sbn, [10, 30, 100, 300], n_samples=50)

    dbm, secs = cpu_timed(DBMCAST((32, 16), random_state=0).fit, B)
    print(f"DBM 32-16 fitted in {secs:.1f}s CPU")
    ladder("DBM 32-16", dbm, [100, 300, 1000])


if __name__ == "__main__":
    main()

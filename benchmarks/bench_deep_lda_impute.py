"""CPU cost of ``DeepLDA.impute`` with ``n_jobs=1``: one task per chunk against one call per sweep (issue 26).

``impute`` used to call the chunked local sampler once per sweep on the whole input
(rebuilding each chunk's layout and collapsed state from the current fills every
time, plus the whole-input scatter, CSR build, dispatch and merge of every call); it
now runs one task per chunk of 400 documents for every sweep and kept global sample
(``skdgm.deep_lda._impute.impute_over_samples``). The old path is kept as
``impute_per_sweep`` (the tests' reference), so both are timed side by side in the
same process (``time.process_time``, one BLAS thread, medians of alternating
repeats).

Workload: ``DeepLDA(128, n_iter=1, n_posterior_samples=2, n_jobs=1)`` fitted on the
first ``--docs`` 20 Newsgroups training documents, then ``impute`` of the same
documents with ``--missing`` of their non-zero counts hidden (``NaN``), ``n_sweeps=20``
(the default) under each of the two kept samples. Printed: both CPU costs, their
ratio, and whether the answers agree (they do bit for bit up to 400 documents, one
chunk; with more, each chunk draws its own fills, so the answers are different
draws of the same estimator).

Usage::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_deep_lda_impute.py > benchmarks/results/deep_lda_impute.txt
"""

import argparse

import numpy as np

from _common import cpu_timed, header
from _deep_lda_data import load_20news
from skdgm import DeepLDA
from skdgm.deep_lda._impute import impute_per_sweep


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, nargs="+", default=[400, 2000])
    ap.add_argument("--missing", type=float, default=0.2)
    ap.add_argument("--n-sweeps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args()
    header()
    X, _, _, _ = load_20news(args.data_home)
    print(f"DeepLDA(128), 2 kept global samples, n_sweeps={args.n_sweeps}, n_jobs=1, "
          f"{args.missing:.0%} of the non-zero counts missing; medians of {args.repeats} "
          f"alternating repeats, CPU seconds")
    print(f"{'docs':>6s} {'tokens':>8s} {'per sweep (before)':>18s} {'per chunk (now)':>15s} "
          f"{'before / now':>12s}  answers")
    for n in args.docs:
        Xb = X[:n].tocsr()
        est = DeepLDA(128, n_iter=1, n_posterior_samples=2, random_state=0, n_jobs=1).fit(Xb)
        Xm = Xb.toarray().astype(float)
        rng = np.random.default_rng(1)
        rows, cols = np.nonzero(Xm)
        hide = rng.random(rows.size) < args.missing
        Xm[rows[hide], cols[hide]] = np.nan
        missing = np.isnan(Xm)

        def per_sweep(X_, missing_, seed_seq, n_sweeps):
            return impute_per_sweep(est._local, est._merge, X_, missing_,
                                    est.posterior_samples_, seed_seq, n_sweeps=n_sweeps,
                                    link=est.link)

        def now():
            est.__dict__.pop("_impute", None)
            return est.impute(Xm, n_sweeps=args.n_sweeps)

        def before():
            # the public method with its estimate made the old way (same checks)
            est._impute = per_sweep
            try:
                return est.impute(Xm, n_sweeps=args.n_sweeps)
            finally:
                del est._impute

        t_now, t_before = [], []
        for _ in range(args.repeats):
            a, dt = cpu_timed(before)
            t_before.append(dt)
            b, dt = cpu_timed(now)
            t_now.append(dt)
        same = "identical" if np.array_equal(a, b) else (
            f"differ (mean imputed count {np.mean(a[missing]):.4f} before, "
            f"{np.mean(b[missing]):.4f} now)")
        tb, tn = float(np.median(t_before)), float(np.median(t_now))
        print(f"{n:6d} {int(Xb.sum()):8d} {tb:18.2f} {tn:15.2f} {tb / tn:12.2f}  {same}",
              flush=True)


if __name__ == "__main__":
    main()

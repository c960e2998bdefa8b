"""GaussianBernoulliRBM and DBMCAST trained on dask arrays: quality against in memory (issue 28).

Cheap sizes with exact log-likelihoods (16 hidden units in the enumerated layer):
scikit-learn's digits, split 1,500 / 297 rows, standardised for the GRBM and
binarised at 8 (of 16) for the DBM. Each estimator is fitted on the training rows
in memory and as a dask array of 8 row blocks (no client: the blocks path gives the
same fit with any number of workers, ``tests/test_dask_rbm_blocks.py``), seeds
0-2, same settings; the held-out mean ``log p(v)`` is exact. The dask GRBM fit
(``objective="joint"``) samples its positive-phase hidden units from one stream per
block, and several blocks sum in another order, so it is another chain of the same
algorithm: the issue's target is the held-out figure within 1 nat. The CPU seconds
of each fit are printed as a side figure (the no-client path computes each block's
rows through dask at every update).

Usage (about 2-4 minutes of one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_rbm_fit.py > benchmarks/results/dask_rbm_fit.txt

``--mnist memory`` / ``--mnist dask``: the GaussianBernoulliRBM at its defaults
(``n_iter="auto"``, ``early_stopping="auto"``: on from 5,000 rows) on the 10,000-row
dequantised MNIST subset and 2,000 test rows of ``bench_defaults_convergence.py``
(the same loader, seed 0), in memory or as a dask array of ``--blocks`` row blocks
(no client), one path per invocation (each is several CPU-minutes; the pair is a
quality comparison, not a speed ratio). Both paths hold out the same seeded 1,000
rows and stop by the same trend rule; the dask fit's positive phase draws from one
stream per block, so it is another chain and may stop at another pass. Printed:
passes, why training stopped, the best pass kept, fit CPU-s and the test rows' mean
``log p(v)`` (AIS ``log Z``)::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_rbm_fit.py --mnist memory --blocks 4

``--dbm-mnist``: DBMCAST on the 10,000 binarised MNIST rows and 2,000 test rows of
``bench_defaults_convergence.py`` (the same loader, seed 0), one run for both paths:
in memory, and as a dask array of ``--blocks`` row blocks fitted with a
``distributed`` client on a ``LocalCluster`` of 2 worker processes (one thread
each), the same seed and settings: the defaults with ``n_iter=--dbm-passes`` (24:
the fixed rule's 2,400 updates at this size) and ``early_stopping=False``, so that
neither path's stop depends on its CPU clock (the default's cap is in CPU-s, and
the client's process does not see the workers' CPU). Printed per seed and path:
fit wall and CPU-s, the test rows' mean bound, its ``log Z`` (the same AIS
estimator, 1,000 temperatures, 100 runs, seeded from ``random_state``) with its
standard error, the mean ``log p(v)`` and the largest parameter difference between
the paths (0 means bit for bit); then the difference with its AIS error and, for
scale, the in-memory seed-to-seed spread::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_rbm_fit.py --dbm-mnist --blocks 4 --seeds 0 \\
        > benchmarks/results/dask_dbm_mnist.txt
    (and ``--seeds 1 > benchmarks/results/dask_dbm_mnist_seed1.txt``: about 7 minutes
    of a two-core host per seed)
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402


def _data():
    from sklearn.datasets import load_digits

    X = load_digits().data
    order = np.random.default_rng(0).permutation(X.shape[0])
    train, test = X[order[:1500]], X[order[1500:]]
    mean, std = train.mean(axis=0), train.std(axis=0) + 1e-8
    gauss = ((train - mean) / std, (test - mean) / std)
    binary = ((train > 8).astype(np.float64), (test > 8).astype(np.float64))
    return gauss, binary


def _fit_score(make, X_fit, X_test):
    t = time.process_time()
    est = make().fit(X_fit)
    cpu = time.process_time() - t
    return float(est.score(X_test)), cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-iter", type=int, default=30)
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--mnist", choices=["memory", "dask"], default=None)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--test-rows", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0, help="--mnist: random_state")
    parser.add_argument("--dbm-mnist", action="store_true")
    parser.add_argument("--dbm-passes", type=int, default=24)
    args = parser.parse_args()
    if args.mnist is not None:
        return mnist_defaults(args)
    if args.dbm_mnist:
        return dbm_mnist_pair(args)
    header([f"seeds {args.seeds}, {args.n_iter} passes, {args.blocks} row blocks, no client"])

    import dask.array as da

    from skdgm import DBMCAST, GaussianBernoulliRBM

    (g_train, g_test), (b_train, b_test) = _data()
    rows = -(-g_train.shape[0] // args.blocks)
    models = {
        "GaussianBernoulliRBM(16), standardised digits": (
            lambda s: GaussianBernoulliRBM(n_components=16, n_iter=args.n_iter,
                                           batch_size=100, random_state=s),
            g_train, g_test),
        "DBMCAST((16, 16), pretrain=False), binarised digits": (
            lambda s: DBMCAST(n_components=(16, 16), n_iter=args.n_iter, batch_size=100,
                              pretrain=False, random_state=s),
            b_train, b_test),
    }
    print(f"{'model':54s} {'seed':>4s} {'in memory':>10s} {'dask':>10s} {'diff':>7s} "
          f"{'CPU mem':>8s} {'CPU dask':>8s}")
    for name, (make, X, X_test) in models.items():
        Xd = da.from_array(X, chunks=(rows, X.shape[1]))
        mem, dsk = [], []
        for s in args.seeds:
            m, cm = _fit_score(lambda: make(s), X, X_test)
            d, cd = _fit_score(lambda: make(s), Xd, X_test)
            mem.append(m)
            dsk.append(d)
            print(f"{name:54s} {s:4d} {m:10.3f} {d:10.3f} {d - m:+7.3f} {cm:8.1f} {cd:8.1f}",
                  flush=True)
        mem, dsk = np.array(mem), np.array(dsk)
        print(f"{name:54s} mean {mem.mean():10.3f} {dsk.mean():10.3f} "
              f"{dsk.mean() - mem.mean():+7.3f}   (in-memory seed range "
              f"{mem.max() - mem.min():.3f}; largest |diff| {np.abs(dsk - mem).max():.3f}, "
              f"target < 1 nat)", flush=True)


def mnist_defaults(args):
    """The GRBM's defaults on the MNIST subset, in memory or on dask blocks (``--mnist``)."""
    import dask.array as da

    from bench_defaults_convergence import load, quality
    from _common import data_home

    from skdgm import GaussianBernoulliRBM

    name = "GaussianBernoulliRBM"
    X, test, desc = load(name, data_home(), args.rows, args.test_rows)
    rows = -(-X.shape[0] // args.blocks)
    where = (f"dask array of {args.blocks} row blocks of {rows} rows, no client"
             if args.mnist == "dask" else "in memory")
    header([desc, f"GaussianBernoulliRBM(random_state={args.seed}) at its defaults, {where}"])
    data = da.from_array(X, chunks=(rows, X.shape[1])) if args.mnist == "dask" else X
    t = time.process_time()
    est = GaussianBernoulliRBM(random_state=args.seed).fit(data)
    cpu = time.process_time() - t
    value, per_k = quality(name, est, test)
    print(f"path {args.mnist}: {est.n_iter_} passes, {est.n_updates_} updates kept "
          f"(best pass {est.best_iter_}, held-out median {est.best_validation_score_:.2f}), "
          f"fit {cpu:.1f} CPU-s", flush=True)
    print(f"stopped: {est.stopping_reason_}")
    print(f"test mean log p(v) on {args.test_rows} rows: {value:.2f} "
          f"(score {per_k:.1f} CPU-s per 1,000 rows)", flush=True)


def dbm_mnist_pair(args):
    """DBMCAST on binarised MNIST: in memory against a 2-worker cluster (``--dbm-mnist``)."""
    import dask.array as da
    import distributed

    from bench_defaults_convergence import load
    from _common import data_home

    from skdgm import DBMCAST

    X, test, desc = load("DBMCAST", data_home(), args.rows, args.test_rows)
    rows = -(-X.shape[0] // args.blocks)
    header([desc, f"DBMCAST(n_iter={args.dbm_passes}, early_stopping=False, "
                  f"random_state=seed), defaults otherwise; seeds {args.seeds}; in memory vs "
                  f"a dask array of {args.blocks} row blocks of {rows} rows on a LocalCluster "
                  f"of 2 worker processes (1 thread each)"])
    Xd = da.from_array(X, chunks=(rows, X.shape[1]))
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    out = {}
    try:
        for seed in args.seeds:
            for path in ("memory", "dask"):
                est = DBMCAST(n_iter=args.dbm_passes, early_stopping=False, random_state=seed)
                t, c = time.perf_counter(), time.process_time()
                if path == "dask":
                    with distributed.Client(cluster):
                        est.fit(Xd)
                else:
                    est.fit(X)
                wall, cpu = time.perf_counter() - t, time.process_time() - c
                c = time.process_time()
                log_z, log_z_se = est.log_partition_, est.log_partition_std_
                logp = est.score_samples(test)
                score_cpu = time.process_time() - c
                out[seed, path] = est, float(np.mean(logp)), log_z, log_z_se
                print(f"seed {seed}  {path:6s}  fit {wall:7.1f} s wall, {cpu:6.1f} CPU-s in "
                      f"this process; {est.n_iter_} passes, {est.n_updates_} updates; "
                      f"log Z {log_z:.3f} +/- {log_z_se:.3f}; test mean log p(v) "
                      f"{np.mean(logp):.3f} (bound {np.mean(logp) + log_z:.3f}); scoring "
                      f"{score_cpu:.1f} CPU-s", flush=True)
            (m, lm, zm, sm), (d, ld, zd, sd) = out[seed, "memory"], out[seed, "dask"]
            diff = max(float(np.max(np.abs(np.asarray(a, np.float64) - b)))
                       for a, b in zip(m.coefs_ + m.intercepts_, d.coefs_ + d.intercepts_))
            print(f"seed {seed}  dask - memory: {ld - lm:+.3f} nats (AIS error of the "
                  f"difference {np.hypot(sm, sd):.3f}); bound {ld + zd - lm - zm:+.3f}, "
                  f"log Z {zd - zm:+.3f}; largest parameter difference {diff:.3g}",
                  flush=True)
    finally:
        cluster.close()
    mem = np.array([out[s, "memory"][1] for s in args.seeds])
    dsk = np.array([out[s, "dask"][1] for s in args.seeds])
    print(f"mean test log p(v): memory {mem.mean():.3f}, dask {dsk.mean():.3f}, "
          f"dask - memory {dsk.mean() - mem.mean():+.3f} (issue 28's target: within 1 nat); "
          f"in-memory seed range {mem.max() - mem.min():.3f}")


if __name__ == "__main__":
    main()

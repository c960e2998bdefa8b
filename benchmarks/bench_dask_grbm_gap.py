"""GaussianBernoulliRBM on dask blocks against in memory: a systematic gap? (issue 28)

On 10,000 MNIST rows the default fit's held-out median (early stopping's figure)
read 15 and 17 nats lower on dask blocks than in memory for seeds 0 and 1
(``dask_rbm_mnist_*.txt``). This script asks whether such a gap exists, on a
model small enough for everything to be exact: GaussianBernoulliRBM(16) (exact
``log Z``, so the test rows' ``log p(v)`` and the held-out median are exact), the
other settings at their defaults (``objective="joint"``, Adam, 30 Gibbs steps,
minibatches of 100, float32), on ``--rows`` training and ``--test-rows`` test rows
of the dequantised, standardised MNIST loader of ``bench_defaults_convergence.py``
(seed 0). Every seed fits the same rows in memory, as one dask block and as 4
dask blocks (no client: the blocks path gives the same fit with any number of
workers, ``tests/test_dask_rbm_blocks.py``), and each fit is scored on the same
test rows. Printed per seed and path: the passes run, the test mean and median
``log p(v)``, fit CPU-s; with early stopping also the pass kept and the best
held-out median. Then per dask path the paired differences (dask - memory) over
the seeds with their standard errors (sd / sqrt(seeds)), and the seeds'
standard deviation per path.

``--stop fixed``: ``n_iter=--n-iter`` passes, ``early_stopping=False``: both paths
make the same number of updates under the same learning-rate schedule, so a gap
would come from the update itself. ``--stop early``: ``n_iter="auto"`` with
``early_stopping=True`` (the default's rule below 5,000 rows: the seeded
``validation_fraction`` slice, the held-out median's trend, the cap of six times
the fixed rule), to see whether stopping adds a gap.

``--n-components 256``: the same comparison at the default width, where ``log Z``
is the estimator's AIS (3,000 temperatures x 100 runs, a standard error of about
0.4 nats per model, on a stream of its own per seed), so each paired difference
also holds two AIS errors.

``--seeds 160`` (16 units, about 40 minutes): enough pairs for a standard error of
0.4 nats on the paired difference, to tell a gap below 1 nat.

``--logz-noise``: how much of early stopping's figure at the default width is the
noise of its ``log Z``. Without an exact ``log Z`` (above 16 hidden units) the
held-out median is ``-median F(v) - log Z`` with ``log Z`` from AIS at 300
temperatures and 16 runs on a stream fixed by ``random_state``: one draw per
model, shifting every row alike, and another draw for another chain's
parameters. The script fits one GaussianBernoulliRBM at the default width (256)
in memory (``--n-iter`` passes, no early stopping, seed 0), then reads that
figure on the test rows under ``--seeds`` AIS streams (``random_state`` set after
the fit, which changes nothing else) and prints its spread, beside the median
under the default AIS ``log Z`` (3,000 temperatures, 100 runs).

Usage (``fixed`` about 4 CPU-minutes, ``early`` about 5 with ``--paths memory
4``, ``--logz-noise --rows 5000 --n-iter 12`` about 2)::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_grbm_gap.py --stop fixed \\
        > benchmarks/results/dask_grbm_gap_fixed.txt
    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_grbm_gap.py --stop early --paths memory 4 \\
        > benchmarks/results/dask_grbm_gap_early.txt
    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_grbm_gap.py --logz-noise --rows 5000 --n-iter 12 \\
        --seeds 10 > benchmarks/results/dask_grbm_gap_logz.txt
    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_grbm_gap.py --stop fixed --n-components 256 \\
        --paths memory 4 > benchmarks/results/dask_grbm_gap_fixed_256units.txt
    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_grbm_gap.py --stop fixed --paths memory 4 \\
        --seeds 160 > benchmarks/results/dask_grbm_gap_fixed_many_seeds.txt
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cpu_timed, data_home, header  # noqa: E402


def _paired(name, d):
    se = d.std(ddof=1) / np.sqrt(d.size)
    return f"{name} {d.mean():+.3f} (s.e. {se:.3f}, {d.mean() / se:+.2f} s.e.)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stop", choices=["fixed", "early"], default="fixed")
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0 .. n-1")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--test-rows", type=int, default=500)
    parser.add_argument("--n-iter", type=int, default=20, help="--stop fixed: passes")
    parser.add_argument("--paths", nargs="+", default=["memory", "1", "4"],
                        help="'memory' and/or numbers of dask row blocks")
    parser.add_argument("--n-components", type=int, default=16,
                        help="hidden units (above 16, log Z by the estimator's AIS)")
    parser.add_argument("--logz-noise", action="store_true")
    args = parser.parse_args()
    if args.logz_noise:
        return logz_noise(args)

    import dask.array as da

    from bench_defaults_convergence import load

    from skdgm import GaussianBernoulliRBM

    X, X_test, desc = load("GaussianBernoulliRBM", data_home(), args.rows, args.test_rows)
    how = (f"n_iter={args.n_iter}, early_stopping=False" if args.stop == "fixed"
           else "n_iter='auto', early_stopping=True")
    header([desc, f"GaussianBernoulliRBM(n_components={args.n_components}, {how}), "
                  f"other settings default; seeds 0-{args.seeds - 1}; paths {args.paths} "
                  f"(dask: row blocks, no client)"])
    data = {p: X if p == "memory" else da.from_array(X, chunks=(-(-X.shape[0] // int(p)), -1))
            for p in args.paths}
    names = {p: "memory" if p == "memory" else f"{p} block{'s' if p != '1' else ''}"
             for p in args.paths}
    rec = {p: {k: [] for k in ("mean", "median", "passes", "held")} for p in args.paths}
    for seed in range(args.seeds):
        for p in args.paths:
            est = GaussianBernoulliRBM(
                n_components=args.n_components, random_state=seed,
                n_iter=args.n_iter if args.stop == "fixed" else "auto",
                early_stopping=args.stop == "early")
            est, cpu = cpu_timed(est.fit, data[p])
            ll = est.score_samples(X_test)
            r = rec[p]
            r["mean"].append(float(np.mean(ll)))
            r["median"].append(float(np.median(ll)))
            r["passes"].append(est.n_iter_)
            line = (f"seed {seed} {names[p]:9s}: {est.n_iter_:4d} passes, test mean "
                    f"{r['mean'][-1]:9.3f}, median {r['median'][-1]:9.3f}")
            if args.stop == "early":
                r["held"].append(est.best_validation_score_)
                line += (f", kept pass {est.best_iter_:4d}, held-out median "
                         f"{est.best_validation_score_:9.3f}")
            print(line + f", fit {cpu:6.1f} CPU-s", flush=True)
    keys = ["mean", "median"] + (["held", "passes"] if args.stop == "early" else [])
    print()
    for p in args.paths:
        r = {k: np.array(v, dtype=float) for k, v in rec[p].items()}
        print(f"{names[p]:9s}: " + ", ".join(
            f"{k} {r[k].mean():.3f} (sd over seeds {r[k].std(ddof=1):.3f})" for k in keys),
            flush=True)
    if "memory" in rec:
        m = {k: np.array(v, dtype=float) for k, v in rec["memory"].items()}
        for p in args.paths:
            if p == "memory":
                continue
            r = {k: np.array(v, dtype=float) for k, v in rec[p].items()}
            print(f"{names[p]} - memory, paired over {args.seeds} seeds: " + "; ".join(
                _paired(k, r[k] - m[k]) for k in keys), flush=True)
        ids = [p for p in args.paths if p != "memory"]
        if len(ids) == 2:
            a = {k: np.array(v, dtype=float) for k, v in rec[ids[0]].items()}
            b = {k: np.array(v, dtype=float) for k, v in rec[ids[1]].items()}
            print(f"{names[ids[1]]} - {names[ids[0]]}, paired: " + "; ".join(
                _paired(k, b[k] - a[k]) for k in keys), flush=True)


def logz_noise(args):
    """The spread of early stopping's held-out median from its AIS ``log Z`` alone."""
    from bench_defaults_convergence import load

    from skdgm import GaussianBernoulliRBM

    X, X_test, desc = load("GaussianBernoulliRBM", data_home(), args.rows, args.test_rows)
    header([desc, f"GaussianBernoulliRBM(random_state=0, n_iter={args.n_iter}, "
                  f"early_stopping=False), in memory; validation figure on the test rows "
                  f"under AIS streams 0-{args.seeds - 1}"])
    est, cpu = cpu_timed(GaussianBernoulliRBM(random_state=0, n_iter=args.n_iter,
                                              early_stopping=False).fit, X)
    print(f"fit: {est.n_iter_} passes, {est.n_updates_} updates, {cpu:.1f} CPU-s", flush=True)
    figs = []
    for s in range(args.seeds):
        figs.append(est.set_params(random_state=s)._validation_score(X_test))
        print(f"AIS stream {s}: held-out median {figs[-1]:.3f}", flush=True)
    figs = np.array(figs)
    (log_z, se), cpu = cpu_timed(est.set_params(random_state=0).log_partition)
    ref = float(-np.median(est.free_energy(X_test)) - log_z)
    print(f"validation figure over {args.seeds} AIS streams: mean {figs.mean():.3f}, "
          f"sd {figs.std(ddof=1):.3f}, range {figs.min():.3f} .. {figs.max():.3f}; "
          f"with the default AIS log Z ({est.n_ais_betas} x {est.n_ais_runs}, s.e. "
          f"{se:.3f}, {cpu:.1f} CPU-s): {ref:.3f}", flush=True)


if __name__ == "__main__":
    main()

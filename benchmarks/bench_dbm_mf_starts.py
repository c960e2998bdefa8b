"""Does DBM training need the second mean-field start? One start against two on binarized MNIST.

Issue 26: the SAP update with ``mean_field_starts="best"`` (the doubled-weight start
and the odd-layers-off start, stacked) costs 27 products of the large size against the
15 of the paper's one-start update (see ``bench_dbm_speed.py``). This script trains
the paper's 784-500-1000 model with SAP from each start option and compares them at
the same training CPU budget.

Protocol: ``--n-train`` (10,000) rows of the binarized MNIST training split and
``--n-test`` (1,000) held-out rows of its test split, both drawn with seed 0.
``DBMCAST(n_components=(500, 1000), sampler="sap", random_state=SEED)`` with its other
defaults; ``fit(n_iter=0)`` pre-trains (identical for every option: pre-training
does not use mean-field), then ``partial_fit`` passes over the training rows run
until ``--cpu-budget`` CPU-seconds of SAP training (``time.process_time``, one BLAS
thread; pre-training and evaluation not counted) are spent. Checkpoints every
``--checkpoint-every`` CPU-seconds and the end report the test bound (Eq. 3 minus
``log Z``): ``log Z`` by AIS (``--ais-betas`` x ``--ais-runs``, its standard error
printed) and every model's bound scored with the *same* inference,
``mean_field_starts="best"`` and up to ``n_mean_field_eval`` (100) sweeps, so that
only training differs. ``zeros share`` is the fraction of training rows whose best
fixed point came from the odd-layers-off start in the last pass (``"best"`` only).

Usage (about 11 CPU-minutes per seed; the results file is the two seeds' output)::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dbm_mf_starts.py --seed 0 > benchmarks/results/dbm_mf_starts.txt
"""

import argparse
import warnings

import numpy as np

from _common import add_data_home_arg, cpu_timed, data_home, header
from skdgm.datasets import fetch_binarized_mnist
from skdgm.dbm import DBMCAST


def load(home, n_train, n_test):
    tr = fetch_binarized_mnist(data_home=home, subset="train").data
    te = fetch_binarized_mnist(data_home=home, subset="test").data
    rng = np.random.default_rng(0)
    tr = tr[rng.choice(tr.shape[0], n_train, replace=False)]
    te = te[rng.choice(te.shape[0], n_test, replace=False)]
    # float32 input trains a float32 model (the update bench_dbm_speed.py times)
    return tr.astype(np.float32), te.astype(np.float32)


def test_bound(est, Xte, args, seed):
    """Mean test bound scored with both starts, AIS s.e. of log Z, s.e. over rows."""
    trained = est.mean_field_starts
    est.log_partition(n_betas=args.ais_betas, n_runs=args.ais_runs, random_state=seed)
    est.set_params(mean_field_starts="best")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # unconverged rows are counted, not shown
        rows = est.score_samples(Xte)
    est.set_params(mean_field_starts=trained)
    return (float(rows.mean()), float(est.log_partition_std_),
            float(rows.std(ddof=1) / np.sqrt(len(rows))))


def run(starts, Xtr, Xte, args):
    est = DBMCAST(n_components=(500, 1000), sampler="sap", mean_field_starts=starts,
                  n_iter=0, random_state=args.seed)
    _, t_pre = cpu_timed(est.fit, Xtr)
    t_train, next_ck, k, rows = 0.0, args.checkpoint_every, 0, []
    while t_train < args.cpu_budget:
        _, dt = cpu_timed(est.partial_fit, Xtr)
        t_train += dt
        if t_train >= next_ck or t_train >= args.cpu_budget:
            next_ck += args.checkpoint_every
            k += 1
            (b, se, rse), t_eval = cpu_timed(test_bound, est, Xte, args, 100 + k)
            zs = est.history_["mean_field_zeros_start"][-1]
            print(f"  {starts:8s} {est.n_updates_:7d} {t_train:8.1f} "
                  f"{1e3 * t_train / est.n_updates_:9.1f} {b:10.2f} {se:6.2f} {rse:7.2f} "
                  f"{zs:11.3f} {t_eval:9.1f}", flush=True)
            rows.append((est.n_updates_, t_train, b, se, rse))
    return t_pre, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_home_arg(ap)
    ap.add_argument("--n-train", type=int, default=10_000)
    ap.add_argument("--n-test", type=int, default=1_000)
    ap.add_argument("--starts", nargs="+", default=["doubled", "best"],
                    choices=["doubled", "zeros", "best"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cpu-budget", type=float, default=240.0)
    ap.add_argument("--checkpoint-every", type=float, default=80.0)
    ap.add_argument("--ais-betas", type=int, default=2000)
    ap.add_argument("--ais-runs", type=int, default=50)
    args = ap.parse_args()
    home = data_home(args.data_home)
    header([f"DBM 784-500-1000 SAP, {args.n_train} training / {args.n_test} test rows of "
            f"binarized MNIST, seed {args.seed}, {args.cpu_budget:g} CPU-s of SAP training "
            f"per option; test bound scored with mean_field_starts='best' for every model, "
            f"log Z by AIS {args.ais_betas} betas x {args.ais_runs} runs"])
    Xtr, Xte = load(home, args.n_train, args.n_test)
    print(f"  {'starts':8s} {'updates':>7s} {'CPU-s':>8s} {'ms/update':>9s} "
          f"{'test bound':>10s} {'AIS se':>6s} {'rows se':>7s} {'zeros share':>11s} "
          f"{'eval CPU-s':>9s}", flush=True)
    final = {}
    for s in args.starts:
        t_pre, rows = run(s, Xtr, Xte, args)
        final[s] = rows[-1]
        print(f"  ({s}: pre-training {t_pre:.1f} CPU-s, not counted)", flush=True)
    print("\nfinal, same training CPU budget:")
    for s, (u, t, b, se, rse) in final.items():
        print(f"  {s:8s} {u:6d} updates in {t:6.1f} CPU-s: test bound {b:9.2f} "
              f"(AIS s.e. {se:.2f}, s.e. over rows {rse:.2f})")
    if {"doubled", "best"} <= final.keys():
        d = final["doubled"][2] - final["best"][2]
        se = np.hypot(np.hypot(final["doubled"][3], final["best"][3]),
                      np.hypot(final["doubled"][4], final["best"][4]))
        print(f"  doubled - best: {d:+.2f} nats (s.e. of the difference at most {se:.2f}, "
              f"counting the rows' s.e. as independent although the rows are shared)")


if __name__ == "__main__":
    main()

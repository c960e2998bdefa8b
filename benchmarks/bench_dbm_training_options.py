"""DBMCAST training options against the noise floor, bound vs training CPU (issues 24, 25).

Candidates, same seed, same data, same test rows, one process each in turn:

* ``average`` -- an exponential moving average of the parameters
  (:mod:`skdgm._core.averaging`). It reads the iterates only, so one run gives
  both curves: the raw iterate (scored with the average swapped out) and the
  average, on the same chains.
* ``momentum`` -- heavy-ball momentum on the update (the authors' code: 0.5 then 0.9).
* ``n_gibbs_steps`` -- persistent-sampler steps per update (the authors' code: 5).
* ``learning_rate`` -- the decaying schedule's scale (a float ``a`` decays as
  ``a * 2000 / (2000 + t)``; the default already decays like ``1 / t``).

Each run: ``DBMCAST(random_state=0, early_stopping=False, <options>)``, pre-trained as
the default does, then trained pass by pass (``fit`` for the first pass,
``partial_fit`` for the rest, which continues the chains and the schedule); at each
``--checkpoints`` training CPU-second mark the mean variational bound on the test rows
is printed for the raw iterate and, with ``average``, for the average. Scoring time is
not training time: the CPU column is the training's (pre-training included).

``--run NAME`` picks candidates from :data:`RUNS` so each locked command stays short.

Usage::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 5 python \\
        benchmarks/bench_dbm_training_options.py --rows 5000 --run base_avg momentum
    ... benchmarks/bench_dbm_training_options.py --cost --run      (the costs alone)
    ... benchmarks/bench_dbm_training_options.py --cost-parts --run (the held-out
        figure's variants: tight vs fast mean-field, AIS sizes)

Results: ``benchmarks/results/dbm_training_options*.txt`` (see the README table).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import data_home, header, shown  # noqa: E402
from bench_defaults_convergence import load  # noqa: E402

#: name -> DBMCAST options; every run also records its raw iterate
RUNS = {
    "base_avg": dict(average=0.999),
    "avg_0.99": dict(average=0.99),
    "momentum": dict(average=0.999, momentum=0.5),
    "momentum_0.9": dict(average=0.999, momentum=0.9, learning_rate=0.005),
    "gibbs5": dict(average=0.999, n_gibbs_steps=5),
    "lr_x2": dict(average=0.999, learning_rate=0.1),
    "lr_x4": dict(average=0.999, learning_rate=0.2),
    "lr_half": dict(average=0.999, learning_rate=0.025),
}


def bound(est, test, params=None):
    """Mean test bound of ``est``, or of ``params = (coefs, intercepts)`` swapped in."""
    if params is None:
        return float(np.mean(est.score_samples(test)))
    saved = est.coefs_, est.intercepts_
    est.coefs_, est.intercepts_ = params
    try:
        return float(np.mean(est.score_samples(test)))
    finally:
        est.coefs_, est.intercepts_ = saved


def run(name, options, X, test, checkpoints):
    from skdgm import DBMCAST

    est = DBMCAST(random_state=0, early_stopping=False, n_iter=1, **options)
    cpu = 0.0
    marks = list(checkpoints)
    t = time.process_time()
    est.fit(X)
    cpu += time.process_time() - t
    while marks:
        if cpu >= marks[0]:
            marks.pop(0)
            it = est._iterate
            raw = bound(est, test, (list(it.coefs), list(it.intercepts)))
            avg = bound(est, test) if options.get("average") else float("nan")
            print(f"{name:14s} {cpu:9.1f} {est.n_iter_:6d} {est.n_updates_:8d} "
                  f"{raw:10.3f} {avg:10.3f}", flush=True)
            continue
        t = time.process_time()
        est.partial_fit(X)
        cpu += time.process_time() - t


def cost(X, n_passes=3):
    """CPU-s of one training pass and of one held-out figure of the default's early stopping.

    The default (``n_iter="auto"`` from 5,000 rows) holds out 10 % of the rows and
    scores them after every pass (:meth:`DBMCAST._validation_score`: mean-field
    plus a cheap AIS ``log Z``); this prints what each costs, averaged over
    ``n_passes`` passes after the first.
    """
    from skdgm import DBMCAST

    from skdgm._core.random import seed_for
    from skdgm.dbm import _bounds

    n_val = X.shape[0] // 10
    train, val = X[:-n_val], X[-n_val:]
    est = DBMCAST(random_state=0, early_stopping=False, n_iter=1).fit(train)
    t_pass = t_val = 0.0
    t_groups = {None: 0.0, 1: 0.0}
    for _ in range(n_passes):
        t = time.process_time()
        est.partial_fit(train)
        t_pass += time.process_time() - t
        t = time.process_time()
        est._validation_score(val)
        t_val += time.process_time() - t
        for g in t_groups:      # the held-out figure's AIS log Z alone, by grouping
            t = time.process_time()
            _bounds.estimate_log_partition(
                est.coefs_, est.intercepts_, est._ais_base(), exact=None, n_betas=300,
                n_runs=16, random_state=seed_for(0, 0xE5), bounds_random_state=None,
                tol=None, n_groups=g)
            t_groups[g] += time.process_time() - t
    print(f"# cost: one training pass over {train.shape[0]} rows {t_pass / n_passes:.2f} "
          f"CPU-s; one held-out figure on {n_val} rows {t_val / n_passes:.2f} CPU-s "
          f"(mean of {n_passes})", flush=True)
    print(f"# its AIS log Z (300 temperatures x 16 runs): {t_groups[None] / n_passes:.2f} "
          f"CPU-s in AIS's default 8 groups of 2 runs, {t_groups[1] / n_passes:.2f} CPU-s "
          f"as one vectorised group", flush=True)


#: the held-out figure's AIS sizes priced by ``--cost-parts``: (temperatures, runs)
HELD_OUT_AIS = ((300, 16), (100, 16), (300, 8), (150, 8))


def cost_parts(X, n_passes=3):
    """The held-out figure's two parts, priced one by one after each of ``n_passes`` passes.

    Mean-field: the converged best-of-starts bound (``bound="tight"``, what
    early stopping reads) against ``bound="fast"`` (3 sweeps a start). AIS
    ``log Z``: one vectorised group at each size of :data:`HELD_OUT_AIS`, on the
    same stream, with its value (the smaller runs' shift from 300 x 16 is their
    bias plus noise on these parameters).
    """
    from skdgm import DBMCAST

    from skdgm._core.random import seed_for
    from skdgm.dbm import _bounds
    from skdgm.dbm._scoring import fast_bound_rows

    n_val = X.shape[0] // 10
    train, val = X[:-n_val], X[-n_val:]
    est = DBMCAST(random_state=0, early_stopping=False, n_iter=1).fit(train)
    print(f"{'pass':>4s} {'part':18s} {'CPU-s':>6s} {'value':>10s}", flush=True)
    for _ in range(n_passes):
        est.partial_fit(train)
        t = time.process_time()
        tight = float(np.mean(est._mean_field(val)[1]))
        print(f"{est.n_iter_:4d} {'mean-field tight':18s} {time.process_time() - t:6.3f} "
              f"{tight:10.3f}", flush=True)
        t = time.process_time()
        fast = float(np.mean(fast_bound_rows(val, est.coefs_, est.intercepts_,
                                             est._starts(), est.batch_size)))
        print(f"{est.n_iter_:4d} {'mean-field fast':18s} {time.process_time() - t:6.3f} "
              f"{fast:10.3f}", flush=True)
        for n_betas, n_runs in HELD_OUT_AIS:
            t = time.process_time()
            log_z, _ = _bounds.estimate_log_partition(
                est.coefs_, est.intercepts_, est._ais_base(), exact=None, n_betas=n_betas,
                n_runs=n_runs, random_state=seed_for(0, 0xE5), bounds_random_state=None,
                tol=None, n_groups=1)
            label = f"AIS {n_betas} x {n_runs}"
            print(f"{est.n_iter_:4d} {label:18s} {time.process_time() - t:6.3f} "
                  f"{log_z:10.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("SKDGM_DATA"))
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--test-rows", type=int, default=500)
    ap.add_argument("--checkpoints", type=float, nargs="+", default=[60, 120, 180],
                    help="training CPU-seconds at which the test bound is printed")
    ap.add_argument("--run", nargs="*", choices=sorted(RUNS), default=["base_avg"])
    ap.add_argument("--cost", action="store_true",
                    help="first print the CPU of a training pass and of a held-out figure")
    ap.add_argument("--cost-parts", action="store_true",
                    help="price the held-out figure's mean-field and AIS variants")
    args = ap.parse_args()
    home = data_home(args.data_home)
    header([f"data: {shown(home)}"])
    X, test, what = load("DBMCAST", home, args.rows, args.test_rows)
    print(f"# DBMCAST options: {what}; bound = mean variational bound on the test rows "
          f"(log Z by AIS, 1,000 x 100); raw = the iterate, avg = its moving average")
    if args.cost:
        cost(X)
    if args.cost_parts:
        cost_parts(X)
    for name in args.run:
        print(f"# {name}: {RUNS[name]}", flush=True)
    if args.run:
        print(f"{'run':14s} {'train CPU':>9s} {'passes':>6s} {'updates':>8s} "
              f"{'raw bound':>10s} {'avg bound':>10s}", flush=True)
    for name in args.run:
        run(name, RUNS[name], X, test, args.checkpoints)


if __name__ == "__main__":
    main()

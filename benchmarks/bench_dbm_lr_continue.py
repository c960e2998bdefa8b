"""Is the DBM paper run limited by its learning rate? Continue one checkpoint, two rates.

The ``dbm_cast`` row of ``bench_paper_tables.py`` reached a test bound near -100 on its
500-image learning curve after one CPU-hour and stayed there for two more. Its learning
rate is DBMCAST's default ``0.05 * t0 / (t0 + t)`` with ``t0 = 2,000`` updates: about
0.0005 after the 198k updates of the run, against the authors' 0.001 -> 1e-4 with momentum
0.5 -> 0.9 (an effective step 0.01 -> 0.001, ``NOTES.md``). A plateau from noise would not
move with a larger step; a plateau from a step too small would.

This script loads the checkpoint (``--checkpoint``, the ``state.joblib`` the paper run
writes), and for each ``--lr`` continues a copy of it for ``--minutes`` of training CPU
through ``partial_fit`` on random 2,000-row chunks (the same chunk stream for every rate),
then prints the bound on the first ``--n-test`` test images (AIS log Z with ``--ais-betas``
x ``--ais-runs``, the same seed for every arm; the starting model is scored the same way).
``--lr`` values are DBMCAST ``learning_rate`` parameters: the step at update ``t`` is
``lr * 2000 / (2000 + t)``, so at the checkpoint's ~198k updates ``0.05`` (the run's own) is
~0.0005 and ``0.5`` is ~0.005. These arms train with ``average=0`` (the raw iterate,
as the paper run did).

``--average D [D ...]`` (issue 25's iterate averaging, DBMCAST's ``average``) runs, instead
of the ``--lr`` arms, one arm per decay ``D`` at the checkpoint's own learning rate, and
prints at each evaluation the bound of the averaged parameters (``coefs_``) and of the
raw iterate that drives the chains, with the same AIS seed: averaging does not change the
trajectory, so the pair measures what the average buys at this point of a paper run.

Usage (from a checkout whose code matches the checkpoint's; writes
``results/dbm_lr_continue.txt``)::

    SKDGM_DATA=... OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python \
        benchmarks/bench_dbm_lr_continue.py --checkpoint PATH --lr 0.05 0.5 --minutes 10 \
        > benchmarks/results/dbm_lr_continue.txt
    # the same checkpoint continued with iterate averaging (results/dbm_average_continue.txt):
    ... benchmarks/bench_dbm_lr_continue.py --checkpoint PATH --average 0.999 --minutes 10
"""

import argparse
import copy
import sys
import time
from pathlib import Path

import joblib
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_home_arg, data_home, header  # noqa: E402
from bench_dbm_samplers import evaluate, load_mnist  # noqa: E402


def load_test_train(home, n_test):
    # the paper run's own loader: float32, test images in their order
    Xtr, Xte = load_mnist(home, 0, 0)
    return Xtr, Xte[:n_test]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--lr", type=float, nargs="+", default=[0.05, 0.5])
    ap.add_argument("--average", type=float, nargs="+", default=None,
                    help="averaging decays to continue with (instead of the --lr arms)")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--evals", type=int, default=2, help="bound evaluations per arm")
    ap.add_argument("--n-test", type=int, default=500)
    ap.add_argument("--ais-betas", type=int, default=2000)
    ap.add_argument("--ais-runs", type=int, default=40)
    add_data_home_arg(ap)
    args = ap.parse_args(argv)
    header([f"checkpoint: {Path(args.checkpoint).parent.name}/{Path(args.checkpoint).name}"])
    state = joblib.load(args.checkpoint)
    start = state["est"]
    Xtr, Xte = load_test_train(data_home(args.data_home), args.n_test)
    print(f"checkpoint: {start.n_updates_} updates, sampler {start.sampler!r}, "
          f"learning_rate {start.learning_rate!r}; bound on the first {args.n_test} test "
          f"images, AIS {args.ais_betas} betas x {args.ais_runs} runs (seed 7)", flush=True)
    b, se, *_ = evaluate(start, Xte, args.ais_betas, args.ais_runs, 7)
    print(f"start: bound {b:.3f} (AIS s.e. {se:.3f})", flush=True)
    arms = ([(start.learning_rate, d) for d in args.average] if args.average
            else [(lr, 0.0) for lr in args.lr])
    for lr, decay in arms:
        est = copy.deepcopy(start).set_params(learning_rate=lr, average=decay, verbose=0)
        rng = np.random.default_rng(1)
        step0 = lr * 2000 / (2000 + est.n_updates_)
        spent, target = 0.0, 0.0
        for k in range(1, args.evals + 1):
            target += args.minutes * 60 / args.evals
            while spent < target:
                idx = rng.choice(Xtr.shape[0], 2000, replace=False)
                t = time.process_time()
                est.partial_fit(Xtr[idx])
                spent += time.process_time() - t
            b, se, *_ = evaluate(est, Xte, args.ais_betas, args.ais_runs, 7)
            line = (f"learning_rate={lr:g} (step {step0:.5f} at the start)"
                    f"{f', average={decay:g}' if decay else ''}: after "
                    f"{spent / 60:.1f} training CPU-min, {est.n_updates_ - start.n_updates_} "
                    f"more updates: bound {b:.3f} (AIS s.e. {se:.3f})")
            if decay:
                raw = copy.deepcopy(est)
                raw.coefs_ = list(est._iterate.coefs)
                raw.intercepts_ = list(est._iterate.intercepts)
                rb, rse, *_ = evaluate(raw, Xte, args.ais_betas, args.ais_runs, 7)
                line += f"; raw iterate {rb:.3f} (AIS s.e. {rse:.3f}): average {b - rb:+.3f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()

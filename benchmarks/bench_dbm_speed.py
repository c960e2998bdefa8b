"""CPU time of one DBMCAST update against the float32 GEMM floor, and CAST against SAP (issue 15).

The paper's MNIST model, 784-500-1000, batch 100, 100 persistent chains, 5 mean-field
sweeps (``mean_field_tol=0`` so that every sweep runs, as in the paper) from the
default two starts (``mean_field_starts="best"``), on binary input with MNIST's
density (13 % ones). The models are not pre-trained (small random weights): the
cost of an update does not depend on the weights' values.

The floors are the float32 matrix products an update cannot avoid, timed in the
same run (CPU seconds of one BLAS thread, medians of alternating repetitions). Two are
printed (issue 26):

* **the paper's update, 20 products** (Salakhutdinov 2010, Alg. 1, with the
  doubled-weight start of Salakhutdinov & Hinton 2009): mean-field ``V W0`` once (the
  bottom-up input, kept for every sweep), ``mu1 W1`` for the start's ``h2``, then per
  sweep ``mu2 W1^T`` and ``mu1 W1`` (2 x 5 = 10); one Gibbs sweep of the chains ``v W0``,
  ``h2 W1^T``, ``h1 W0^T``, ``h1 W1``; the gradient ``V^T mu1``, ``mu1^T mu2``,
  ``v^T h1``, ``h1^T h2``. That is 5 products of the ``100 x 784 x 500`` size and
  15 of the ``100 x 500 x 1000`` size. It is the floor of
  ``mean_field_starts="doubled"`` (one start), whose update skips the bound (nothing
  to choose) and takes the chains' energy trace from the sweep's own products.
* **the project's two-start update, 32 products** (``mean_field_starts="best"``):
  the sweeps run on the 2 x 100 stacked rows of the two starts (10 more of the large
  size) and the bound that picks a start per row needs ``mu1 W1`` on them once more
  (2 more): 5 + 27.

Each product is timed as the mean of its layouts (``A B``, ``A B^T``, ``A^T B``).

What is timed is the public path: ``partial_fit`` on 1,000 rows (10 updates of 100,
of which the first computes the verbose figures, as in ``fit``), per update. Printed:
each update against both floors, for float32 and float64 input at the default
``dtype="float32"`` (both train a float32 model; float64 input is converted once per
call), for float64 input with ``dtype=None`` (a float64 model: the rule before issue
26; with two starts that is the update users got before), and CAST / SAP.

Usage (about four minutes of one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_dbm_speed.py \\
        > benchmarks/results/dbm_speed.txt
"""

import argparse
import warnings

import numpy as np

import _common
from skdgm.dbm import DBMCAST

SIZES = (784, 500, 1000)
BATCH = 100


def _product_time(n, a, b, dtype, rng):
    """Mean CPU seconds of an ``n x a`` by ``a x b`` product over its three layouts."""
    A = rng.standard_normal((n, a)).astype(dtype)
    B = rng.standard_normal((a, b)).astype(dtype)
    Bt = np.ascontiguousarray(B.T)
    C = rng.standard_normal((n, b)).astype(dtype)
    t = 0.0
    inner = 5       # back-to-back calls: warm caches, as inside an update
    for f in (lambda: A @ B, lambda: A @ Bt.T, lambda: A.T @ C):
        _, dt = _common.cpu_timed(lambda: [f() for _ in range(inner)])
        t += dt / inner
    return t / 3


def _floors(dtype, rng):
    """``(paper 5 + 15, project 5 + 27)`` product floors in CPU seconds."""
    t0 = _product_time(BATCH, SIZES[0], SIZES[1], dtype, rng)
    t1 = _product_time(BATCH, SIZES[1], SIZES[2], dtype, rng)
    return 5 * t0 + 15 * t1, 5 * t0 + 27 * t1


ROWS = 1000     # one partial_fit call: 10 updates of BATCH rows


def _updater(sampler, starts, dtype, model_dtype="float32"):
    X = (np.random.default_rng(0).random((ROWS, SIZES[0])) < 0.13).astype(dtype)
    est = DBMCAST(n_components=SIZES[1:], sampler=sampler, pretrain=False, n_iter=0,
                  mean_field_tol=0.0, n_mean_field=5, mean_field_starts=starts,
                  batch_size=BATCH, n_chains=100, random_state=0, dtype=model_dtype).fit(X)
    return lambda: est.partial_fit(X)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    _common.header(["targets: SAP <= 1.5 x the paper's 20-product float32 floor (issue 26), "
                    "CAST <= 1.3 x SAP (issue 15)"])
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    runs = {(s, st, np.dtype(d).name, m): _updater(s, st, d, m)
            for s, st, d, m in [
                ("sap", "doubled", np.float32, "float32"), ("sap", "best", np.float32, "float32"),
                ("sap", "doubled", np.float64, "float32"), ("sap", "best", np.float64, "float32"),
                ("sap", "doubled", np.float64, None), ("sap", "best", np.float64, None),
                ("cast", "doubled", np.float32, "float32"),
                ("cast", "best", np.float32, "float32")]}
    for f in runs.values():      # warm-up
        f()
    times = {k: [] for k in runs}
    floors = []
    per_call = ROWS // BATCH
    for _ in range(args.repeat):
        floors.append(_floors(np.float32, rng))
        for k, f in runs.items():
            _, dt = _common.cpu_timed(f)
            times[k].append(dt / per_call)
    f20, f32 = (float(np.median([f[i] for f in floors])) for i in (0, 1))
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"DBM {'-'.join(map(str, SIZES))}, batch {BATCH}, 100 chains, 5 mean-field "
          f"sweeps; partial_fit on {ROWS} rows ({per_call} updates, the verbose figures on "
          f"the first); {args.repeat} alternating repetitions, medians of CPU s per update")
    print(f"  float32 floor, the paper's update (5 + 15 products): {f20 * 1e3:.1f} ms")
    print(f"  float32 floor, two starts (5 + 27 products):         {f32 * 1e3:.1f} ms")
    print(f"  {'sampler':7s} {'starts':8s} {'input':8s} {'dtype':8s} {'ms/update':>9s} "
          f"{'x 20-floor':>10s} {'x 32-floor':>10s}")
    for (s, st, d, m), t in med.items():
        print(f"  {s:7s} {st:8s} {d:8s} {str(m):8s} {t * 1e3:9.1f} {t / f20:10.2f} "
              f"{t / f32:10.2f}")
    f32in = "float32", "float32"
    for st in ("doubled", "best"):
        print(f"  CAST / SAP ({st}, float32): "
              f"{med[('cast', st, *f32in)] / med[('sap', st, *f32in)]:.2f}")
    print(f"  two starts / one start (SAP, float32): "
          f"{med[('sap', 'best', *f32in)] / med[('sap', 'doubled', *f32in)]:.2f}")


if __name__ == "__main__":
    main()

"""CPU time of one DBMCAST update against the float32 GEMM floor, and CAST against SAP (issue 15).

The paper's MNIST model, 784-500-1000, batch 100, 100 persistent chains, 5 mean-field
sweeps (``mean_field_tol=0`` so that every sweep runs, as in the paper) from the
default two starts (``mean_field_starts="best"``), on binary input with MNIST's
density (13 % ones). The models are not pre-trained (small random weights): the
cost of an update does not depend on the weights' values.

The floor is the float32 matrix products such an update cannot avoid, timed in the
same run (CPU seconds of one BLAS thread, medians of alternating repetitions):

* mean-field: ``V W0`` once (the bottom-up input, cached), ``mu1 W1`` for the
  doubled-weights start, then per sweep ``mu2 W1^T`` and ``mu1 W1`` on the
  2 x 100 stacked rows of the two starts, and ``mu1 W1`` on them once more for the
  bound that picks a start per row;
* one Gibbs sweep of the chains: ``v W0``, ``h2 W1^T``, ``h1 W0^T``, ``h1 W1``;
* the gradient: ``V^T mu1``, ``mu1^T mu2``, ``v^T h1``, ``h1^T h2``.

That is 5 products of the ``100 x 784 x 500`` size and 27 of the ``100 x 500 x 1000``
size, each timed as the mean of its layouts (``A B``, ``A B^T``, ``A^T B``).

Each repetition times the ``_MONITOR_EVERY`` (10) updates of a pass of which the first
computes the verbose figures (the bound and reconstruction error), as ``fit`` does, and
reports their mean. Printed: SAP / floor (target <= 1.5), CAST / SAP (target <= 1.3) with float32 input
(float32 model), and the same updates on float64 input for comparison.

Usage (about two minutes of one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_dbm_speed.py \\
        > benchmarks/results/dbm_speed.txt
"""

import argparse
import warnings

import numpy as np

import _common
from skdgm.dbm import DBMCAST
from skdgm.dbm import _estimator

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


def _floor(dtype, rng):
    t0 = _product_time(BATCH, SIZES[0], SIZES[1], dtype, rng)
    t1 = _product_time(BATCH, SIZES[1], SIZES[2], dtype, rng)
    return 5 * t0 + 27 * t1


def _updater(sampler, dtype):
    X = (np.random.default_rng(0).random((1000, SIZES[0])) < 0.13).astype(dtype)
    est = DBMCAST(n_components=SIZES[1:], sampler=sampler, pretrain=False, n_iter=1,
                  mean_field_tol=0.0, n_mean_field=5, batch_size=BATCH, n_chains=100,
                  random_state=0)
    X = est._validate_training_data(X, reset=True)
    rng = est._initialize(X, fit=False)
    est._mf_counts = np.zeros(3, dtype=np.int64)
    Vb = X[:BATCH]

    def block():
        # the updates of a pass: the verbose figures on every _MONITOR_EVERY-th one
        for i in range(_estimator._MONITOR_EVERY):
            est._update(Vb, rng, i == 0)
    return block


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    _common.header(["targets (issue 15): SAP <= 1.5 x float32 floor, CAST <= 1.3 x SAP"])
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    runs = {(s, np.dtype(d).name): _updater(s, d)
            for d in (np.float32, np.float64) for s in ("sap", "cast")}
    for f in runs.values():      # warm-up
        f()
    times = {k: [] for k in runs}
    floors = []
    per_block = _estimator._MONITOR_EVERY
    for _ in range(args.repeat):
        floors.append(_floor(np.float32, rng))
        for k, f in runs.items():
            _, dt = _common.cpu_timed(f)
            times[k].append(dt / per_block)
    floor = float(np.median(floors))
    med = {k: float(np.median(v)) for k, v in times.items()}
    print(f"DBM {'-'.join(map(str, SIZES))}, batch {BATCH}, 100 chains, 5 mean-field "
          f"sweeps x 2 starts; {args.repeat} alternating repetitions of {per_block} "
          f"updates (the verbose figures on the first), medians of CPU s per update")
    print(f"  float32 floor (5 + 27 products): {floor * 1e3:.1f} ms")
    for (s, d), t in med.items():
        print(f"  {s:5s} {d:8s} input: {t * 1e3:8.1f} ms/update  {t / floor:5.2f} x floor")
    for d in ("float32", "float64"):
        print(f"  CAST / SAP ({d}): {med[('cast', d)] / med[('sap', d)]:.2f}")


if __name__ == "__main__":
    main()

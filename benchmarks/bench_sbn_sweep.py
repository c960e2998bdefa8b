"""Time the SBN Pólya-Gamma Gibbs step: the hidden-unit sweep and the whole iteration.

The issue's setting (Gan et al. 2015, Sec. 3.1): 784 visible, 200 hidden units, normal
prior, batch 100 rows. Two comparisons, each in one process with alternating
repetitions and CPU time (run it with one BLAS thread):

* the hidden-unit sweep: the Cython kernel against its NumPy twin (same draws, checked);
* one full Gibbs iteration, ``gibbs_iteration(kernels="cython")`` (Cython sweep,
  float32 precisions by one GEMM per chunk, batched Cholesky) against
  ``kernels="numpy"``, the plain NumPy implementation of the same iteration (NumPy
  sweep, float64 precisions, one SciPy Cholesky and two triangular solves per row).
  The target of issue 15 is a ratio of at least 2. The iteration as it was before
  (Cython sweep, float64 row step) is timed too, in the same alternation.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/bench_sbn_sweep.py > benchmarks/results/sbn_sweep.txt
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import alternate, header  # noqa: E402

from skdgm.sbn import _gibbs, _model, _priors  # noqa: E402
from skdgm.sbn._gibbs import draw_polya_gamma, pg_hidden_sweep, pg_hidden_sweep_numpy  # noqa: E402


def setup_sweep(n, J, K, ar, seed=0):
    r = np.random.default_rng(seed)
    h = (r.random((n, K)) < 0.5).astype(float)
    x = (r.random((n, J)) < 0.2).astype(float)
    w = 0.1 * r.normal(size=(J, K))
    lat = np.tril(0.1 * r.normal(size=(K, K)), -1) if ar else None
    a = r.normal(size=(n, K)) + (h @ lat.T if ar else 0.0)
    psi = h @ w.T + r.normal(size=J)
    return [h, a, x, psi, draw_polya_gamma(psi, r), w, lat, draw_polya_gamma(a, r)]


def setup_iteration(n, D, K, seed=0):
    r = np.random.default_rng(seed)
    params = _model.init_params(D, (K,), r)
    X = (r.random((n, D)) < 0.2).astype(float)
    hidden = [(r.random((n, K)) < 0.5).astype(float)]
    pp = dict(_priors.DEFAULT_PRIOR_PARAMS)
    states = [_priors.init_prior_state("normal", (len(b), _model.row_mask(params, l).shape[1]
                                                  - 1), pp) for l, b in enumerate(params.biases)]
    return params, X, hidden, states, pp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--visible", type=int, default=784)
    ap.add_argument("--hidden", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    header()
    n, D, K = args.batch, args.visible, args.hidden

    print("# hidden-unit sweep (CPU ms, median over alternating repetitions)")
    for ar in (False, True):
        data = setup_sweep(n, D, K, ar)

        def run(f):
            a = [None if v is None else v.copy() for v in data]
            f(*a, np.random.default_rng(1))
            return a[0]
        times, out = alternate({"cython": lambda: run(pg_hidden_sweep),
                                "numpy": lambda: run(pg_hidden_sweep_numpy)}, args.repeats)
        tc, tn = np.median(times["cython"]), np.median(times["numpy"])
        print(f"sweep {D}->{K}, batch {n}, autoregressive={ar}: Cython {1e3 * tc:.1f} ms, "
              f"NumPy {1e3 * tn:.1f} ms, speed-up {tn / tc:.2f}x, identical units: "
              f"{np.array_equal(out['cython'], out['numpy'])}", flush=True)

    print("\n# one Gibbs iteration, normal prior (CPU ms, median over alternating "
          "repetitions)")
    params, X, hidden, states, pp = setup_iteration(n, D, K)

    def iteration(kernels):
        h = [a.copy() for a in hidden]
        return _gibbs.gibbs_iteration(params, X, h, states, "normal", pp,
                                      np.random.default_rng(1), kernels=kernels)
    def previous():
        # the iteration before issue 15: the Cython sweep with the float64 row step
        # (the NumPy row path, called with the Cython sweep in place of its twin)
        twin = _gibbs.pg_hidden_sweep_numpy
        _gibbs.pg_hidden_sweep_numpy = _gibbs.pg_hidden_sweep
        try:
            return iteration("numpy")
        finally:
            _gibbs.pg_hidden_sweep_numpy = twin
    times, out = alternate({"cython": lambda: iteration("cython"),
                            "numpy": lambda: iteration("numpy"),
                            "previous": previous}, args.repeats)
    tc, tn = np.median(times["cython"]), np.median(times["numpy"])
    tp = np.median(times["previous"])
    dw = max(float(np.max(np.abs(a - b))) for a, b in
             zip(out["cython"][0].weights + out["cython"][0].biases,
                 out["numpy"][0].weights + out["numpy"][0].biases))
    print(f"iteration {D}->{K}, batch {n}: kernels='cython' {1e3 * tc:.1f} ms "
          f"(min {1e3 * min(times['cython']):.1f}), plain NumPy {1e3 * tn:.1f} ms "
          f"(min {1e3 * min(times['numpy']):.1f}); ratio NumPy / fast = {tn / tc:.2f}x "
          f"(target >= 2); same hidden units: "
          f"{np.array_equal(out['cython'][1][0], out['numpy'][1][0])}; "
          f"max |difference| of the drawn parameters {dw:.2e} (float32 precisions)",
          flush=True)
    print(f"previous iteration (Cython sweep, float64 row step, before issue 15): "
          f"{1e3 * tp:.1f} ms; ratio previous / fast = {tp / tc:.2f}x", flush=True)


if __name__ == "__main__":
    main()

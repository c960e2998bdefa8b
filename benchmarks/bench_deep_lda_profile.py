"""Where one 128-64-32 minibatch of DeepLDA's local sampler spends its time.

Warms a ``DeepLDA((128, 64, 32))`` up on 20 TLASGR minibatches of 20News, then
runs the upward-downward sampler once on a fresh 200-document minibatch with
the authors' 60 + 30 sweeps (flat start), with
a CPU-time timer around every kernel call (the layer-1 collapsed sweep and its
start, its prior sums and Rao-Blackwellised collection, the multinomial
partitions of the upper layers, CRT, the gamma draws of theta and the small
NumPy draws); "rest" is the NumPy glue of the sweep (matrix products, sums,
allocations). The same minibatch is then profiled with the explicit layer-1
sampler (``collapse_theta=False``), same seeds, for comparison.

Usage:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \
      python benchmarks/bench_deep_lda_profile.py
"""

import time
from collections import defaultdict

import numpy as np

from skdgm import DeepLDA
from skdgm.deep_lda import _collapsed, _local

from _deep_lda_data import load_20news
from _common import header

TIMES = defaultdict(float)


def _timed(name, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        out = fn(*args, **kwargs)
        key = name(*args) if callable(name) else name
        TIMES[key] += time.process_time() - t0
        return out
    return wrapper


class _TimedGenerator:
    """A Generator whose NumPy-level draws are timed; kernels reach its bit generator."""

    def __init__(self, rng):
        self._rng = rng
        self.bit_generator = rng.bit_generator

    def standard_gamma(self, *args):
        return _timed("numpy gamma (rates c_j)", self._rng.standard_gamma)(*args)

    def beta(self, *args):
        return _timed("numpy beta (p_j)", self._rng.beta)(*args)

    def random(self, *args):
        return self._rng.random(*args)


def main():
    header()
    X, _, _, _ = load_20news()
    n = X.shape[0]
    Ks = (128, 64, 32)
    m = DeepLDA(Ks, total_samples=n, random_state=0, n_jobs=1)
    rng = np.random.default_rng(0)
    for _ in range(20):
        m.partial_fit(X[np.sort(rng.choice(n, 200, replace=False))])
    Xb = X[np.sort(rng.choice(n, 200, replace=False))]
    kern = _local._KERNELS["cython"]
    _local._KERNELS["timed"] = (
        kern[0], _timed(lambda *a: f"partition K={a[1].shape[1]}", kern[1]),
        _timed("crt", kern[2]), kern[3], _timed("gamma_theta", kern[4]),
        _timed(lambda *a: f"partition K={a[3].shape[1]} (layer 1)", kern[5]),
        kern[6], _timed("entry_dots (layer-1 prior sums)", kern[7]), kern[8])
    ck = _collapsed.KERNELS["cython"]
    _collapsed.KERNELS["timed"] = (
        _timed("layer-1 start (assign)", ck[0]), _timed("layer-1 collapsed sweep", ck[1]),
        _timed("layer-1 Rao-Blackwell sums", ck[2]), _timed("layer-1 prior sums", ck[3]))
    for collapse in (True, False):
        TIMES.clear()
        t0 = time.process_time()
        _local.upward_downward(Xb, _TimedGenerator(np.random.default_rng(0)), phis=m.topics_,
                               r=m.r_, n_burn=60, n_collect=30, kernels="timed",
                               collapse_theta=collapse)
        total = time.process_time() - t0
        sampler = "collapsed" if collapse else "explicit"
        print(f"128-64-32, 200 documents ({int(Xb.sum())} tokens, {Xb.nnz} entries), "
              f"90 sweeps, {sampler} layer 1: {total:.3f} s")
        for key, val in sorted(TIMES.items(), key=lambda kv: -kv[1]):
            print(f"  {key:28s} {val:.3f} s")
        print(f"  {'rest (NumPy glue)':28s} {total - sum(TIMES.values()):.3f} s", flush=True)


if __name__ == "__main__":
    main()

"""Throughput of DeepLDA's local upward-downward Gibbs sampler on 20News.

Measures one core's CPU time per 200-document minibatch (the local sampler
alone, and the whole TLASGR step) at K = 128 and 128-64-32 with the authors'
sweep counts (20 L burn-in + 10 L collected), and the token-sweeps per second,
next to the authors' MATLAB+MEX figures (0.47 s and 1.46 s per minibatch,
~0.66 M token-sweeps/s at K = 128).

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \
      python benchmarks/bench_deep_lda_throughput.py [--batches 10] [--warmup 20]
"""

import argparse
import time

import numpy as np

from skdgm import DeepLDA
from skdgm.deep_lda._local import upward_downward

from _deep_lda_data import load_20news

REFERENCE = {(128,): 0.47, (128, 64, 32): 1.46}  # s of one core per minibatch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=10, help="timed minibatches")
    ap.add_argument("--warmup", type=int, default=20,
                    help="TLASGR minibatches before timing, so Phi is no longer random")
    args = ap.parse_args()
    X, _, _, _ = load_20news()
    n = X.shape[0]
    print(f"20News train: {n} docs, {int(X.sum())} tokens; minibatch 200")
    for Ks in [(128,), (128, 64, 32)]:
        L = len(Ks)
        m = DeepLDA(Ks, total_samples=n, random_state=0, n_jobs=1)
        rng = np.random.default_rng(0)
        for _ in range(args.warmup):
            m.partial_fit(X[np.sort(rng.choice(n, 200, replace=False))])
        local_t, step_t, tokens = 0.0, 0.0, 0
        for b in range(args.batches):
            Xb = X[np.sort(rng.choice(n, 200, replace=False))]
            tokens += int(Xb.sum())
            t0 = time.process_time()
            upward_downward(Xb, np.random.default_rng(b), phis=m.topics_, r=m.r_,
                            n_burn=20 * L, n_collect=10 * L)
            t1 = time.process_time()
            m.partial_fit(Xb)
            t2 = time.process_time()
            local_t += t1 - t0
            step_t += t2 - t1
        sweeps = 30 * L
        per_local = local_t / args.batches
        per_step = step_t / args.batches
        rate = tokens * sweeps / local_t
        ref = REFERENCE[Ks]
        print(f"K={'-'.join(map(str, Ks)):>10}: local sampler {per_local:.3f} s/minibatch, "
              f"full TLASGR step {per_step:.3f} s/minibatch, {sweeps} sweeps, "
              f"{rate / 1e6:.2f} M token-sweeps/s (one core); authors {ref:.2f} s "
              f"-> speed-up x{ref / per_step:.2f} (full step)")


if __name__ == "__main__":
    main()

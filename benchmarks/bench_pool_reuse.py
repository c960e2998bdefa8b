"""What a stream of ``partial_fit`` calls pays for its joblib workers.

Issue 15 asks for one worker pool reused across calls. Each ``partial_fit`` call
opens its own :func:`skdgm._core.chains.chain_pool` (one :class:`joblib.Parallel`
per call, so that nothing un-picklable lives on the estimator); the process workers
behind it are loky's reusable executor, started by the first call and reused by
every later one. This script measures what that saves, side by side in one run:
a ``DeepLDA`` stream (``n_jobs=2``, the documents of each local sweep split into
chunks that run on the workers) timed per call

* ``warm``: as a user runs it; the workers outlive each call;
* ``cold``: the same calls with loky's executor shut down before each one, which is
  what a pool created and torn down per call would cost;

and checks that both streams fit the same topics. Times are wall-clock
seconds (the work runs in other processes, which ``process_time`` does not see),
medians over alternating repetitions, so load on a shared machine hits both alike.

Usage (about a minute)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_pool_reuse.py \\
        > benchmarks/results/pool_reuse.txt
"""

import argparse
import os
import sys
import time
import warnings

import numpy as np
from joblib import parallel_config
from joblib.externals.loky import get_reusable_executor

from skdgm import DeepLDA

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import header  # noqa: E402


def corpus(n_docs, n_words, seed=0):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(n_words, 0.05), size=20)
    mix = rng.dirichlet(np.full(20, 0.3), size=n_docs)
    return rng.poisson(60 * mix @ topics).astype(np.int64)


def stream(X, batch_size, cold):
    est = DeepLDA(n_components=32, batch_size=batch_size, n_jobs=2, random_state=0)
    per_call = []
    for start in range(0, X.shape[0], batch_size):
        if cold:
            get_reusable_executor().shutdown(wait=True)
        t = time.perf_counter()
        est.partial_fit(X[start:start + batch_size])
        per_call.append(time.perf_counter() - t)
    return est, per_call


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2_000)
    ap.add_argument("--words", type=int, default=500)
    ap.add_argument("--batch-size", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    header()
    X = corpus(args.docs, args.words)
    n_calls = -(-args.docs // args.batch_size)
    print(f"DeepLDA(n_components=32, n_jobs=2), loky backend: {args.docs} documents x "
          f"{args.words} words streamed in {n_calls} partial_fit calls of "
          f"{args.batch_size}; {args.repeat} alternating repetitions\n")
    times = {"warm": [], "cold": []}
    fits = {}
    with warnings.catch_warnings(), parallel_config(backend="loky"):
        warnings.simplefilter("ignore")
        stream(X[:args.batch_size], args.batch_size, cold=False)    # start the workers
        for _ in range(args.repeat):
            for kind in ("warm", "cold"):
                fits[kind], per_call = stream(X, args.batch_size, cold=kind == "cold")
                times[kind].append(per_call)
    for kind in ("warm", "cold"):
        t = np.median(np.array(times[kind]), axis=0)
        print(f"  {kind}: first call {t[0] * 1e3:7.1f} ms, later calls median "
              f"{np.median(t[1:]) * 1e3:7.1f} ms, whole stream {t.sum():6.2f} s")
    warm = np.median(np.array(times["warm"]).sum(axis=1))
    cold = np.median(np.array(times["cold"]).sum(axis=1))
    same = np.array_equal(fits["warm"].components_[0], fits["cold"].components_[0])
    print(f"\n  cold / warm whole stream: {cold / warm:.2f}x; same fitted topics: {same}")


if __name__ == "__main__":
    main()

"""DeepLDA's speed against its peers on 20 Newsgroups, side by side in one process (issue 15).

Three figures, each a ratio of CPU times measured in this run (``time.process_time``,
one BLAS thread; the machine is shared, so only same-run ratios are meaningful):

1. **Local sampler, token-sweeps per CPU-second, K = 128.** DeepLDA's upward-downward
   Gibbs sampler (one layer, the Cython kernels) against tomotopy's collapsed Gibbs
   LDA sampler (``tomotopy.LDAModel(k=128)``, one worker) on the same documents and
   the same number of sweeps. Skipped with a message when tomotopy is not installed
   (``pip install tomotopy``).
2. **Streaming, documents per CPU-second, K = 128.** ``DeepLDA(128).partial_fit`` on
   200-document minibatches at its defaults against scikit-learn's
   ``LatentDirichletAllocation(128, learning_method="online").partial_fit`` on the
   same minibatches.
3. **Cost of one minibatch update at K = 512 against K = 32** (one layer, defaults, after
   warm-up updates): linear work in K would give 16x.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_deep_lda_throughput.py [--repeats 5] [--data-home DIR] \\
        | tee benchmarks/results/deep_lda_throughput.txt
"""

import argparse
import time

import numpy as np

from skdgm import DeepLDA
from skdgm.deep_lda._local import upward_downward

from _deep_lda_data import load_20news
from _common import header


def cpu(fn, *args, **kwargs):
    t = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - t


def local_vs_tomotopy(X, n_docs, sweeps, repeats):
    """Figure 1: token-sweeps per CPU-second of the two local samplers at K = 128."""
    Xb = X[:n_docs]
    tokens = int(Xb.sum())
    # DeepLDA's local sampler under topics warmed up on the corpus (not random ones)
    warm = DeepLDA(128, n_iter=1, random_state=0, n_jobs=1).fit(X[:2000])
    try:
        import tomotopy as tp
    except ImportError:
        tp = None
        print("local sampler: tomotopy not installed (pip install tomotopy): "
              "comparison skipped")
    docs = []
    if tp is not None:
        Xc = Xb.tocsr()
        for j in range(Xc.shape[0]):
            lo, hi = Xc.indptr[j], Xc.indptr[j + 1]
            words = np.repeat(Xc.indices[lo:hi], Xc.data[lo:hi].astype(int))
            docs.append([f"w{w}" for w in words])
    ours, theirs = [], []
    for rep in range(repeats):   # alternate, so both see the same machine load
        _, t = cpu(upward_downward, Xb, np.random.default_rng(rep), phis=warm.topics_,
                   r=warm.r_, n_burn=0, n_collect=sweeps)
        ours.append(tokens * sweeps / t)
        if tp is not None:
            mdl = tp.LDAModel(k=128, seed=rep)
            for d in docs:
                if d:
                    mdl.add_doc(d)
            mdl.train(0, workers=1)          # builds its state (not timed)
            _, t = cpu(mdl.train, sweeps, workers=1)
            theirs.append(tokens * sweeps / t)
    line = (f"local sampler, K=128, {n_docs} docs ({tokens} tokens) x {sweeps} sweeps: "
            f"DeepLDA {np.median(ours) / 1e6:.2f} M token-sweeps/CPU-s")
    if theirs:
        line += (f"; tomotopy {tp.__version__} LDA (workers=1) "
                 f"{np.median(theirs) / 1e6:.2f} M; ratio DeepLDA/tomotopy "
                 f"{np.median(ours) / np.median(theirs):.2f} (target >= 1)")
    print(line, flush=True)


def streaming_vs_sklearn(X, n_batches, repeats):
    """Figure 2: documents per CPU-second of partial_fit streams at K = 128."""
    from sklearn.decomposition import LatentDirichletAllocation

    n = X.shape[0]
    rng = np.random.default_rng(0)
    batches = [X[np.sort(rng.choice(n, 200, replace=False))] for _ in range(n_batches)]
    ours, theirs = [], []
    for rep in range(repeats):
        m = DeepLDA(128, total_samples=n, random_state=rep, n_jobs=1)
        t = time.process_time()
        for b in batches:
            m.partial_fit(b)
        ours.append(200 * n_batches / (time.process_time() - t))
        s = LatentDirichletAllocation(128, learning_method="online", total_samples=n,
                                      batch_size=200, random_state=rep)
        t = time.process_time()
        for b in batches:
            s.partial_fit(b)
        theirs.append(200 * n_batches / (time.process_time() - t))
    print(f"streaming partial_fit, K=128, {n_batches} minibatches of 200: DeepLDA "
          f"{np.median(ours):.0f} docs/CPU-s (local sweeps {m.local_burn_in} + "
          f"{m.local_samples}); sklearn online LDA {np.median(theirs):.0f} docs/CPU-s; "
          f"ratio {np.median(ours) / np.median(theirs):.2f} (target >= 1)", flush=True)


def k_ratio(X, warmup, timed, repeats):
    """Figure 3: CPU of one minibatch update at K = 512 over K = 32."""
    n = X.shape[0]
    rng = np.random.default_rng(1)
    warm = [X[np.sort(rng.choice(n, 200, replace=False))] for _ in range(warmup)]
    test = [X[np.sort(rng.choice(n, 200, replace=False))] for _ in range(timed)]
    models = {}
    for K in (32, 512):
        models[K] = DeepLDA(K, total_samples=n, random_state=0, n_jobs=1)
        for b in warm:
            models[K].partial_fit(b)
    per = {32: [], 512: []}
    for rep in range(repeats):
        for K in (32, 512):
            m = models[K]
            t = time.process_time()
            for b in test:
                m.partial_fit(b)
            per[K].append((time.process_time() - t) / timed)
    floor = {K: float(np.mean(models[K].transform(test[0]) <= 1e-99)) for K in (32, 512)}
    a, b = np.median(per[32]), np.median(per[512])
    print(f"minibatch update after {warmup} warm-up updates: K=32 {a * 1e3:.1f} ms, "
          f"K=512 {b * 1e3:.1f} ms; ratio {b / a:.1f}x (16x if linear in K; target "
          f"<= 20x); share of normalised theta at the floor: K=32 {floor[32]:.3f}, "
          f"K=512 {floor[512]:.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--docs", type=int, default=500, help="documents of figure 1")
    ap.add_argument("--sweeps", type=int, default=20, help="sweeps of figure 1")
    ap.add_argument("--stream-batches", type=int, default=20)
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args()
    header()
    X, _, _, _ = load_20news(args.data_home)
    print(f"20 Newsgroups train: {X.shape[0]} docs, {int(X.sum())} tokens, "
          f"{X.shape[1]} words; medians of {args.repeats} alternating repeats", flush=True)
    local_vs_tomotopy(X, args.docs, args.sweeps, args.repeats)
    streaming_vs_sklearn(X, args.stream_batches, args.repeats)
    k_ratio(X, warmup=10, timed=5, repeats=args.repeats)


if __name__ == "__main__":
    main()

"""DeepLDA's public methods against tomotopy, token-sweeps per CPU-second (issue 26).

The throughput benchmark (``bench_deep_lda_throughput.py``) times the local sampler's
kernel; a user calls ``transform`` and ``partial_fit``. This script times those, at
K = 128 with 20 discarded + 10 collected local sweeps, on 20 Newsgroups documents,
beside the kernel and the anchor in the same process (``time.process_time``, one BLAS
thread, medians of alternating repeats):

1. ``DeepLDA(128, local_burn_in=20, local_samples=10).transform`` of ``--docs``
   documents (topics warmed up by one pass over them, five kept global samples):
   the token-sweeps it makes (tokens x 30) per CPU-second.
2. ``partial_fit`` on the same documents in minibatches of 200 (each minibatch's
   20 + 10 local sweeps and its global update): token-sweeps per CPU-second.
3. The kernel alone: :func:`skdgm.deep_lda._local.upward_downward` on all the
   documents at once, 30 sweeps, no EM start (the throughput benchmark's figure).
4. The anchor: tomotopy's collapsed Gibbs LDA (``tomotopy.LDAModel(k=128)``,
   ``workers=1``), ``train(30)`` on the same documents (its state built untimed).
   Skipped with a message when tomotopy is not installed (``pip install tomotopy``).

5. ``transform`` again with the documents cut into other chunk sizes (``--chunk-docs``;
   ``skdgm.deep_lda._runs.CHUNK_DOCS``, one local-sampler task per chunk), the figure
   behind its choice of 400.

Each DeepLDA figure is printed with its ratio to the anchor; target >= 1.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_deep_lda_public.py [--docs 2000] [--repeats 5] \\
        | tee benchmarks/results/deep_lda_public.txt
"""

import argparse
import time

import numpy as np

from skdgm import DeepLDA
from skdgm.deep_lda import _runs
from skdgm.deep_lda._local import upward_downward

from _common import header
from _deep_lda_data import load_20news

BURN, COLLECT = 20, 10


def _cpu(fn):
    t = time.process_time()
    fn()
    return time.process_time() - t


def _tomotopy_docs(X):
    docs = []
    for j in range(X.shape[0]):
        lo, hi = X.indptr[j], X.indptr[j + 1]
        words = np.repeat(X.indices[lo:hi], X.data[lo:hi].astype(int))
        if words.size:
            docs.append([f"w{w}" for w in words])
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--chunk-docs", type=int, nargs="*", default=[100, 200])
    ap.add_argument("--data-home", default=None)
    args = ap.parse_args()
    header()
    X, _, _, _ = load_20news(args.data_home)
    Xb = X[:args.docs].tocsr()
    tokens = int(Xb.sum())
    sweeps = BURN + COLLECT
    print(f"20 Newsgroups train, first {args.docs} docs ({tokens} tokens), K=128, "
          f"{BURN} + {COLLECT} local sweeps; medians of {args.repeats} alternating "
          f"repeats", flush=True)
    params = dict(local_burn_in=BURN, local_samples=COLLECT, random_state=0, n_jobs=1)
    warm = DeepLDA(128, n_iter=1, **params).fit(Xb)
    print(f"warm model: {warm.n_updates_} updates, {len(warm.posterior_samples_)} kept "
          f"global samples", flush=True)
    try:
        import tomotopy as tp
    except ImportError:
        tp = None
        print("tomotopy not installed (pip install tomotopy): anchor skipped")
    docs = _tomotopy_docs(Xb) if tp is not None else []
    batches = [Xb[i:i + 200] for i in range(0, Xb.shape[0], 200)]
    rates = {"transform": [], "partial_fit": [], "kernel": [], "tomotopy": []}
    default_chunk = _runs.CHUNK_DOCS
    for c in args.chunk_docs:
        rates[c] = []
    for rep in range(args.repeats):     # alternate, so all see the same machine load
        t = _cpu(lambda: warm.transform(Xb))
        rates["transform"].append(tokens * sweeps / t)
        for c in args.chunk_docs:
            _runs.CHUNK_DOCS = c
            t = _cpu(lambda: warm.transform(Xb))
            rates[c].append(tokens * sweeps / t)
        _runs.CHUNK_DOCS = default_chunk
        model = DeepLDA(128, total_samples=X.shape[0], **params)
        model.partial_fit(batches[0])       # the first call draws the initial topics
        t = _cpu(lambda: [model.partial_fit(b) for b in batches[1:]])
        rates["partial_fit"].append(sum(int(b.sum()) for b in batches[1:]) * sweeps / t)
        t = _cpu(lambda: upward_downward(Xb, np.random.default_rng(rep), phis=warm.topics_,
                                         r=warm.r_, n_burn=BURN, n_collect=COLLECT))
        rates["kernel"].append(tokens * sweeps / t)
        if tp is not None:
            mdl = tp.LDAModel(k=128, seed=rep)
            for d in docs:
                mdl.add_doc(d)
            mdl.train(0, workers=1)         # builds its state (not timed)
            t = _cpu(lambda: mdl.train(sweeps, workers=1))
            rates["tomotopy"].append(tokens * sweeps / t)
    med = {k: float(np.median(v)) for k, v in rates.items() if v}
    anchor = med.get("tomotopy")
    for key, what in [("transform", "DeepLDA.transform (public)"),
                      ("partial_fit", "DeepLDA.partial_fit, minibatches of 200 (public)"),
                      ("kernel", "upward_downward kernel, one chunk, no EM start"),
                      ("tomotopy", "tomotopy LDAModel.train, workers=1 (anchor)")]:
        line = f"{what}: {med[key] / 1e6:.2f} M token-sweeps/CPU-s"
        if anchor and key != "tomotopy":
            line += f"; ratio to tomotopy {med[key] / anchor:.2f} (target >= 1)"
        print(line, flush=True)
    print(f"public / kernel: transform {med['transform'] / med['kernel']:.2f}, "
          f"partial_fit {med['partial_fit'] / med['kernel']:.2f}", flush=True)
    for c in args.chunk_docs:
        print(f"transform with chunks of {c} docs: {med[c] / 1e6:.2f} M token-sweeps/CPU-s "
              f"({med[c] / med['transform']:.2f}x the default chunks of {default_chunk})",
              flush=True)


if __name__ == "__main__":
    main()

"""How much the tree reduction of the blocks' statistics moves a DeepLDA dask fit (issue 28).

A minibatch's blocks' statistics are summed by a tree of pairwise tasks where they
live (``skdgm.deep_lda._train.add_block_stats``), so the client receives one array
per update; before, every block's came back and was summed on the client in block
order. Both are exact sums of the same numbers, rounded in another order, and
every later draw reads the rounded sums. This script fits the same rows, as the
same 8 blocks, both ways (no client: the blocks path gives the same fit with or
without one and for any number of workers, tests/test_dask_blocks.py) and reports
how far apart the fits end: the largest topic and ``r`` differences, the training
perplexity of the last pass and the held-out perplexity, against the in-memory fit
of the same rows for scale (issue 28's quality goal: within 2 % of it).

The paper's 20News split, K = 64, ``n_iter="auto"`` (the fixed rule on a dask
array), batch 200, defaults otherwise: the settings of ``bench_dask_fit.py``'s
quality part.

``--rbm`` instead measures the same for GaussianBernoulliRBM(16) and
DBMCAST((16, 16), ``pretrain=False``), whose positive-phase sums go through the same
tree (``skdgm._core.blocks.add_parts``), on ``bench_dask_rbm_fit.py``'s digits
(8 blocks, 30 passes, exact held-out log-likelihood); the flat sums are the
blocks' results gathered and summed in block order by the wing, as before.

Usage (about 5 minutes of one core; ``--rbm`` about 1)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_tree.py > benchmarks/results/dask_tree.txt
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_tree.py --rbm > benchmarks/results/dask_tree_rbm.txt
"""

import argparse
import os
import sys
import time
import warnings
from functools import partial
from unittest import mock

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402
from _common import header  # noqa: E402


def fit(X, seed, k, flat):
    from skdgm import DeepLDA
    from skdgm.deep_lda import _train

    est = DeepLDA(n_components=k, random_state=seed)
    t = time.process_time()
    if flat:        # every block's statistics to the client, summed in block order
        with mock.patch.object(_train, "blocks_local_stats",
                               partial(_train.blocks_local_stats, combine=None)):
            est.fit(X)
    else:
        est.fit(X)
    return est, time.process_time() - t


def _flat_map_rows():
    """``RowBlocks.map_rows`` without its tree: every block's result comes back and
    the wing sums them in block order (its code for a list of parts)."""
    from skdgm._core.blocks import RowBlocks

    real = RowBlocks.map_rows

    def flat(self, func, rows, shared, extras, combine=None):
        return real(self, func, rows, shared, extras)

    return mock.patch.object(RowBlocks, "map_rows", flat)


def rbm(args):
    import dask.array as da
    from bench_dask_rbm_fit import _data
    from skdgm import DBMCAST, GaussianBernoulliRBM

    (g_train, g_test), (b_train, b_test) = _data()
    rows = -(-g_train.shape[0] // args.blocks)
    print(f"digits 1,500 / 297 rows, {args.blocks} dask blocks, {args.n_iter} passes, "
          f"batch 100, no client; exact held-out mean log p\n")
    models = {
        "GaussianBernoulliRBM(16)": (lambda s: GaussianBernoulliRBM(
            n_components=16, n_iter=args.n_iter, batch_size=100, random_state=s),
            g_train, g_test, lambda e: [e.components_, e.intercept_hidden_, e.mean_,
                                        e.log_variance_]),
        "DBMCAST((16, 16), pretrain=False)": (lambda s: DBMCAST(
            n_components=(16, 16), n_iter=args.n_iter, batch_size=100, pretrain=False,
            random_state=s), b_train, b_test, lambda e: list(e.coefs_) + list(e.intercepts_)),
    }
    for name, (make, X, X_test, params) in models.items():
        Xd = da.from_array(X, chunks=(rows, X.shape[1]))
        for seed in range(args.seeds):
            ests, score = {}, {}
            for way in ("flat", "tree"):
                t = time.process_time()
                if way == "flat":
                    with _flat_map_rows():
                        ests[way] = make(seed).fit(Xd)
                else:
                    ests[way] = make(seed).fit(Xd)
                cpu = time.process_time() - t
                score[way] = float(ests[way].score(X_test))
                print(f"  {name:34s} seed {seed}  {way}  fit {cpu:5.1f} CPU-s  held-out "
                      f"{score[way]:.6f}", flush=True)
            diff = max(float(np.max(np.abs(a - b))) for a, b in
                       zip(params(ests["flat"]), params(ests["tree"])))
            scale = max(float(np.max(np.abs(a))) for a in params(ests["flat"]))
            print(f"  {name:34s} seed {seed}  tree vs flat: largest parameter difference "
                  f"{diff:.3g} (largest parameter {scale:.3g}); held-out "
                  f"{score['tree'] - score['flat']:+.6f} nats\n", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_data_home_arg(p)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--docs", type=int, help="the first DOCS training documents only (a smoke test)")
    p.add_argument("--rbm", action="store_true",
                   help="GaussianBernoulliRBM and DBMCAST on digits instead of DeepLDA")
    p.add_argument("--n-iter", type=int, default=30, help="passes of the --rbm fits")
    args = p.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    home = _common.data_home(args.data_home)
    if args.rbm:
        header()
        rbm(args)
        return
    header([f"data: {_common.shown(home)}"])
    import dask.array as da
    from skdgm.datasets import fetch_20newsgroups_bow

    d = fetch_20newsgroups_bow(data_home=home)
    if args.docs:
        d.train = d.train[:args.docs]
    rows = -(-d.train.shape[0] // args.blocks)
    Xd = da.from_array(d.train, chunks=(rows, d.train.shape[1]), asarray=False)
    print(f"20News train {d.train.shape[0]} documents as {args.blocks} dask blocks, "
          f"K = {args.k}, n_iter='auto', batch_size=200; held-out perplexity on the "
          f"{d.test_observed.shape[0]} test documents (perplexity() defaults)\n")
    ppl = {"in-memory": [], "flat": [], "tree": []}
    for seed in range(args.seeds):
        ests = {}
        for name, X, flat in (("in-memory", d.train, False), ("flat", Xd, True),
                              ("tree", Xd, False)):
            est, cpu = fit(X, seed, args.k, flat)
            ests[name] = est
            ppl[name].append(est.perplexity(d.test_observed, d.test_heldout))
            print(f"  seed {seed}  {name:9s} fit {cpu:6.1f} CPU-s  updates {est.n_updates_}  "
                  f"last-pass train perplexity {est.history_['train_perplexity'][-1]:.4f}  "
                  f"held-out {ppl[name][-1]:.3f}", flush=True)
        a, b = ests["flat"], ests["tree"]
        dphi = max(float(np.abs(x - y).max()) for x, y in zip(a.topics_, b.topics_))
        dr = float(np.max(np.abs(a.r_ - b.r_) / np.abs(a.r_)))
        identical = dphi == 0 and dr == 0
        print(f"  seed {seed}  tree vs flat: identical {identical}; largest topic-weight "
              f"difference {dphi:.3g} (weights sum to 1 per topic), largest relative r "
              f"difference {dr:.3g}; held-out {ppl['tree'][-1] - ppl['flat'][-1]:+.4f} "
              f"({100 * (ppl['tree'][-1] / ppl['flat'][-1] - 1):+.3f} %)\n", flush=True)
    m = {k: float(np.mean(v)) for k, v in ppl.items()}
    print(f"mean held-out perplexity: in-memory {m['in-memory']:.2f}, flat {m['flat']:.2f} "
          f"({100 * (m['flat'] / m['in-memory'] - 1):+.2f} %), tree {m['tree']:.2f} "
          f"({100 * (m['tree'] / m['in-memory'] - 1):+.2f} % of in-memory, "
          f"{100 * (m['tree'] / m['flat'] - 1):+.3f} % of flat)")


if __name__ == "__main__":
    main()

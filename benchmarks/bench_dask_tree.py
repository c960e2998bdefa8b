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

Usage (about 5 minutes of one core)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_tree.py > benchmarks/results/dask_tree.txt
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


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_data_home_arg(p)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--k", type=int, default=64)
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--docs", type=int, help="the first DOCS training documents only (a smoke test)")
    args = p.parse_args()
    warnings.simplefilter("ignore", UserWarning)
    home = _common.data_home(args.data_home)
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

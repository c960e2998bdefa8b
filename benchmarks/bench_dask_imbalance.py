"""How unevenly a random minibatch splits over two workers' blocks (issue 28, diagnosis).

The 2-worker speed pass of ``bench_dask_fit.py`` (about 50k documents, the 20News
training set tiled, 4 row blocks placed round-robin on 2 workers: blocks 0 and 2 on
one, 1 and 3 on the other; ``DeepLDA(batch_size=2000)``, 25 updates a pass) waits at
every update for the busier worker. ``dask_fit_profile_after.txt`` measured the
busier worker's block compute at 0.67-2.39 s a pass above the other's. This script
asks how much of that the minibatches themselves explain: for many shuffles of the
same documents (``iter_minibatches``, the fit's own cut, one permutation per pass),
each update's documents and tokens on each worker, and the pass's summed
``|worker 0 - worker 1| / both`` -- no cluster, no fit. A task's cost lies between
"per document" and "per token" (DeepLDA's local samplers run over the tokens), so
both are printed; times that fraction of the profile's 13.09 s of block compute
(``--compute``) it is the imbalance the split alone gives, in seconds a pass. An
exact fix (one that keeps every task's rows and seeds) cannot move rows between
workers, so this is also the most such a fix could win against the split.

Usage (a few CPU-seconds)::

    SKDGM_DATA=../shared/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_dask_imbalance.py > benchmarks/results/dask_fit_imbalance.txt
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import data_home, header  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=2000)
    parser.add_argument("--shuffles", type=int, default=200)
    parser.add_argument("--compute", type=float, default=13.09,
                        help="block compute of one 2-worker pass, s (dask_fit_profile_after.txt)")
    args = parser.parse_args()
    header([f"{args.docs} documents (20News train tiled), {args.blocks} blocks round-robin on "
            f"{args.workers} workers, batch_size={args.batch_size}, {args.shuffles} shuffles "
            f"(seeds 0-{args.shuffles - 1})"])

    from skdgm._core.base import iter_minibatches
    from skdgm.datasets import fetch_20newsgroups_bow

    train = fetch_20newsgroups_bow(data_home=data_home()).train
    tokens = np.asarray(train.sum(axis=1)).ravel()[np.arange(args.docs) % train.shape[0]]
    # the blocks and their workers as in bench_dask_fit.tiled_dask and RowBlocks
    bounds = np.linspace(0, args.docs, args.blocks + 1).round().astype(int)
    block = np.searchsorted(bounds, np.arange(args.docs), side="right") - 1
    worker = block % args.workers
    per_pass = {"documents": [], "tokens": []}
    for seed in range(args.shuffles):
        share = {"documents": [], "tokens": []}
        for idx in iter_minibatches(args.docs, args.batch_size, np.random.default_rng(seed)):
            for name, weight in (("documents", np.ones(idx.size)), ("tokens", tokens[idx])):
                load = np.bincount(worker[idx], weights=weight, minlength=args.workers)
                share[name].append((load.max() - load.min(), load.sum()))
        for name, pairs in share.items():
            gap, total = np.array(pairs).sum(axis=0)
            per_pass[name].append(gap / total)
    print(f"documents: {tokens.size}, tokens per document mean {tokens.mean():.1f}, "
          f"sd {tokens.std():.1f}")
    print(f"{'cost per':10s} {'busier - other, share of a pass':>32s} {'10 %':>7s} "
          f"{'50 %':>7s} {'90 %':>7s}   {'s a pass (x compute)':>22s}")
    for name, fr in per_pass.items():
        fr = np.array(fr)
        q = np.percentile(fr, [10, 50, 90])
        print(f"{name:10s} {fr.mean():32.4f} {q[0]:7.4f} {q[1]:7.4f} {q[2]:7.4f}   "
              f"{args.compute * fr.mean():8.2f} (10-90 %: {args.compute * q[0]:.2f}-"
              f"{args.compute * q[2]:.2f})")


if __name__ == "__main__":
    main()

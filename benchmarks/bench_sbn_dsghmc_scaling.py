"""Cost of one training iteration against the dataset size (Du et al. 2018, Table 4).

DSGHMC touches one minibatch per iteration (``partial_fit`` with ``total_samples``
set to the dataset size), so its cost should stay flat from 10k to 1M rows; the
part-1 Pólya-Gamma Gibbs sampler sweeps every row per iteration, so its cost
grows linearly. The datasets are binarized MNIST repeated to the wanted size and
kept bit-packed in memory (1M rows = 98 MB); minibatches are unpacked on the fly.

Scaled down to fit a few minutes on a shared 2-core machine: one hidden layer of
200 units, minibatch 100 with the paper's 10 SGHMC steps each; DSGHMC times are
the mean over a few minibatches, Gibbs times one full iteration at 2.5k-20k rows.
Times are CPU seconds of this process (one BLAS thread), which the other jobs on
a shared machine disturb far less than wall time.

Usage (a few CPU-minutes)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sbn_dsghmc_scaling.py \\
        > benchmarks/results/sbn_dsghmc_scaling.txt
"""

import os
import sys
import time

import numpy as np

from skdgm import datasets
from skdgm.sbn import BayesianSBN

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, data_home, header, shown  # noqa: E402

HIDDEN = (200,)
BATCH = 100


def load_packed(home):
    X = datasets.fetch_binarized_mnist(data_home=home, subset="train",
                                       download_if_missing=False).data
    return np.packbits(X, axis=1)               # (50000, 98) packed bits


def time_dsghmc(inference, packed, n_rows, n_iter, seed=0):
    rng = np.random.default_rng(seed)
    data = np.tile(packed, (int(np.ceil(n_rows / len(packed))), 1))[:n_rows]
    est = BayesianSBN(HIDDEN, inference=inference, total_samples=n_rows, random_state=0,
                      burn_in=10**9)
    first = np.unpackbits(data[rng.integers(0, n_rows, BATCH)], axis=1, count=784)
    est.partial_fit(first.astype(float))       # allocate, build the recognition net
    times = []
    for _ in range(n_iter):
        t0 = time.process_time()
        rows = rng.integers(0, n_rows, BATCH)   # a random minibatch of the big dataset
        est.partial_fit(np.unpackbits(data[rows], axis=1, count=784).astype(float))
        times.append(time.process_time() - t0)
    return float(np.mean(times))


def time_gibbs(packed, n_rows):
    X = np.unpackbits(np.tile(packed, (int(np.ceil(n_rows / len(packed))), 1))[:n_rows],
                      axis=1, count=784).astype(float)
    t0 = time.process_time()
    # n_iter=1, no pre-training: one full Pólya-Gamma Gibbs iteration over every row.
    BayesianSBN(HIDDEN, inference="gibbs", prior="student_t", n_iter=1, burn_in=0,
                n_posterior_samples=1, random_state=0).fit(X)
    return time.process_time() - t0


def main():
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", default="dsghmc_nais,dsghmc_gibbs,gibbs")
    add_data_home_arg(ap)
    args = ap.parse_args()
    methods = args.methods.split(",")
    home = data_home(args.data_home)
    header([f"data: binarized MNIST from {shown(home)}"])
    packed = load_packed(home)
    print(f"one hidden layer of {HIDDEN[0]}, minibatch {BATCH}, 10 SGHMC steps per minibatch")
    print(f"{'method':<14}{'rows':>10}{'CPU s / iteration':>20}")
    for n in (10_000, 100_000, 1_000_000) if "dsghmc_nais" in methods else ():
        print(f"{'dsghmc_nais':<14}{n:>10}{time_dsghmc('dsghmc_nais', packed, n, 5):>20.3f}",
              flush=True)
    for n in (10_000, 100_000, 1_000_000) if "dsghmc_gibbs" in methods else ():
        print(f"{'dsghmc_gibbs':<14}{n:>10}{time_dsghmc('dsghmc_gibbs', packed, n, 2):>20.3f}",
              flush=True)
    for n in (2_500, 5_000, 10_000, 20_000) if "gibbs" in methods else ():
        print(f"{'gibbs (batch)':<14}{n:>10}{time_gibbs(packed, n):>20.3f}", flush=True)


if __name__ == "__main__":
    main()

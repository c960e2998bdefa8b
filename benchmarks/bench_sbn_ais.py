"""How many AIS temperatures does a 784-200 SBN need? Same model, same test points,
100 / 300 / 1000 sigmoid-spaced betas, 10 chains per point (Pólya-Gamma sweeps).

A VB model is fitted on a binarized-MNIST training subset first (scaled down to run in a
few minutes on one shared core). Times are CPU seconds of this process.

Usage (a few minutes of one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sbn_ais.py \\
        > benchmarks/results/sbn_ais.txt
"""
import argparse
import os
import sys
import time

import numpy as np

from skdgm import datasets
from skdgm.sbn import BayesianSBN, _gibbs, _model

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, data_home, header, shown  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=500)
    ap.add_argument("--n-iter", type=int, default=10)
    ap.add_argument("--n-test", type=int, default=5)
    ap.add_argument("--betas", type=int, nargs="+", default=[100, 300, 1000])
    add_data_home_arg(ap)
    args = ap.parse_args()
    home = data_home(args.data_home)
    header([f"data: binarized MNIST from {shown(home)}"])
    load = lambda subset, n: datasets.fetch_binarized_mnist(  # noqa: E731
        data_home=home, subset=subset, download_if_missing=False).data[:n].astype(float)
    Xtr, Xte = load("train", args.n_train), load("test", args.n_test)
    print(f"VB SBN 784-200 fitted on {args.n_train} training rows ({args.n_iter} iterations);"
          f" AIS on the first {args.n_test} test rows, 10 chains per row\n", flush=True)
    est = BayesianSBN((200,), inference="vb", n_iter=args.n_iter, n_posterior_samples=1,
                      random_state=0).fit(Xtr)
    for nb in args.betas:
        t = time.process_time()
        lp, se = _model.log_marginal_ais(est.params_, Xte, n_betas=nb, n_runs=10,
                                         random_state=1, transition=_gibbs.ais_transition_pg)
        print(f"{nb:5d} betas: mean log p = {lp.mean():.2f}, per point {np.round(lp, 2)}, "
              f"mean AIS std err {se.mean():.2f}, {time.process_time() - t:.0f} CPU-s", flush=True)


if __name__ == "__main__":
    main()

"""How many AIS temperatures does a 784-200 SBN need? Same model, same test points,
100 / 300 / 1000 sigmoid-spaced betas, 10 chains per point (Pólya-Gamma sweeps).

A VB model is fitted on a binarized-MNIST training subset first (scaled down to run in a
few minutes on one shared core).

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_sbn_ais.py
"""
import argparse
import time
from pathlib import Path

import numpy as np

from skdgm.sbn import BayesianSBN, _gibbs, _model

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=500)
    ap.add_argument("--n-iter", type=int, default=10)
    ap.add_argument("--n-test", type=int, default=5)
    ap.add_argument("--betas", type=int, nargs="+", default=[100, 300, 1000])
    args = ap.parse_args()
    d = np.load(DATA / "binarized_mnist_larochelle.npz")
    Xtr = np.unpackbits(d["train_bits"][:args.n_train], axis=1, count=784).astype(float)
    Xte = np.unpackbits(d["test_bits"][:args.n_test], axis=1, count=784).astype(float)
    est = BayesianSBN((200,), inference="vb", n_iter=args.n_iter, n_posterior_samples=1,
                      random_state=0).fit(Xtr)
    for nb in args.betas:
        t = time.perf_counter()
        lp, se = _model.log_marginal_ais(est.params_, Xte, n_betas=nb, n_runs=10,
                                         random_state=1, transition=_gibbs.ais_transition_pg)
        print(f"{nb:5d} betas: mean log p = {lp.mean():.2f}, per point {np.round(lp, 2)}, "
              f"mean AIS std err {se.mean():.2f}, {time.perf_counter() - t:.0f}s", flush=True)


if __name__ == "__main__":
    main()

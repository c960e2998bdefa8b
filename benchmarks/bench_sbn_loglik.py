"""Test log-likelihood of BayesianSBN variants on binarized MNIST / CalTech-101 silhouettes.

Scaled down to run in minutes on one shared core: a training subset, few iterations, and
AIS (the estimator's ``score_samples``: geometric path from the prior, Pólya-Gamma
augmented sweeps, ``--ais-runs`` chains per point) on a test subset. The paper's figures
(Gan et al. 2015, Tables 1-2) use 10,000 MNIST training images and 40 VB iterations /
40 + 100 Gibbs sweeps, and report VB lower bounds (VB rows) or a harmonic-mean estimate
(the Gibbs row, an upper bound); ours are AIS estimates, which are stochastic lower
bounds in expectation.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 \\
        python benchmarks/bench_sbn_loglik.py --dataset mnist --model sbn_vb
"""
import argparse
import time
from pathlib import Path

import numpy as np

from skdgm.sbn import BayesianSBN

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

PAPER = {  # Tables 1 and 2 of Gan et al. (2015); None where the paper has no such row
    ("mnist", "sbn_gibbs"): -94.30, ("mnist", "sbn_vb"): -116.96,
    ("mnist", "sbn_online_vb"): -118.12, ("mnist", "arsbn_vb"): -102.11,
    ("mnist", "fvsbn_vb"): -100.76, ("mnist", "sbn2_vb"): None,
    ("caltech", "sbn_vb"): -136.84, ("caltech", "sbn2_vb"): -125.60,
    ("caltech", "fvsbn_vb"): -96.40, ("caltech", "arsbn_vb"): -96.78,
    ("caltech", "sbn_gibbs"): None, ("caltech", "sbn_online_vb"): None,
}

MODELS = {
    "sbn_gibbs": dict(n_components=(200,), inference="gibbs"),
    "sbn_vb": dict(n_components=(200,), inference="vb"),
    "sbn_online_vb": dict(n_components=(200,), inference="online_vb"),
    "arsbn_vb": dict(n_components=(200,), inference="vb", autoregressive=True),
    "fvsbn_vb": dict(n_components=(), inference="vb", autoregressive=True),
    "sbn2_vb": dict(n_components=(200, 200), inference="vb", pretrain=True),
}


def load(dataset, n_train, n_test, seed=0):
    if dataset == "mnist":
        d = np.load(DATA / "binarized_mnist_larochelle.npz")
        tr = np.unpackbits(d["train_bits"], axis=1, count=784)
        te = np.unpackbits(d["test_bits"], axis=1, count=784)
    else:
        # no standard split in the shared file: a seeded 6364 / 2307 split (the paper's sizes)
        d = np.load(DATA / "caltech101_silhouettes_28_full.npz")
        X = np.unpackbits(d["X_bits"], axis=1, count=784)
        perm = np.random.default_rng(seed).permutation(len(X))
        tr, te = X[perm[:6364]], X[perm[6364:6364 + 2307]]
    return tr[:n_train].astype(float), te[:n_test].astype(float)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", choices=["mnist", "caltech"], default="mnist")
    ap.add_argument("--model", choices=sorted(MODELS), default="sbn_vb")
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=20)
    ap.add_argument("--n-iter", type=int, default=20)
    ap.add_argument("--burn-in", type=int, default=10)
    ap.add_argument("--ais-betas", type=int, default=100)
    ap.add_argument("--ais-runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    Xtr, Xte = load(args.dataset, args.n_train, args.n_test, args.seed)
    est = BayesianSBN(**MODELS[args.model], n_iter=args.n_iter, burn_in=args.burn_in,
                      n_posterior_samples=5, batch_size=100, n_ais_betas=args.ais_betas,
                      n_ais_runs=args.ais_runs, random_state=args.seed)
    t0 = time.perf_counter()
    est.fit(Xtr)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    lp = est.score_samples(Xte)
    t_eval = time.perf_counter() - t0
    se = lp.std(ddof=1) / np.sqrt(len(lp))
    bound = est.history_.get("bound", [None])[-1]
    paper = PAPER.get((args.dataset, args.model))
    line = (f"{args.dataset} {args.model}: n_train={len(Xtr)} n_iter={args.n_iter} "
            f"test log p (AIS {args.ais_betas} betas x {args.ais_runs} chains, "
            f"{len(Xte)} pts) = {lp.mean():.2f} +- {se:.2f} (sd over points / sqrt n); "
            f"train bound/sample = {bound if bound is None else round(bound, 2)}; "
            f"active units = {est.n_active_units_}; fit {t_fit:.0f}s, eval {t_eval:.0f}s; "
            f"paper: {paper}")
    print(line, flush=True)
    out = Path(__file__).resolve().parent / "results" / "sbn_loglik.txt"
    out.parent.mkdir(exist_ok=True)
    with open(out, "a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    main()

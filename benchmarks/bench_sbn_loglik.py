"""Test log-likelihood of BayesianSBN inferences on binarized MNIST / CalTech-101 silhouettes.

The paper's setting (Gan et al. 2015, Sec. 5: one layer of 200 hidden units, 10,000
MNIST training images) under a CPU budget: each model in ``--models`` trains until
``--cpu-budget`` CPU-seconds (``time.process_time``) are spent, then its test
log-likelihood is estimated by AIS (the estimator's ``score_samples``: geometric path
from the prior, Pólya-Gamma augmented sweeps, ``--ais-betas`` x ``--ais-runs``) on the
same ``--n-test`` test images for every model; the standard error is that over test
images (sd / sqrt n), the AIS error of each image's estimate not included.

- Streaming inferences (``online_vb``, ``dsghmc_gibbs``) call ``partial_fit`` on
  ``--chunk`` rows at a time (``total_samples`` = the training rows) until the budget
  is spent.
- Batch inferences (``vb``, ``gibbs``) cannot stop mid-fit: one pass is timed first
  (a ``fit(n_iter=1)`` whose CPU is reported and not counted), then ``fit`` runs the
  passes the budget buys, at most ``--n-iter`` (the paper's 40 VB sweeps; 40 burn-in +
  100 Gibbs samples), Gibbs burning in 40 % of them.

Without ``--cpu-budget`` every model runs ``--n-iter`` passes (epochs for the
streaming ones). The paper reports VB lower bounds (VB rows) and a harmonic-mean
estimate (its Gibbs row, biased upwards); Du et al. (2018, Table 2) report AIS
estimates for Gibbs and DSGHMC-Gibbs. Ours are AIS estimates, stochastic lower bounds
in expectation.

Usage (about 15 CPU-minutes)::

    SKDGM_DATA=/path/to/data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice \\
        python benchmarks/bench_sbn_loglik.py --n-train 10000 --n-test 80 \\
        --models sbn_online_vb sbn_dsghmc sbn_vb sbn_gibbs --cpu-budget 120 \\
        > benchmarks/results/sbn_loglik.txt

Data comes from :mod:`skdgm.datasets` (``--data-home``, else ``$SKDGM_DATA``; see
``_common.data_home``).
"""
import argparse
import time
import warnings

import numpy as np

from _common import add_data_home_arg, data_home, header, shown
from skdgm.datasets import fetch_binarized_mnist, fetch_caltech101_silhouettes
from skdgm.sbn import BayesianSBN

# Gan et al. (2015), Tables 1-2 (VB: lower bounds; Gibbs: harmonic mean), and
# Du, Zhu, Zhang (2018), Table 2 (AIS); None where a paper has no such row.
PAPER = {
    ("mnist", "sbn_gibbs"): "-94.30 (Gan, harmonic mean); -115.1 (Du et al., AIS)",
    ("mnist", "sbn_vb"): "-116.96 (Gan, VB bound)",
    ("mnist", "sbn_online_vb"): "-118.12 (Gan, VB bound)",
    ("mnist", "sbn_dsghmc"): "-102.9 (Du et al., AIS)",
    ("mnist", "arsbn_vb"): "-102.11 (Gan, VB bound)",
    ("mnist", "fvsbn_vb"): "-100.76 (Gan, VB bound)",
    ("caltech", "sbn_vb"): "-136.84 (Gan, VB bound)",
    ("caltech", "sbn2_vb"): "-125.60 (Gan, VB bound)",
    ("caltech", "fvsbn_vb"): "-96.40 (Gan, VB bound)",
    ("caltech", "arsbn_vb"): "-96.78 (Gan, VB bound)",
}

MODELS = {
    "sbn_gibbs": dict(n_components=(200,), inference="gibbs"),
    "sbn_vb": dict(n_components=(200,), inference="vb"),
    "sbn_online_vb": dict(n_components=(200,), inference="online_vb"),
    "sbn_dsghmc": dict(n_components=(200,), inference="dsghmc_gibbs"),
    "arsbn_vb": dict(n_components=(200,), inference="vb", autoregressive=True),
    "fvsbn_vb": dict(n_components=(), inference="vb", autoregressive=True),
    "sbn2_vb": dict(n_components=(200, 200), inference="vb", pretrain=True),
}
STREAMING = ("online_vb", "dsghmc_gibbs")


def load(home, dataset, n_train, n_test, seed=0):
    if dataset == "mnist":
        tr = fetch_binarized_mnist(data_home=home, subset="train").data
        te = fetch_binarized_mnist(data_home=home, subset="test").data
    else:
        # no standard split: a seeded 6364 / 2307 split (the paper's sizes)
        X = fetch_caltech101_silhouettes(data_home=home).data
        perm = np.random.default_rng(seed).permutation(len(X))
        tr, te = X[perm[:6364]], X[perm[6364:6364 + 2307]]
    return tr[:n_train].astype(float), te[:n_test].astype(float)


def cpu(fn, *a, **k):
    t = time.process_time()
    out = fn(*a, **k)
    return out, time.process_time() - t


def train(name, args, Xtr):
    """(estimator, training CPU-s, what was run, CPU-s of the probe pass)."""
    spec = MODELS[name]
    common = dict(n_posterior_samples=5, batch_size=100, n_ais_betas=args.ais_betas,
                  n_ais_runs=args.ais_runs, random_state=args.seed)
    if args.cpu_budget is None:
        est = BayesianSBN(**spec, **common, n_iter=args.n_iter,
                          **({} if spec["inference"] in STREAMING
                             else {"burn_in": args.burn_in}))
        _, t = cpu(est.fit, Xtr)
        return est, t, f"{args.n_iter} passes", 0.0
    if spec["inference"] in STREAMING:
        est = BayesianSBN(**spec, **common, total_samples=len(Xtr))
        rng, t, rows, order, pos = np.random.default_rng(args.seed), 0.0, 0, None, len(Xtr)
        while t < args.cpu_budget:
            if pos >= len(Xtr):
                order, pos = rng.permutation(len(Xtr)), 0
            chunk = Xtr[order[pos:pos + args.chunk]]
            pos += len(chunk)
            _, dt = cpu(est.partial_fit, chunk)
            t, rows = t + dt, rows + len(chunk)
        return est, t, f"{rows / len(Xtr):.2f} epochs ({rows // 100} minibatches)", 0.0
    probe = BayesianSBN(**spec, **common, n_iter=1, burn_in=0)
    _, t_probe = cpu(probe.fit, Xtr)
    n_iter = int(max(2, min(args.n_iter, args.cpu_budget // t_probe)))
    burn_in = int(0.4 * n_iter) if spec["inference"] == "gibbs" else 0
    est = BayesianSBN(**spec, **common, n_iter=n_iter,
                      **({"burn_in": burn_in} if spec["inference"] == "gibbs" else {}))
    _, t = cpu(est.fit, Xtr)
    what = f"{n_iter} passes" + (f" ({burn_in} burn-in)" if burn_in else "")
    return est, t, what, t_probe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_home_arg(ap)
    ap.add_argument("--dataset", choices=["mnist", "caltech"], default="mnist")
    ap.add_argument("--models", nargs="+", choices=sorted(MODELS), default=["sbn_vb"])
    ap.add_argument("--n-train", type=int, default=1000)
    ap.add_argument("--n-test", type=int, default=20)
    ap.add_argument("--n-iter", type=int, default=None,
                    help="passes (default 20); with --cpu-budget the most a batch model "
                         "runs (default 140, the paper's 40 burn-in + 100 Gibbs samples)")
    ap.add_argument("--burn-in", type=int, default=10, help="Gibbs, without --cpu-budget")
    ap.add_argument("--cpu-budget", type=float, default=None,
                    help="training CPU-seconds per model (see the docstring)")
    ap.add_argument("--chunk", type=int, default=1000,
                    help="rows per partial_fit call of the streaming models")
    ap.add_argument("--ais-betas", type=int, default=100)
    ap.add_argument("--ais-runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.n_iter is None:
        args.n_iter = 20 if args.cpu_budget is None else 140
    home = data_home(args.data_home)
    header([f"data: {shown(home)} (skdgm.datasets)"])
    Xtr, Xte = load(home, args.dataset, args.n_train, args.n_test, args.seed)
    print(f"{args.dataset}: {len(Xtr)} training rows, the first {len(Xte)} test rows; "
          f"AIS {args.ais_betas} betas x {args.ais_runs} runs per test row; "
          + (f"training budget {args.cpu_budget:g} CPU-s per model"
             if args.cpu_budget is not None else f"{args.n_iter} passes per model"))
    print(f"{'model':14s} {'training':34s} {'fit CPU-s':>9s} {'probe':>6s} "
          f"{'test log p':>10s} {'se':>5s} {'eval CPU-s':>10s} {'active':>7s}  paper",
          flush=True)
    for name in args.models:
        with warnings.catch_warnings():
            # a budgeted run stops short of convergence on purpose
            warnings.simplefilter("ignore", category=UserWarning)
            est, t_fit, what, t_probe = train(name, args, Xtr)
            lp, t_eval = cpu(est.score_samples, Xte)
        se = lp.std(ddof=1) / np.sqrt(len(lp))
        print(f"{name:14s} {what:34s} {t_fit:9.1f} {t_probe:6.1f} {lp.mean():10.2f} "
              f"{se:5.2f} {t_eval:10.1f} {str(est.n_active_units_):>7s}  "
              f"{PAPER.get((args.dataset, name))}", flush=True)


if __name__ == "__main__":
    main()

"""Binarized MNIST: test log-likelihood of DSGHMC-Gibbs / DSGHMC-NAIS vs part-1 Gibbs.

Du, Zhu and Zhang (2018), Tables 2-3 (full MNIST, hours of training): SBN 200:
Gibbs -115.1, DSGHMC-Gibbs -102.9, DSGHMC-AIS -103.2; SBN 200-200: Gibbs -102.1,
DSGHMC-Gibbs -100.6, DSGHMC-AIS -93.7.

Scaled to minutes on a shared 2-core machine, and said so in the output: a
training subset (``--n-train`` rows of the standard 50k split), the same training
budget per method (``--budget`` CPU seconds of this single-threaded process: on a
shared machine wall time mostly measures the neighbours), and the test log-likelihood
on the first ``--n-test`` test rows by AIS from the prior (``--betas``
temperatures, ``--runs`` chains per point, exact collapsed Gibbs transitions with
the C sweep); for DSGHMC-NAIS also by importance sampling from its recognition
network (``--is-samples`` proposals per point), which must agree with AIS.

Usage (about 3 CPU-minutes per method)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sbn_dsghmc_mnist.py \\
        --methods dsghmc_nais dsghmc_gibbs gibbs > benchmarks/results/sbn_dsghmc_mnist.txt
"""

import argparse
import os
import sys
import time
from functools import partial

import numpy as np

from skdgm import datasets

from skdgm._core.ais import annealed_importance_sampling, beta_schedule
from skdgm.sbn import BayesianSBN
from skdgm.sbn._dsghmc import gibbs_sweep_fast
from skdgm.sbn._model import ais_log_density, ais_sample_base

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_data_home_arg, data_home, header, shown  # noqa: E402


def _transition(state, beta, rng, *, params, X):
    return gibbs_sweep_fast(params, [X] + list(state), rng, beta)[1:]


def ais_log_px(params, X, n_betas, n_runs, seed=0):
    res = annealed_importance_sampling(
        partial(ais_log_density, params=params, X=X),
        partial(_transition, params=params, X=X),
        partial(ais_sample_base, params=params, n_points=len(X)),
        0.0, beta_schedule(n_betas, "sigmoid"), n_runs, n_groups=1, random_state=seed)
    return np.asarray(res.log_z)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--methods", nargs="+", default=["dsghmc_nais"],
                    choices=["dsghmc_nais", "dsghmc_gibbs", "gibbs"])
    ap.add_argument("--layers", default="200")
    ap.add_argument("--n-train", type=int, default=10_000)
    ap.add_argument("--n-test", type=int, default=100)
    ap.add_argument("--budget", type=float, default=120.0)
    ap.add_argument("--betas", type=int, default=100)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--is-samples", type=int, default=1000)
    ap.add_argument("--learning-rate", type=float, default=0.01)
    add_data_home_arg(ap)
    a = ap.parse_args()
    home = data_home(a.data_home)
    header([f"data: binarized MNIST from {shown(home)}"])
    load = lambda subset, n: datasets.fetch_binarized_mnist(  # noqa: E731
        data_home=home, subset=subset, download_if_missing=False).data[:n].astype(float)
    Xtr, Xte = load("train", a.n_train), load("test", a.n_test)
    for method in a.methods:
        run(a, method, Xtr, Xte)


def run(a, method, Xtr, Xte):
    sizes = tuple(int(k) for k in a.layers.split("-"))
    rng = np.random.default_rng(0)
    t0 = time.process_time()
    if method == "gibbs":
        # Part 1 has no streaming mode: time one iteration, then fit to the budget.
        probe = time.process_time()
        BayesianSBN(sizes, inference="gibbs", n_iter=1, burn_in=0,
                    n_posterior_samples=1, pretrain=False, random_state=0).fit(Xtr)
        per_iter = time.process_time() - probe
        n_iter = max(2, int(a.budget / per_iter))
        t0 = time.process_time()
        est = BayesianSBN(sizes, inference="gibbs", n_iter=n_iter,
                          burn_in=n_iter // 2, n_posterior_samples=5, pretrain=False,
                          random_state=0).fit(Xtr)
        n_steps = f"{n_iter} iterations"
    else:
        est = BayesianSBN(sizes, inference=method, total_samples=len(Xtr),
                          learning_rate=a.learning_rate, burn_in=10**9, random_state=0)
        n_batches = 0
        while time.process_time() - t0 < a.budget:
            for rows in np.array_split(rng.permutation(len(Xtr)), len(Xtr) // 100):
                est.partial_fit(Xtr[rows])
                n_batches += 1
                if time.process_time() - t0 >= a.budget:
                    break
        n_steps = f"{n_batches} minibatches ({n_batches * 100 / len(Xtr):.1f} epochs)"
    train_time = time.process_time() - t0
    print(f"{method} {a.layers}: trained {train_time:.0f} CPU s on {len(Xtr)} rows, {n_steps}",
          flush=True)
    t1 = time.process_time()
    lp_ais = ais_log_px(est.params_, Xte, a.betas, a.runs)
    print(f"  test log p(x), AIS ({a.betas} betas x {a.runs} runs, {len(Xte)} points): "
          f"{lp_ais.mean():.2f} +- {lp_ais.std(ddof=1) / np.sqrt(len(lp_ais)):.2f}  "
          f"[{time.process_time() - t1:.0f} CPU s]", flush=True)
    if method == "dsghmc_nais":
        est.set_params(n_is_samples=a.is_samples)
        t1 = time.process_time()
        lp_is = est.score_samples(Xte, method="is")
        diff = lp_is - lp_ais
        print(f"  test log p(x), IS ({a.is_samples} proposals): {lp_is.mean():.2f}; "
              f"IS - AIS per point: mean {diff.mean():+.2f}, mean |.| {np.abs(diff).mean():.2f}"
              f"  [{time.process_time() - t1:.0f} CPU s]", flush=True)
        print(f"  recognition ESS / L at the end: {est.history_['ess_ratio'][-1]:.3f} "
              f"(first minibatch {est.history_['ess_ratio'][0]:.3f})")


if __name__ == "__main__":
    main()

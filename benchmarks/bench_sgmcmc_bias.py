"""Discretisation bias of the unadjusted SG-MCMC updates against the step size.

Every approximate update of the library runs, as its estimator calls it, on a conjugate
model whose posterior is known (the models and runners are those of
``tests/test_sgmcmc_bias.py``, in ``tests/_sgmcmc_bias.py``): SGHMC and SGNHT on a
Gaussian mean (N = 100 observations; full gradients, then minibatches of 10),
TLASGR / TLFSGR / SGRLD on a Dirichlet-multinomial topic column, the ``r`` step on a
Gamma-Poisson, the GRBM Langevin inner loop on ``v | h`` and the unadjusted Langevin
and Gibbs-Langevin chains (10 cosine-annealed inner steps, the estimator's defaults)
on the marginal ``p(v)`` of a 2-visible, 3-hidden GRBM.

The step ``h`` is dimensionless: the fraction of the way to the posterior mean that one
step's drift moves a coordinate (``eta / s_N^2`` for SGHMC/SGNHT; ``eps_t`` for
TLASGR/TLFSGR and the ``r`` step; ``eps_t max_k x_.k`` for SGRLD; ``alpha`` for the
GRBM moves). Biases of the mean are in posterior standard deviations, biases of the
variance are relative, at the worst coordinate, each with its Monte-Carlo standard
error (batch means over time); "exact" is the stationary variance bias of the
discretised update where it is known in closed form.

Usage (about 100 CPU-seconds on one core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_sgmcmc_bias.py \\
        > benchmarks/results/sgmcmc_bias.txt
"""

import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import _sgmcmc_bias as B  # noqa: E402
from _common import header  # noqa: E402


def _lengths(h, burn, keep, floor=1000):
    return {"n_burn": int(burn / h), "n_keep": max(int(keep / h), floor)}


def rows():
    gm = B.GaussianMean.simulate()
    for method in ("sghmc", "sgnht"):
        for h in (0.3, 0.1, 0.03, 0.01):
            r = B.run_sgmcmc(method, h, n_chains=2000, **_lengths(h, 30, 200))
            ex = B.sghmc_exact_variance(h, 0.1) - 1 if method == "sghmc" else None
            yield method, "full", h, r, ex
    for method in ("sghmc", "sgnht"):
        for h in (0.03, 0.01, 0.003):
            r = B.run_sgmcmc(method, h, n_chains=2000, batch_size=10,
                             **_lengths(h, 100, 200))
            ex = (B.sghmc_exact_variance(h, 0.1, gm.grad_noise_var(10), gm.post_var) - 1
                  if method == "sghmc" else None)
            yield method, "batch 10/100", h, r, ex
    for kind in ("tlasgr", "tlfsgr"):
        for h in (0.3, 0.1, 0.03, 0.01):
            yield kind, "Dir-mult", h, B.run_simplex(kind, h, n_rep=1000,
                                                     **_lengths(h, 15, 300)), None
    for h in (0.3, 0.1, 0.03):
        yield "sgrld", "Dir-mult", h, B.run_simplex("sgrld", h, n_rep=500,
                                                    **_lengths(h, 150, 600)), None
    for h in (0.3, 0.1, 0.03, 0.01):
        yield "r_step", "Gam-Pois", h, B.run_r_step(h, n_rep=2000, **_lengths(h, 15, 300)), None
    for sched in ("constant", "cosine"):
        for a in (0.5, 0.2, 0.1, 0.05, 0.025):
            alphas = (np.full(10, a) if sched == "constant"
                      else B._samplers.cosine_steps(a, 10))
            r = B.run_langevin_inner(a, schedule=sched, n_rep=2000, n_burn=int(10 / a),
                                     n_keep=max(int(100 / a), 1000))
            yield f"grbm inner ({sched})", "v | h", a, r, \
                B.langevin_inner_exact_variance(alphas) - 1
    for sampler in ("langevin", "gibbs_langevin"):
        for a in (0.5, 0.2, 0.1, 0.05):
            # Gibbs-Langevin as the estimator runs it: 10 cosine-annealed inner steps,
            # drawn in closed form (the same law as simulating them).
            r = B.run_grbm_chain(sampler, a, n_rep=2000, inner="closed_form",
                                 **_lengths(a, 10, 100))
            yield f"grbm {sampler}", "p(v), 2x3", a, r, None


def main():
    header()
    print(f"{'kernel':>24s} {'model':>13s} {'step h':>7s} {'mean bias':>10s} {'(se)':>8s} "
          f"{'var bias':>9s} {'(se)':>8s} {'exact var':>10s} {'sec':>6s}")
    t_all = time.process_time()
    t0 = time.process_time()
    for kernel, model, h, r, exact in rows():
        m, mse, v, vse = r.worst()
        ex = "" if exact is None else f"{exact:+.4f}"
        t = time.process_time()
        print(f"{kernel:>24s} {model:>13s} {h:7.3g} {m:+10.4f} {mse:8.4f} {v:+9.4f} "
              f"{vse:8.4f} {ex:>10s} {t - t0:6.1f}", flush=True)
        t0 = t
    print(f"\ntotal {time.process_time() - t_all:.0f} CPU-s")


if __name__ == "__main__":
    main()

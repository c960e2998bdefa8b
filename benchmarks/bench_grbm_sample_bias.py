"""Bias of the unadjusted samplers: in ``sample()`` and in the learned variances.

Part 1, sampling. GaussianBernoulliRBMs with 4 hidden units are fitted to a 2-D
data set (three overlapping clusters, correlation 0.61, standardised), once at
the estimator's defaults (SGD stays near the single-Gaussian saddle, so the
model is nearly Gaussian) and once with Adam at 0.05 (weights up to 0.9, a
correlated, non-Gaussian model). The exact covariance comes from enumerating
the 16 hidden states (the model is a mixture of 16 Gaussians). 20,000 draws of
``sample()`` per sampler and seed are compared with it, with and without the
Metropolis test (``sample(metropolis_adjust=...)``; before issue 12 the
unadjusted chain was the default). The relative standard error of a variance
from 20,000 independent draws is ~1 %.

Part 2, training. Fits on Gaussian data ``N(0, I)`` (5,000 rows): the
maximum-likelihood GRBM is that Gaussian (``W = 0``, ``sigma^2`` the data's
variance; the exact gradient vanishes there and the fitted weights stay near 0)
and the noise that starts the negative chains is already the target, so
``variance_`` over the data's variance isolates what each sampler's stationary
bias does to the learned variances. Defaults, except 30 epochs so that the
variances settle.

Usage (figures in doc/user_guide/grbm.rst)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice -n 10 python benchmarks/bench_grbm_sample_bias.py
"""

import time

import numpy as np

from skdgm import GaussianBernoulliRBM
from skdgm.datasets import make_grbm_mixture
from skdgm.grbm._model import exact_moments
from skdgm.grbm._samplers import cosine_steps, gibbs_langevin_proposal
from skdgm.grbm._train import ISSUE12_SETTINGS

N_DRAWS = 20_000
VARIANTS = [("gibbs", False), ("langevin", False), ("langevin", True),
            ("gibbs_langevin", False), ("gibbs_langevin", True)]


def three_clusters(n, rng):
    """The data of the GRBM tests: skdgm.datasets.make_grbm_mixture."""
    return make_grbm_mixture(n, random_state=rng)


# The estimator's defaults when issue 12 was fixed, pinned (as in the tests).
PINNED = ISSUE12_SETTINGS
FITS = {"defaults": PINNED, "adam": {**PINNED, "optimizer": "adam", "learning_rate": 0.05}}


def exact_cov(est):
    Ev, Evv, _ = exact_moments(est._params())
    return Evv - np.outer(Ev, Ev)


def part_sampling():
    print("== Part 1: sample() against the exact covariance of fitted 2-D models ==")
    X = three_clusters(2000, np.random.default_rng(0))
    for name, kw in FITS.items():
        t = time.process_time()
        est = GaussianBernoulliRBM(n_components=4, random_state=0, **kw).fit(X)
        C = exact_cov(est)
        d = np.sqrt(np.diag(C))
        extra = {k: v for k, v in kw.items() if PINNED.get(k) != v}
        print(f"\nfit '{name}' {extra}: {time.process_time() - t:.1f} CPU-s, "
              f"score {est.score(X):.4f}, variance_ {np.round(est.variance_, 4)}")
        print(f"exact covariance: var {C[0, 0]:.4f} {C[1, 1]:.4f}, cov {C[0, 1]:.4f}")
        if name == "defaults":
            beta0, _, c = gibbs_langevin_proposal(cosine_steps(est.langevin_step_size,
                                                               est.langevin_steps))
            print(f"unadjusted Gibbs-Langevin inflates Var(v | h) by "
                  f"c / (1 - beta0^2) = {c / (1 - beta0 ** 2):.4f}")
        print(f"{'sampler':16s} {'MH':>5s} seed  {'var0 ratio':>10s} {'var1 ratio':>10s} "
              f"{'cov01 err':>10s}  CPU-s")
        for sampler, adjust in VARIANTS:
            est.set_params(sampler=sampler)
            for seed in (1, 2, 3):
                t = time.process_time()
                S = est.sample(N_DRAWS, metropolis_adjust=adjust, random_state=seed)
                dt = time.process_time() - t
                Cs = np.cov(S.T)
                print(f"{sampler:16s} {str(adjust):>5s} {seed:4d}  {Cs[0, 0] / C[0, 0]:10.4f} "
                      f"{Cs[1, 1] / C[1, 1]:10.4f} {(Cs[0, 1] - C[0, 1]) / (d[0] * d[1]):+10.4f}"
                      f"  {dt:.2f}")


def part_training():
    print("\n== Part 2: learned variances on Gaussian data N(0, I), 30 epochs ==")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 2))
    var = X.var(0)
    print(f"data variance (the exact optimum's sigma^2): {var[0]:.4f} {var[1]:.4f}")
    print(f"{'sampler':16s} {'MH':>5s}  {'variance_ / data':>18s} "
          f"{'model var / data':>18s}  {'max |W|':>8s}  CPU-s")
    for sampler, adjust, burn_in in [v + (0,) for v in VARIANTS] + [("gibbs_langevin", True, 50)]:
        t = time.process_time()
        kw = {**PINNED, "sampler": sampler, "metropolis_adjust": adjust, "burn_in": burn_in,
              "n_iter": 30}
        est = GaussianBernoulliRBM(n_components=4, random_state=0, **kw).fit(X)
        dt = time.process_time() - t
        r = est.variance_ / var
        m = np.diag(exact_cov(est)) / var
        label = f"{str(adjust):>5s}" + (f" burn_in={burn_in}" if burn_in else "")
        print(f"{sampler:16s} {label}  {r[0]:8.4f} {r[1]:8.4f}  "
              f"{m[0]:8.4f} {m[1]:8.4f}  {np.abs(est.components_).max():8.4f}  {dt:.1f}")


if __name__ == "__main__":
    from bench_defaults import header  # command, commit, date, CPU, threads
    header()
    part_sampling()
    part_training()

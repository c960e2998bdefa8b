"""Geweke (2004) joint-distribution tests of DeepLDA's exact batch Gibbs kernel.

The kernel under test is :func:`skdgm.deep_lda._gibbs.gibbs_sweep`, the very
function ``DeepLDA(sampler="gibbs")`` runs every sweep: the local upward pass
(Cython partition, CRT and, for the Bernoulli link, zero-truncated Poisson
kernels), ``p^(2)``, ``c^(l)``, the global draws of ``Phi^(l)`` and ``r``, then
the downward ``theta`` draws. The unknowns the chain carries are ``Phi^(1)``,
``Phi^(2)``, ``r``, ``theta^(1)`` and ``theta^(2)`` of a two-layer model with
5 words, 3 and 2 topics and a few short documents; ``p^(2)`` and ``c^(3)`` are
redrawn inside every sweep from their conditionals and never read back, so they
are drawn from the prior by the marginal simulator and then dropped.

The hyperparameters are not the estimator's defaults: with ``a0 = b0 = 0.01``
``p^(2)`` is almost always 0 or 1 and the document lengths have no finite mean.
Here ``a0 = b0 = 20`` and ``e0 = f0 = 20`` hold the scales ``p/(1-p)`` and
``1/c^(3)`` near 1 with tails of index 20, so that the statistics below (second
moments of ``theta`` included) have light tails; with tail indices of 6-8 a
correct kernel failed at 10,000 sweeps because the successive chain rarely
visited the tail that the independent draws sampled (z = -7.2 on the mean of
``theta^(1)**2``). ``c0 = 0.5`` gives documents of about five words. ``eta = 1``
and ``gamma0 / K_2 = 1`` keep the Dirichlet and gamma draws well away from the
subnormal range (the kernels' own floor is the smallest normal double,
2.2e-308, which these draws reach with negligible probability).

The negative control runs the order this library used before issue 12: the
fixed-globals local sweep (:func:`skdgm.deep_lda._local.upward_downward`),
which draws ``theta`` under the old ``Phi`` and ``r``, followed by the global
draws from the same counts.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _geweke import assert_geweke_fails, assert_geweke_passes

from skdgm.deep_lda import _global, _local
from skdgm.deep_lda._gibbs import gibbs_sweep, serial_map

V, KS, N_DOCS = 5, (3, 2), 4
PRIOR = dict(eta=1.0, gamma0=2.0, c0=0.5, a0=20.0, b0=20.0, e0=20.0, f0=20.0)


def sample_prior(rng):
    """``Phi``, ``r``, ``c^(3)``, ``p^(2)`` and ``theta`` from the model's own prior (Eq. 1)."""
    p = PRIOR
    phi1 = rng.dirichlet(np.full(V, p["eta"]), KS[0]).T
    phi2 = rng.dirichlet(np.full(KS[0], p["eta"]), KS[1]).T
    r = rng.gamma(p["gamma0"] / KS[1], 1.0 / p["c0"], KS[1])
    c3 = rng.gamma(p["e0"], 1.0 / p["f0"], N_DOCS)
    p2 = rng.beta(p["a0"], p["b0"], N_DOCS)
    theta2 = rng.gamma(np.broadcast_to(r, (N_DOCS, KS[1]))) / c3[:, None]
    theta1 = rng.gamma(theta2 @ phi2.T) * (p2 / (1 - p2))[:, None]
    tiny = np.finfo(float).tiny
    return ([phi1, phi2], r, [np.maximum(theta1, tiny), np.maximum(theta2, tiny)])


def _csr(x):
    rows, cols = np.nonzero(x)
    indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
    return sp.csr_matrix((x[rows, cols].astype(np.float64), cols, indptr), shape=x.shape)


def sample_counts(state, rng):
    phis, _, theta = state
    return _csr(rng.poisson(theta[0] @ phis[0].T))


def sample_binary(state, rng):
    X = sample_counts(state, rng)
    X.data[:] = 1
    return X


def statistics(state, X):
    """First and second moments of every block, and cross terms with the data."""
    (phi1, phi2), r, (t1, t2) = state
    x = X.toarray()
    length = x.sum(axis=1)
    rate = t1 @ phi1.T
    return np.concatenate([
        phi1[:, 0], (phi1 ** 2).sum(axis=0), phi2[:, 0], (phi2 ** 2).sum(axis=0),
        r, r ** 2, [r[0] * r[1]],
        t1.mean(axis=0), (t1 ** 2).mean(axis=0), t2.mean(axis=0), (t2 ** 2).mean(axis=0),
        [(t1.sum(axis=1) * t2.sum(axis=1)).mean()],
        [(length * t1.sum(axis=1)).mean(), (length * t2.sum(axis=1)).mean(),
         (x * rate).sum() / N_DOCS, length.mean() * r.sum(), (x @ phi1).sum() / N_DOCS],
    ])


NAMES = ([f"phi1[{v},0]" for v in range(V)] + [f"sum phi1[:,{k}]^2" for k in range(3)]
         + [f"phi2[{k},0]" for k in range(3)] + [f"sum phi2[:,{k}]^2" for k in range(2)]
         + ["r0", "r1", "r0^2", "r1^2", "r0 r1"]
         + [f"mean theta1[:,{k}]" for k in range(3)] + [f"mean theta1[:,{k}]^2" for k in range(3)]
         + [f"mean theta2[:,{k}]" for k in range(2)] + [f"mean theta2[:,{k}]^2" for k in range(2)]
         + ["mean |theta1| |theta2|", "mean len |theta1|", "mean len |theta2|",
            "sum x Phi1 theta1 / N", "mean len * sum r", "sum x Phi1 / N"])


def _transition(link):
    p = PRIOR

    def step(state, X, rng):
        phis, r, theta = state
        new_phis, new_r, thetas = gibbs_sweep(
            [X], [theta], phis=phis, r=r, etas=[p["eta"]] * 2, gamma0=p["gamma0"],
            c0=p["c0"], a0=p["a0"], b0=p["b0"], e0=p["e0"], f0=p["f0"], link=link,
            rng=rng, map_chunks=serial_map(rng))
        return new_phis, new_r, thetas[0]
    return step


def _old_order(link):
    """Pre-issue-12 sweep: theta under the old globals, then Phi and r."""
    p = PRIOR

    def step(state, X, rng):
        phis, r, theta = state
        res = _local.upward_downward(X, rng, phis=phis, r=r, a0=p["a0"], b0=p["b0"],
                                     e0=p["e0"], f0=p["f0"], link=link, theta=theta)
        new_phis = [_global.gibbs_phi(res["topic_counts"][l], p["eta"], rng) for l in range(2)]
        new_r = _global.gibbs_r(res["top_tables"], res["q_top"], p["gamma0"], p["c0"], rng)
        return new_phis, new_r, res["theta"]
    return step


DATA = {"poisson": sample_counts, "bernoulli": sample_binary}
N_ITER = 10_000      # about 6 s of one core per test
N_ITER_SLOW = 50_000


def _run(check, kernel, link, n_iter):
    return check(sample_prior, DATA[link], kernel(link), statistics, n_iter=n_iter,
                 rng=np.random.default_rng(0), names=NAMES)


@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_gibbs_sweep_leaves_joint_invariant(link):
    _run(assert_geweke_passes, _transition, link, N_ITER)


@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_old_update_order_is_caught(link):
    _run(assert_geweke_fails, _old_order, link, N_ITER)


@pytest.mark.slow
@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_gibbs_sweep_leaves_joint_invariant_long(link):
    _run(assert_geweke_passes, _transition, link, N_ITER_SLOW)


@pytest.mark.slow
@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_old_update_order_is_caught_long(link):
    # the old order's bias grows the z-scores like sqrt(n_iter): ask for twice
    # the threshold
    res = _run(assert_geweke_fails, _old_order, link, N_ITER_SLOW)
    assert np.max(np.abs(res.z)) > 2 * res.threshold, res.report()

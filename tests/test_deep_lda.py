"""Tests of skdgm.deep_lda: kernels against their twins and exact laws, global
updates against the paper's equations, and the estimator's contract."""

import contextlib
from math import lgamma
from pathlib import Path
import tracemalloc

from numpy.testing import assert_array_equal

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from skdgm import DeepLDA
from skdgm.deep_lda import _global, _local, _local_fast

from _parallel import count_parallel, count_threads  # noqa: F401 - fixtures

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

CHEAP = dict(n_components=(3, 2), n_iter=2, batch_size=50, local_burn_in=2,
             local_samples=2, n_posterior_samples=2, random_state=0)


def _random_csr(n, V, density, seed, high=6):
    rng = np.random.default_rng(seed)
    X = sp.random(n, V, density=density, random_state=seed,
                  data_rvs=lambda k: rng.integers(1, high, k)).tocsr()
    X.data = X.data.astype(np.int64)
    return X


def _int64_csr(X):
    return X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data.astype(np.int64)


def _pgbn_corpus(seed, V=50, K=(5,), n_docs=400, scale=25.0, return_theta=False):
    """Documents from a known PGBN with well separated layer-1 topics.

    Topic k puts most of its mass on its own block of words (so the true topics
    are nearly orthogonal and the recovery test measures the sampler, not the
    luck of an identifiable draw).
    """
    rng = np.random.default_rng(seed)
    conc = np.full((K[0], V), 0.01)
    for k, block in enumerate(np.array_split(np.arange(V), K[0])):
        conc[k, block] = 1.0
    phi = np.array([rng.dirichlet(c) for c in conc]).T
    if len(K) == 1:
        theta = rng.gamma(0.3, scale, size=(n_docs, K[0]))
    else:
        phi2 = rng.dirichlet(np.full(K[0], 0.3), K[1]).T
        theta2 = rng.gamma(0.5, 1.0, size=(n_docs, K[1]))
        theta = rng.gamma(theta2 @ phi2.T, scale)
    X = sp.csr_matrix(rng.poisson(theta @ phi.T))
    return (X, phi, theta) if return_theta else (X, phi)


def _completion_split(X, seed=0):
    """Each document's tokens split 80/20 by binomial thinning (observed, held-out)."""
    rng = np.random.default_rng(seed)
    held = X.copy()
    held.data = rng.binomial(X.data.astype(int), 0.2).astype(float)
    held.eliminate_zeros()
    return (X - held).tocsr(), held.tocsr()


def _perplexity_of(probs, held):
    """Per-held-out-word perplexity of ``held`` under per-document word distributions."""
    held = sp.csr_matrix(held)
    rows = np.repeat(np.arange(held.shape[0]), np.diff(held.indptr))
    return float(np.exp(-(held.data * np.log(probs[rows, held.indices])).sum()
                        / held.data.sum()))


def _unigram_perplexity(Xtrain, held):
    counts = np.asarray(Xtrain.sum(axis=0)).ravel() + 0.5
    return _perplexity_of(np.broadcast_to(counts / counts.sum(), held.shape), held)


def _matched_cosine(learned_rows, true_rows):
    a = learned_rows / np.linalg.norm(learned_rows, axis=1, keepdims=True)
    b = true_rows / np.linalg.norm(true_rows, axis=1, keepdims=True)
    cos = b @ a.T
    i, j = linear_sum_assignment(-cos)
    return cos[i, j]


# ---------------------------------------------------------------- kernels
def test_partition_matches_twin_and_conserves_counts():
    X = _random_csr(40, 30, 0.3, seed=1)
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.ones(30), 7).T.copy()
    theta = rng.gamma(1.0, 1.0, (40, 7))
    theta[3] = 0.0  # a document whose probabilities are all zero: uniform fallback
    ip, ix, cnt = _int64_csr(X)
    outs = []
    for fn in (_local_fast.partition_counts, _local.partition_counts):
        dt = np.zeros((40, 7), np.int64)
        wt = np.zeros((30, 7), np.int64)
        fn(ip, ix, cnt, theta, phi, np.random.default_rng(42), dt, wt)
        outs.append((dt, wt))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    dt, wt = outs[0]
    # the transposed (words by documents) layout conserves the same totals
    Xt = X.T.tocsr()
    wt2, dt2 = np.zeros((30, 7), np.int64), np.zeros((40, 7), np.int64)
    _local_fast.partition_counts(*_int64_csr(Xt), phi, theta, np.random.default_rng(1), wt2, dt2)
    np.testing.assert_array_equal(dt2.sum(1), dt.sum(1))
    np.testing.assert_array_equal(wt2.sum(1), wt.sum(1))
    # every count lands in exactly one topic
    np.testing.assert_array_equal(dt.sum(1), np.asarray(X.sum(1)).ravel())
    np.testing.assert_array_equal(wt.sum(1), np.asarray(X.sum(0)).ravel())


def test_partition_probabilities():
    # One word, count 20000, over 3 topics with probabilities 0.2/0.3/0.5;
    # binomial sd of each share <= sqrt(.25/20000) = 0.0035, test at ~4.5 sd.
    phi = np.array([[0.2, 0.6, 0.5]])
    theta = np.array([[1.0, 0.5, 1.0]])
    dt = np.zeros((1, 3), np.int64)
    _local_fast.partition_counts(np.array([0, 1]), np.array([0]), np.array([20000]),
                                 theta, phi, np.random.default_rng(3), dt,
                                 np.zeros((0, 3), np.int64))
    np.testing.assert_allclose(dt[0] / 20000, [0.2, 0.3, 0.5], atol=0.016)


def test_partition_bisect_equals_walk():
    # An entry of n tokens bisects its running sum; n duplicate entries of one
    # token each walk it. They consume the same uniforms, so must agree exactly,
    # including over zero weights (flat running sums) and K not a multiple of 4.
    K = 37
    rng = np.random.default_rng(6)
    phi = rng.dirichlet(np.full(K, 0.3), 5)
    phi[:, ::5] = 0.0
    theta = rng.gamma(0.5, 1.0, (1, K))
    counts = np.array([1, 2, 7, 500, 3], np.int64)
    for c, n in enumerate(counts):
        ip = np.array([0, 1])
        one = (np.zeros((1, K), np.int64), np.zeros((5, K), np.int64))
        many = (np.zeros((1, K), np.int64), np.zeros((5, K), np.int64))
        _local_fast.partition_counts(ip, np.array([c]), np.array([n]), theta, phi,
                                     np.random.default_rng(c), *one)
        _local_fast.partition_counts(np.array([0, n]), np.full(n, c), np.ones(n, np.int64),
                                     theta, phi, np.random.default_rng(c), *many)
        np.testing.assert_array_equal(one[0], many[0])
        np.testing.assert_array_equal(one[1], many[1])
        assert np.all(one[0][0, ::5] == 0)


def test_partition_dense_matches_csr_and_twin():
    rng = np.random.default_rng(8)
    counts = rng.integers(0, 4, size=(30, 11)).astype(np.int64)
    counts[rng.random(counts.shape) < 0.5] = 0
    theta = rng.gamma(1.0, 1.0, (30, 6))
    phi = rng.dirichlet(np.ones(11), 6).T.copy()
    ip, ix, cnt = _int64_csr(sp.csr_matrix(counts))
    outs = []
    for fn, args in ((_local_fast.partition_dense, (counts,)),
                     (_local.partition_dense, (counts,)),
                     (_local_fast.partition_counts, (ip, ix, cnt))):
        a, w = np.zeros((30, 6), np.int64), np.zeros((11, 6), np.int64)
        fn(*args, theta, phi, np.random.default_rng(4), a, w)
        outs.append((a, w))
    for a, w in outs[1:]:
        np.testing.assert_array_equal(a, outs[0][0])
        np.testing.assert_array_equal(w, outs[0][1])
    np.testing.assert_array_equal(outs[0][0].sum(1), counts.sum(1))


def test_gamma_theta_matches_twin_and_law():
    rng = np.random.default_rng(10)
    shape = np.ascontiguousarray(rng.gamma(0.3, 1.0, (4000, 5)))
    shape[0, 0] = 0.0  # Gam(0) = 0: floored
    counts = rng.integers(0, 3, size=(4000, 5)).astype(np.int64)
    rate = rng.gamma(2.0, 1.0, 4000) + 0.5
    a = _local_fast.gamma_theta(shape, counts, rate, np.random.default_rng(3), 1e-300)
    b = _local.gamma_theta(shape, counts, rate, np.random.default_rng(3), 1e-300)
    np.testing.assert_array_equal(a, b)
    assert a[0, 0] == 1e-300 or counts[0, 0] > 0
    # a * rate / (shape + counts) has mean 1 and variance mean(1 / (shape + counts))
    # over the entries; 5 standard errors
    k = (shape + counts).ravel()
    ok = k > 0
    z = (a * rate[:, None]).ravel()[ok] / k[ok]
    assert abs(z.mean() - 1.0) < 5 * np.sqrt(np.mean(1.0 / k[ok]) / ok.sum())


def _crt_pmf(n, s):
    # P(m) = |S(n, m)| s^m Gamma(s) / Gamma(n + s), unsigned Stirling numbers of the first kind
    S = np.zeros((n + 1, n + 1))
    S[0, 0] = 1
    for i in range(1, n + 1):
        for m in range(1, i + 1):
            S[i, m] = S[i - 1, m - 1] + (i - 1) * S[i - 1, m]
    m = np.arange(n + 1)
    return S[n] * np.exp(m * np.log(s) + lgamma(s) - lgamma(n + s))


@pytest.mark.parametrize("n, s", [(1, 0.4), (5, 0.7), (8, 3.0)])
def test_crt_exact_pmf(n, s):
    draws = 40000
    counts = np.full((draws, 1), n, np.int64)
    shape = np.full((draws, 1), s)
    m = _local_fast.crt(counts, shape, np.random.default_rng(11)).ravel()
    freq = np.bincount(m, minlength=n + 1) / draws
    p = _crt_pmf(n, s)
    assert p.sum() == pytest.approx(1.0)
    # per-cell binomial sd sqrt(p(1-p)/draws); 5 sd plus a floor for p ~ 0
    tol = 5 * np.sqrt(p * (1 - p) / draws) + 1e-4
    assert np.all(np.abs(freq - p) <= tol), (freq, p)


def test_crt_matches_twin():
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 30, size=(20, 9)).astype(np.int64)
    shape = rng.gamma(0.5, 2.0, size=(20, 9))
    shape[0, 0] = 0.0
    a = _local_fast.crt(counts, shape, np.random.default_rng(1))
    b = _local.crt(counts, shape, np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    assert np.all(a <= counts) and np.all((a >= 1) == ((counts >= 1) & (shape > 0)))


def test_zero_truncated_poisson():
    lam = np.concatenate([np.full(20000, 0.3), np.full(20000, 4.0)])
    a = _local_fast.zero_truncated_poisson(lam, np.random.default_rng(2))
    sub = np.ascontiguousarray(lam[::97])
    b = _local.zero_truncated_poisson(sub, np.random.default_rng(2))
    np.testing.assert_array_equal(_local_fast.zero_truncated_poisson(
        sub, np.random.default_rng(2)), b)
    assert a.min() >= 1
    for part, lm in ((a[:20000], 0.3), (a[20000:], 4.0)):
        mean = lm / (1 - np.exp(-lm))
        var = (lm + lm ** 2) / (1 - np.exp(-lm)) - mean ** 2
        # 5 standard errors of the mean of 20000 draws
        assert abs(part.mean() - mean) < 5 * np.sqrt(var / 20000)


@pytest.mark.parametrize("Ks, link", [((6,), "poisson"), ((6, 3), "poisson"),
                                      ((5, 3, 2), "bernoulli")])
def test_sampler_cython_equals_numpy(Ks, link):
    X = _random_csr(25, 40, 0.2, seed=4)
    if link == "bernoulli":
        X.data[:] = 1
    rng = np.random.default_rng(0)
    dims = (40,) + Ks
    phis = [rng.dirichlet(np.ones(dims[l]), dims[l + 1]).T.copy() for l in range(len(Ks))]
    r = np.full(Ks[-1], 1.0 / Ks[-1])
    kw = dict(phis=phis, r=r, n_burn=3, n_collect=2, link=link)
    a = _local.upward_downward(X, np.random.default_rng(9), kernels="cython", **kw)
    b = _local.upward_downward(X, np.random.default_rng(9), kernels="numpy", **kw)
    for l in range(len(Ks)):
        np.testing.assert_array_equal(a["topic_counts"][l], b["topic_counts"][l])
        np.testing.assert_array_equal(a["theta"][l], b["theta"][l])
    np.testing.assert_array_equal(a["top_tables"], b["top_tables"])
    assert a["q_top"] == b["q_top"]
    if link == "poisson":
        # layer-1 counts conserve the corpus; each layer's counts go up by CRT (<=)
        assert a["topic_counts"][0].sum() == X.sum()
        np.testing.assert_allclose(a["topic_counts"][0].sum(1), np.asarray(X.sum(0)).ravel())
    for l in range(1, len(Ks)):
        assert a["topic_counts"][l].sum() <= a["topic_counts"][l - 1].sum()


# ---------------------------------------------------------- global updates
def test_simplex_step_is_eq15():
    rng = np.random.default_rng(0)
    V, K, rho, eta, eps = 30, 4, 50.0, 0.1, 0.01
    phi = rng.dirichlet(np.full(V, 5.0), K).T
    xbar = rng.poisson(3.0, (V, K)).astype(float)
    M = rho * xbar.sum(0) * 1.3  # cap 1/(rho x + eta V) inactive: eps/M < it
    noise = rng.standard_normal((V, K)) * 0.1
    new, rate = _global.simplex_step(phi, eps / M, xbar, rho, eta, noise)
    np.testing.assert_allclose(rate, eps / M)
    # Eq. 15 written out, then the hyperplane conditioning y - phi (1'y - 1)
    y = (phi + (eps / M) * ((rho * xbar + eta) - (rho * xbar.sum(0) + eta * V) * phi)
         + np.sqrt(2 * eps / M * phi) * noise)
    expected = y - phi * (y.sum(0) - 1)
    assert np.all(expected > 0)  # no reflection in this regime
    np.testing.assert_allclose(new, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(new.sum(0), 1.0, rtol=1e-12)


def test_simplex_step_stays_on_simplex_and_caps():
    rng = np.random.default_rng(1)
    V, K = 20, 5
    phi = rng.dirichlet(np.full(V, 0.1), K).T
    xbar = rng.poisson(0.5, (V, K)).astype(float)
    xbar[:, 0] = 0  # an unused topic: tiny M, huge uncapped rate
    for _ in range(50):
        phi, rate = _global.simplex_step(phi, np.full(K, 1e6), xbar, 10.0, 0.05,
                                         rng.standard_normal((V, K)))
        assert np.all(phi > 0)
        np.testing.assert_allclose(phi.sum(0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(rate, 1 / (10.0 * xbar.sum(0) + 0.05 * V))
    # without noise the capped step lands on the conditional posterior mean
    new, _ = _global.simplex_step(phi, np.full(K, 1e6), xbar, 10.0, 0.05, np.zeros((V, K)))
    target = (10.0 * xbar + 0.05) / (10.0 * xbar.sum(0) + 0.05 * V)
    np.testing.assert_allclose(new, target, rtol=1e-10)


def test_sgrld_step_is_eq5():
    rng = np.random.default_rng(2)
    V, K, rho, eta, eps = 15, 3, 8.0, 0.2, 0.05
    phihat = rng.gamma(2.0, 3.0, (V, K))
    xbar = rng.poisson(2.0, (V, K)).astype(float)
    noise = rng.standard_normal((V, K))
    new, phi_new = _global.sgrld_step(phihat, eps, xbar, rho, eta, noise)
    phi = phihat / phihat.sum(0)
    expected = np.abs(phihat + eps * ((rho * xbar + eta) - (rho * xbar.sum(0) + phihat.sum(0)) * phi)
                      + np.sqrt(2 * eps * phihat) * noise)
    np.testing.assert_allclose(new, expected, rtol=1e-13)
    np.testing.assert_allclose(phi_new.sum(0), 1.0)


def test_r_step_is_eq17():
    rng = np.random.default_rng(3)
    K, rho, g0, c0 = 6, 20.0, 1.0, 1.0
    r = rng.gamma(1.0, 1.0, K)
    x_top, q_top = rng.poisson(5.0, K).astype(float), 3.0
    M = rho * q_top * 2
    noise = rng.standard_normal(K) * 0.1
    new, rate = _global.r_step(r, 0.5 / M, x_top, q_top, rho, g0, c0, noise)
    expected = np.abs(r + 0.5 / M * ((rho * x_top + g0 / K) - r * (c0 + rho * q_top))
                      + np.sqrt(2 * 0.5 / M * r) * noise)
    np.testing.assert_allclose(new, expected, rtol=1e-13)
    assert rate == 0.5 / M


def test_metric_eq18():
    M = np.array([1.0, 2.0])
    np.testing.assert_allclose(_global.update_metric(M, [3.0, 4.0], 10.0, 0.25),
                               0.75 * M + 0.25 * 10 * np.array([3.0, 4.0]))


def test_gibbs_conditionals_means():
    rng = np.random.default_rng(4)
    xbar = np.array([[100.0, 0.0], [300.0, 10.0]])
    draws = np.mean([_global.gibbs_phi(xbar, 1.0, rng) for _ in range(2000)], axis=0)
    np.testing.assert_allclose(draws, (xbar + 1) / (xbar + 1).sum(0), atol=0.02)
    rs = np.mean([_global.gibbs_r(np.array([10.0, 40.0]), 4.0, 1.0, 1.0, rng)
                  for _ in range(4000)], axis=0)
    np.testing.assert_allclose(rs, (np.array([10.0, 40.0]) + 0.5) / 5.0, rtol=0.03)


# --------------------------------------------------------------- estimator
# The learned model is over-complete (8 topics for 5 true ones), as the PGBN is used
# in practice: its gamma-process prior on r shrinks the spare topics, while with
# exactly K topics short runs often end in a mode where two true topics share one
# learned topic. Every configuration must recover the true topics on each of three
# corpora, each fitted with its own seed (not one hand-picked seed). Measured
# minimum cosines over seeds 0-5 (corpus seed = model seed) with the collapsed
# local sampler: tlasgr (5,) 0.99-0.995, (5, 3) 0.89-0.99; tlfsgr 0.99-0.995;
# sgrld 0.94-0.97; batch Gibbs (80 sweeps) 0.94-0.99 except seed 5, a
# merged-topic mode (0.83). A two-layer run that recovers every topic but one
# partly (0.89, seed 0) is held to 0.85; a merged mode scores below 0.7 (the
# explicit local sampler's seed 5 of (5, 3): 0.13).
_RECOVERY = [((5,), (8,), "tlasgr"), ((5, 3), (8, 4), "tlasgr"), ((5,), (8,), "tlfsgr"),
             ((5,), (8,), "sgrld"), ((5, 3), (8, 4), "gibbs")]


@pytest.mark.parametrize("Ks, learned, sampler, seed", [
    pytest.param(*p, seed, marks=pytest.mark.slow) if p[2] == "gibbs" and seed else (*p, seed)
    for p in _RECOVERY for seed in (0, 1, 2)])
def test_topic_recovery(Ks, learned, sampler, seed):
    X, phi = _pgbn_corpus(seed, K=Ks, n_docs=400)
    n_iter = 80 if sampler == "gibbs" else 6
    batch = {} if sampler == "gibbs" else {"batch_size": 100}   # Gibbs reads none
    model = DeepLDA(learned, sampler=sampler, n_iter=n_iter, local_burn_in=10,
                    local_samples=10, random_state=seed, **batch).fit(X)
    cos = _matched_cosine(model.components_, phi.T)
    assert cos.min() >= (0.85 if len(Ks) > 1 else 0.9), cos
    for l in range(1, len(Ks) + 1):
        np.testing.assert_allclose(model.projected_topics(l).sum(0), 1.0)


def test_fitted_attributes_and_sample():
    X, _ = _pgbn_corpus(1, K=(4,), n_docs=120)
    m = DeepLDA((4, 3, 2), n_iter=2, batch_size=60, local_burn_in=3, local_samples=2,
                random_state=0).fit(X)
    assert m.components_.shape == (4, X.shape[1])
    np.testing.assert_allclose(m.components_.sum(1), 1.0)
    assert [t.shape for t in m.topics_] == [(X.shape[1], 4), (4, 3), (3, 2)]
    assert [lr.shape for lr in m.learning_rates_] == [(4,), (3,), (2,), (1,)]
    # n_iter_ counts passes, n_updates_ global updates (2 minibatches per pass);
    # history_ has one entry per pass with a finite training perplexity
    assert m.n_iter_ == 2 and m.n_updates_ == 4 and len(m.history_["rate_layer3"]) == 2
    assert m.history_["n_updates"] == [2, 4]
    assert np.all(np.isfinite(m.history_["train_perplexity"]))
    assert 1 < m.history_["train_perplexity"][-1] < X.shape[1]
    S = m.sample(7, random_state=0)
    assert sp.issparse(S) and S.shape == (7, X.shape[1]) and S.dtype == np.int64
    assert (m.sample(7, random_state=0) != S).nnz == 0
    T = m.transform(X[:5], all_layers=True)
    assert [t.shape for t in T] == [(5, 4), (5, 3), (5, 2)]
    for t in T:
        np.testing.assert_allclose(t.sum(1), 1.0)


def test_perplexity_protocol():
    """The Sec. 5 estimator against references on the same split: it must land between
    the true model's perplexity and the unigram's, near sklearn's LDA of the same K."""
    from sklearn.decomposition import LatentDirichletAllocation

    X, phi, theta = _pgbn_corpus(2, K=(5,), n_docs=300, return_theta=True)
    m = DeepLDA(5, n_iter=5, batch_size=100, local_burn_in=10, local_samples=10,
                n_posterior_samples=3, random_state=0).fit(X[:200])
    Xt = X[200:]
    obs, held = _completion_split(Xt)
    keep = np.asarray(held.sum(axis=1)).ravel() > 0
    obs, held, theta_t = obs[keep], held[keep], theta[200:][keep]
    ppl = m.perplexity(obs, held)
    pt = m.perplexity(obs, held, point=True)
    # the true topics and each document's true proportions (an oracle no
    # estimator reaches from 80 % of the words), and the word frequencies
    truth = _perplexity_of(theta_t @ phi.T / theta_t.sum(axis=1, keepdims=True), held)
    unigram = _unigram_perplexity(X[:200], held)
    lda = LatentDirichletAllocation(5, learning_method="batch", max_iter=50,
                                    random_state=0).fit(X[:200])
    topics = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    sk = _perplexity_of(lda.transform(obs) @ topics, held)
    # Over random_state 0-7 of this fit, ppl / unigram spans 0.58-0.65 (the point
    # estimate 0.59-0.65; the true model 0.54; `pytest -m slow -s -k over_seeds`
    # prints them): a bound of 0.6 held at half of the seeds, so any change of
    # random stream could break it (issue 15). A model that learns nothing sits
    # near 1; 0.7 separates the two with room.
    assert truth < ppl < 0.7 * unigram, (truth, ppl, unigram)
    assert truth < pt < 0.7 * unigram, (truth, pt, unigram)
    assert ppl <= 1.05 * sk, (ppl, sk)
    assert ppl == m.perplexity(obs, held)  # re-seeded from random_state
    s = m.score_samples(Xt)
    assert s.shape == (100,) and np.all(s <= 0)
    assert m.score(Xt) == pytest.approx(m.score(Xt))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_perplexity_protocol_bound_holds_over_seeds(seed):
    """The bound of :func:`test_perplexity_protocol` at every random_state 0-7, not
    only at the seed that test uses."""
    X, phi, theta = _pgbn_corpus(2, K=(5,), n_docs=300, return_theta=True)
    m = DeepLDA(5, n_iter=5, batch_size=100, local_burn_in=10, local_samples=10,
                n_posterior_samples=3, random_state=seed).fit(X[:200])
    obs, held = _completion_split(X[200:])
    keep = np.asarray(held.sum(axis=1)).ravel() > 0
    obs, held, theta_t = obs[keep], held[keep], theta[200:][keep]
    unigram = _unigram_perplexity(X[:200], held)
    truth = _perplexity_of(theta_t @ phi.T / theta_t.sum(axis=1, keepdims=True), held)
    ppl, pt = m.perplexity(obs, held), m.perplexity(obs, held, point=True)
    print(f"seed {seed}: perplexity / unigram {ppl / unigram:.3f}, point {pt / unigram:.3f}, "
          f"true model {truth / unigram:.3f}")
    assert truth < ppl < 0.7 * unigram, (truth, ppl, unigram)
    assert truth < pt < 0.7 * unigram, (truth, pt, unigram)


def test_defaults_learn_on_a_small_corpus():
    """``DeepLDA(random_state=0)`` as a new user runs it: its held-out perplexity
    must beat the unigram model's by a wide margin (a default that learns nothing
    scores like the unigram) and approach the true model's."""
    X, phi, theta = _pgbn_corpus(3, V=120, K=(8,), n_docs=400, return_theta=True)
    m = DeepLDA(random_state=0).fit(X[:300])
    obs, held = _completion_split(X[300:])
    keep = np.asarray(held.sum(axis=1)).ravel() > 0
    obs, held, theta_t = obs[keep], held[keep], theta[300:][keep]
    ppl = m.perplexity(obs, held)
    unigram = _unigram_perplexity(X[:300], held)
    truth = _perplexity_of(theta_t @ phi.T / theta_t.sum(axis=1, keepdims=True), held)
    assert m.n_iter_ >= 2 and np.all(np.isfinite(m.history_["train_perplexity"]))
    # the training-perplexity figure falls over the passes
    assert m.history_["train_perplexity"][-1] < m.history_["train_perplexity"][0]
    # measured: 45.1 against unigram 88.9 and truth 37.8; topics that never
    # move from their start scored 92 on the corpus of this test at 500 documents
    assert ppl < 0.6 * unigram, (ppl, unigram, truth)
    assert ppl < truth + 0.25 * (unigram - truth), (ppl, unigram, truth)


def test_empty_documents_get_the_prior():
    X, _ = _pgbn_corpus(3, K=(3,), n_docs=60)
    X = sp.vstack([X, sp.csr_matrix((2, X.shape[1]))]).tocsr()
    m = DeepLDA(3, **{k: v for k, v in CHEAP.items() if k != "n_components"}).fit(X)
    T = m.transform(X)
    assert np.all(np.isfinite(T)) and np.allclose(T.sum(1), 1.0)


def test_partial_fit_equals_fit_on_one_batch():
    X, _ = _pgbn_corpus(4, K=(3,), n_docs=80)
    params = dict(n_components=(3, 2), n_iter=1, batch_size=80, local_burn_in=2,
                  local_samples=2, random_state=7)
    a = DeepLDA(**params).fit(X)
    b = DeepLDA(**params).partial_fit(X)
    for ta, tb in zip(a.topics_, b.topics_):
        np.testing.assert_array_equal(ta, tb)
    np.testing.assert_array_equal(a.r_, b.r_)
    # and fit leaves what partial_fit needs
    a.partial_fit(X[:10])
    assert a.n_iter_ == 2


def test_partial_fit_stream_with_total_samples():
    X, phi = _pgbn_corpus(5, K=(4,), n_docs=400)
    m = DeepLDA(6, total_samples=400, local_burn_in=10, local_samples=10, random_state=0)
    for _ in range(4):
        for start in range(0, 400, 100):
            m.partial_fit(X[start:start + 100])
    assert _matched_cosine(m.components_, phi.T).min() >= 0.9


def test_posterior_thinning_keeps_every_kth_sample():
    X = _random_csr(5, 60, 0.2, seed=2)
    m = DeepLDA((4, 2), local_burn_in=1, local_samples=1, n_posterior_samples=2,
                posterior_thin=3, random_state=0)
    seen = []
    for _ in range(10):
        m.partial_fit(X)
        seen.append([t.copy() for t in m.topics_])
    kept = [phis for phis, _ in m._posterior]
    assert len(kept) == 2
    # updates 0, 3, 6, 9 are kept; the deque holds the latest two
    for got, want in zip(kept, [seen[6], seen[9]]):
        for a, b in zip(got, want):
            assert_array_equal(a, b)
    # the point perplexity uses the latest sample even when it is not kept
    m.partial_fit(X)
    assert not np.array_equal(m._posterior[-1][0][0], m.topics_[0])
    obs, held = X, X
    p1 = m.perplexity(obs, held, point=True)
    m._posterior.append(([t.copy() for t in m.topics_], m.r_.copy()))
    assert m.perplexity(obs, held, point=True) == p1
    # n_posterior_samples changed after fit takes effect on the next update
    m.set_params(n_posterior_samples=4, posterior_thin=1)
    for _ in range(5):
        m.partial_fit(X)
    assert len(m._posterior) == 4


def test_posterior_thin_pass_keeps_each_pass_last_sample():
    # 30 documents in minibatches of 10: 3 updates a pass; "pass" keeps the sample
    # that ends each pass (issue 25: samples one pass apart, not 5 adjacent updates)
    X = _random_csr(30, 40, 0.2, seed=3)
    kw = dict(n_components=(4, 2), batch_size=10, local_burn_in=1, local_samples=1,
              n_posterior_samples=2, posterior_thin="pass", random_state=0)
    m = DeepLDA(n_iter=4, **kw).fit(X)
    assert m.n_updates_ == 12 and len(m.posterior_samples_) == 2
    # the same seed stopped after 3 (4) passes ends where the kept samples were taken
    for kept, passes in zip(m.posterior_samples_, (3, 4)):
        ref = DeepLDA(n_iter=passes, **kw).fit(X)
        for a, b in zip(kept[0], ref.topics_):
            assert_array_equal(a, b)
        assert_array_equal(kept[1], ref.r_)
    # the training path itself is unchanged: only which samples are kept differs
    other = DeepLDA(n_iter=4, **{**kw, "posterior_thin": 1}).fit(X)
    for a, b in zip(other.topics_, m.topics_):
        assert_array_equal(a, b)
    assert not np.array_equal(other.posterior_samples_[0][0][0], m.posterior_samples_[0][0][0])
    # each partial_fit call is a pass: one kept sample per call, its last update
    s = DeepLDA(**kw)
    for docs in (X[:15], X[15:]):
        s.partial_fit(docs)
        assert_array_equal(s.posterior_samples_[-1][0][0], s.topics_[0])
    assert s.n_updates_ == 4 and len(s.posterior_samples_) == 2
    # "auto" collection: one pass per kept sample
    from skdgm.deep_lda._defaults import collection_passes
    assert collection_passes(10, "pass", "tlasgr", 10_719, 200) == 10
    assert collection_passes(5, 10, "tlasgr", 10_719, 200) == 1
    with pytest.raises(ValueError, match="posterior_thin"):
        DeepLDA(posterior_thin="passes").fit(X)


def test_perplexity_chains_carry_over_kept_samples(monkeypatch):
    """Burn-in once, then each kept global sample continues the same chains."""
    X = _random_csr(8, 40, 0.3, seed=4)
    m = DeepLDA((4, 2), local_burn_in=1, local_samples=1, n_posterior_samples=3,
                random_state=0)
    for _ in range(4):
        m.partial_fit(X)
    calls = []
    from skdgm.deep_lda import _train
    over = _train.run_over_samples

    def spy(Xo, seed, samples, **kw):
        calls.append((len(samples), kw["n_burn"], kw["n_collect"], kw["what"]))
        return over(Xo, seed, samples, **kw)

    monkeypatch.setattr(_train, "run_over_samples", spy)
    ppl = m.perplexity(X, X, n_burn=7, n_samples=3)
    assert np.isfinite(ppl) and ppl > 1
    assert calls == [(3, 7, 3, "heldout")]


def _layer_topics(rng, V, layers):
    """Random topics of every layer (columns on the simplex), ``V`` words at the bottom."""
    phis, rows = [], V
    for K in layers:
        p = rng.gamma(1.0, 1.0, (rows, K))
        phis.append(p / p.sum(axis=0))
        rows = K
    return phis


@pytest.mark.parametrize("layers", [(5,), (5, 3)])
@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_samples_task_continues_one_chain(layers, link):
    """Under the same global sample twice, the carried chain is one chain of twice
    the collected sweeps: no restart, no second burn-in, the same stream."""
    X = _random_csr(9, 30, 0.3, seed=2)
    if link == "bernoulli":
        X.data[:] = 1.0
    rng = np.random.default_rng(8)
    phis = _layer_topics(rng, 30, layers)
    r = rng.gamma(1.0, 1.0, layers[-1])
    kw = dict(link=link, compact_words=True, em_steps=3)
    sums = _local.samples_task(X, np.random.default_rng(1), samples=[(phis, r)] * 2,
                               n_burn=2, n_collect=3, what="theta_sums", **kw)
    one = _local.upward_downward(X, np.random.default_rng(1), phis=phis, r=r, n_burn=2,
                                 n_collect=6, collect_topics=False, **kw)
    np.testing.assert_allclose(sums[0] + sums[1], one["theta_sum"][0], rtol=1e-12)
    mom = _local.samples_task(X, np.random.default_rng(1), samples=[(phis, r)] * 2,
                              n_burn=2, n_collect=3, what="moments", **kw)
    for l in range(len(layers)):
        np.testing.assert_allclose(mom["mean"][l], one["theta_norm_sum"][l] / 6, rtol=1e-12)
        assert np.all(mom["var"][l] >= 0)


@pytest.mark.parametrize("layers", [(5,), (5, 3)])
def test_heldout_rates_formed_in_the_task_equal_those_from_theta_sums(layers):
    """``samples_task(what="heldout")`` gives, bit for bit, the rates and totals the
    calling process used to form from the returned ``theta^(1)`` sums."""
    from skdgm.deep_lda import _local_fast
    X = _random_csr(9, 30, 0.3, seed=2)
    held = _random_csr(9, 30, 0.2, seed=5)
    rng = np.random.default_rng(8)
    phis = _layer_topics(rng, 30, layers)
    samples = [(phis, rng.gamma(1.0, 1.0, layers[-1])), (phis, rng.gamma(1.0, 1.0, layers[-1]))]
    kw = dict(link="poisson", compact_words=True, em_steps=3, n_burn=2, n_collect=3)
    sums = _local.samples_task(X, np.random.default_rng(1), samples=samples,
                               what="theta_sums", **kw)
    got = _local.samples_task((X, held), np.random.default_rng(1), samples=samples,
                              what="heldout", **kw)
    ptr, loc = held.indptr.astype(np.int64), held.indices.astype(np.int64)
    assert len(got) == len(samples)
    for (phis_s, _), th, (num, den) in zip(samples, sums, got):
        assert num.shape == (held.nnz,) and np.all(num > 0)
        np.testing.assert_array_equal(num, _local_fast.entry_dots(ptr, loc, phis_s[0], th))
        np.testing.assert_array_equal(den, th.sum(axis=1))


def test_memory_flat_over_many_partial_fit_calls():
    X = _random_csr(5, 200, 0.1, seed=6)
    m = DeepLDA((4,), local_burn_in=1, local_samples=1, n_posterior_samples=2, random_state=0)
    for _ in range(100):
        m.partial_fit(X)
    tracemalloc.start()
    start = tracemalloc.take_snapshot()
    for _ in range(900):
        m.partial_fit(X)
    growth = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(start, "filename"))
    tracemalloc.stop()
    # One leaked copy of Phi per call would be 900 * 200 * 4 * 8 B = 5.8 MB; history_
    # (bounded at 10,000 entries per key) accounts for ~0.2 MB over these calls.
    assert growth < 1_000_000, growth
    assert m.n_iter_ == 1000


@pytest.fixture
def fan_out(monkeypatch):
    """Small chunks, and no in-process shortcut for cheap calls: tiny data fans out."""
    from skdgm._core import chains
    from skdgm.deep_lda import _runs
    monkeypatch.setattr(_runs, "CHUNK_DOCS", 50)
    monkeypatch.setattr(chains, "MIN_PARALLEL_COST", 0.0)
    monkeypatch.setattr(chains, "MIN_THREAD_COST", 0.0)
    monkeypatch.setattr(chains, "SHARE_MIN_BYTES", 1)    # tiny kept samples go as files


def _shared_files():
    from skdgm._core import chains
    return {view.filename for _, view in list(chains._FILES.views.values())}


@pytest.fixture
def loky():
    """Process workers (DeepLDA prefers threads unless a backend is configured)."""
    from joblib import parallel_config
    with parallel_config(backend="loky"):
        yield


def test_kept_samples_are_shared_once_per_model(fan_out, loky):
    # Process workers read the kept samples from one file per array, written on the
    # first call that fans out, reused by every later call, never touched by
    # pickling, and deleted with the samples (refit, or the estimator dropped).
    import gc
    import os
    import pickle

    X = np.random.default_rng(3).poisson(1.0, size=(120, 15))
    params = dict(n_components=(4, 2), n_iter=3, batch_size=60, local_burn_in=3,
                  local_samples=3, random_state=0)
    ref = DeepLDA(**params, n_jobs=1).fit(X)
    expected = ref.transform(X), ref.score_samples(X)
    model = DeepLDA(**params, n_jobs=2).fit(X)
    n_arrays = sum(len(phis) + 1 for phis, _ in model.posterior_samples_)
    before = _shared_files()
    got = model.transform(X), model.score_samples(X)
    files = _shared_files() - before
    assert len(files) == n_arrays
    model.transform(X)
    assert _shared_files() - before == files           # no file per call
    stamps = {f: os.stat(f).st_mtime_ns for f in files}
    copy = pickle.loads(pickle.dumps(model))
    assert {f: os.stat(f).st_mtime_ns for f in files} == stamps
    got_copy = copy.transform(X), copy.score_samples(X)
    copy_files = _shared_files() - before - files
    assert len(copy_files) == n_arrays                 # a second estimator: its own files
    for a, b, c in zip(expected, got, got_copy):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
    del copy
    gc.collect()
    assert not any(map(os.path.exists, copy_files))
    assert all(map(os.path.exists, files))
    model.fit(X[::-1])                                 # refit: new samples, old files gone
    gc.collect()
    assert not any(map(os.path.exists, files))
    np.testing.assert_array_equal(model.transform(X),
                                  ref.fit(X[::-1]).transform(X))
    refit_files = _shared_files() - before
    assert len(refit_files) == n_arrays
    del model
    gc.collect()
    assert not any(map(os.path.exists, refit_files))


@pytest.fixture
def joblib_threads(monkeypatch):
    """``configured("joblib threads")``: thread workers through joblib's threading
    backend (the route before ``_run_threads``) rather than ``run_chains``' own."""
    from joblib import parallel_config

    from skdgm._core import chains

    @contextlib.contextmanager
    def configured(backend):
        if backend is None:
            yield
            return
        with contextlib.ExitStack() as stack:
            if backend == "joblib threads":
                stack.enter_context(monkeypatch.context()).setattr(
                    chains, "_JOBLIB_THREADS", True)
                backend = "threading"
            stack.enter_context(parallel_config(backend=backend))
            yield

    return configured


def test_n_jobs_and_backends_give_identical_results(fan_out, joblib_threads):
    X, _ = _pgbn_corpus(6, K=(3,), n_docs=250)
    params = dict(n_components=(3, 2), n_iter=1, batch_size=250, local_burn_in=2,
                  local_samples=2, random_state=3)
    ref = DeepLDA(**params, n_jobs=1).fit(X)
    # None: no backend configured, DeepLDA's hints decide (threads for training)
    models = {b: DeepLDA(**params, n_jobs=2)
              for b in (None, "threading", "joblib threads", "loky")}
    configured = joblib_threads

    for b, m in models.items():
        with configured(b):
            m.fit(X)
        for a, c in zip(ref.topics_, m.topics_):
            np.testing.assert_array_equal(a, c)
    Xm = X[:60].toarray().astype(float)
    Xm[::7, 3] = np.nan

    def public(m):
        mean, std = m.transform(X, return_std=True, all_layers=True)
        return mean + std + [m.score_samples(X), m.perplexity(X, X), m.impute(Xm, n_sweeps=4),
                             m.score_samples(X, return_std=True)[1]]

    want = public(ref)
    for b, m in models.items():
        with configured(b):
            got = public(m)
        for a, c in zip(want, got):
            np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize("sampler", ["tlasgr", "sgrld"])
def test_training_over_several_updates_is_identical_for_every_backend(fan_out,
                                                                       joblib_threads,
                                                                       sampler):
    """Four updates a pass, two passes and a partial_fit: the global step's normals,
    drawn by a worker beside the chunks (StandardNormals), are those of n_jobs=1, and
    the global generator continues from the same state on every backend (process
    workers draw from a copy of it)."""
    X, _ = _pgbn_corpus(6, K=(3,), n_docs=240)
    params = dict(n_components=(3, 2), n_iter=2, batch_size=60, local_burn_in=2,
                  local_samples=2, random_state=5, sampler=sampler)
    ref = DeepLDA(**params, n_jobs=1).fit(X).partial_fit(X[:60])
    for b in (None, "threading", "joblib threads", "loky"):
        with joblib_threads(b):
            m = DeepLDA(**params, n_jobs=2).fit(X).partial_fit(X[:60])
        for a, c in zip(ref.topics_ + [ref.r_], m.topics_ + [m.r_]):
            np.testing.assert_array_equal(a, c)
        assert m._rng.bit_generator.state == ref._rng.bit_generator.state
        assert m.n_updates_ == ref.n_updates_ == 9


def test_minibatch_pipeline_lays_out_the_next_minibatch_in_pass_order():
    """The pipeline gives the rows ``minibatches`` gives, in order, and reads the
    order stream as it does; each minibatch after the first whose update signalled
    (``after_local``) comes laid out: the layouts and costs the chunks' tasks would
    build from those rows. A minibatch whose update never signalled comes plain."""
    from functools import partial

    from skdgm.deep_lda import _local, _train
    X, _ = _pgbn_corpus(3, K=(3,), n_docs=130)
    want = list(_train.minibatches(X, 30, np.random.default_rng(4)))
    rng = np.random.default_rng(4)
    lay_out = partial(_train.lay_out_chunks, chunk_docs=10, link="poisson", Ks=[3],
                      n_sweeps=4)
    got = []
    for i, batch in enumerate(_train.MinibatchPipeline(X, 30, rng, lay_out)):
        got.append(batch)
        if i == 4:                  # the last: nothing left to lay out
            assert batch.after_local is None
        elif i != 2:                # the third update "never signals"
            batch.after_local()
    order = np.random.default_rng(4)
    order.permutation(130)                  # the pass's one draw
    assert rng.bit_generator.state == order.bit_generator.state
    assert len(got) == len(want) == 5
    phis, r = [np.full((X.shape[1], 3), 1.0 / X.shape[1])], np.ones(3)
    for i, (batch, rows) in enumerate(zip(got, want)):
        assert (batch.X != rows).nnz == 0 and batch.shape == rows.shape
        if i in (0, 3):
            assert batch.parts is None
            continue
        chunks = _train.chunk_layout(rows.shape[0], 10)
        assert len(batch.parts) == len(chunks) == 3
        assert batch.cost == _train.chunk_costs(rows, chunks, [3], 4)
        for part, sl in zip(batch.parts, chunks):
            ref = _local._Layout(rows[sl], phis, r, "poisson")
            part.bind(phis)
            for key in ("indptr", "indices", "data", "rows", "perm", "wdocs", "words",
                        "wptr", "data_t", "loc", "phi_words"):
                np.testing.assert_array_equal(getattr(part, key), getattr(ref, key))
            assert (part.n, part.V, part.Ks, part.link) == (ref.n, ref.V, ref.Ks, ref.link)


def test_fit_lays_out_minibatches_ahead_on_thread_workers_only(fan_out, monkeypatch):
    """With thread workers every minibatch of a pass after the first is laid out
    during the update before it, and the fit is the ``n_jobs=1`` fit bit for bit;
    with one worker or process workers nothing is laid out ahead."""
    from joblib import parallel_config

    from skdgm.deep_lda import _train
    laid = []
    real = _train.lay_out_chunks

    def spy(X, **kwargs):
        laid.append(X.shape[0])
        return real(X, **kwargs)

    monkeypatch.setattr(_train, "lay_out_chunks", spy)
    X, _ = _pgbn_corpus(7, K=(3,), n_docs=300)
    params = dict(n_components=(3, 2), n_iter=2, batch_size=75, local_burn_in=2,
                  local_samples=2, random_state=2)
    ref = DeepLDA(**params, n_jobs=1).fit(X)
    assert laid == []
    for backend, n_laid in ((None, 6), ("threading", 6), ("loky", 0)):
        laid.clear()
        with parallel_config(backend=backend) if backend else contextlib.nullcontext():
            m = DeepLDA(**params, n_jobs=2).fit(X)
        assert laid == [75] * n_laid
        for a, c in zip(ref.topics_ + [ref.r_], m.topics_ + [m.r_]):
            np.testing.assert_array_equal(a, c)
        assert m._rng.bit_generator.state == ref._rng.bit_generator.state


def test_chunk_layout_balances_two_workers_from_1600_documents():
    """The chunks depend on the number of documents only: chunks of 400 below
    1,600 documents, at least eight (of near-equal size) from there on."""
    import math

    from skdgm.deep_lda._train import SPLIT_CHUNKS, SPLIT_MIN_DOCS, chunk_layout
    assert SPLIT_CHUNKS * SPLIT_MIN_DOCS == 1600
    for n in (1, 200, 399, 400, 401, 1200, 1599, 1600, 2000, 3199, 3200, 11284):
        sizes = [sl.stop - sl.start for sl in chunk_layout(n, 400)]
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1
        assert len(sizes) == (max(math.ceil(n / 400), 8) if n >= 1600 else math.ceil(n / 400))
    assert len(chunk_layout(60, 25)) == 3         # small chunk sizes (tests) unchanged


def test_chunk_costs_are_the_chunks_local_costs():
    """One running sum gives every chunk's ``local_cost`` (CSR or dense), and the
    chunks' costs add up to the whole's: the in-process threshold is unchanged."""
    from skdgm.deep_lda._train import chunk_costs, chunk_layout, local_cost
    X, _ = _pgbn_corpus(4, K=(3,), n_docs=230)
    layout = chunk_layout(X.shape[0], 40)
    costs = chunk_costs(X, layout, [5, 3], 7)
    assert len(costs) == len(layout) == 6 and len(set(costs)) > 1
    for c, sl in zip(costs, layout):
        assert c == pytest.approx(local_cost(X[sl], [5, 3], 7), rel=1e-12)
    np.testing.assert_allclose(chunk_costs(X.toarray(), layout, [5, 3], 7), costs, rtol=1e-12)
    assert sum(costs) == pytest.approx(local_cost(X, [5, 3], 7), rel=1e-12)


def test_row_slices_are_cut_by_the_task_and_pickled_as_their_rows():
    """A chunk sent as a ``RowSlice`` is ``X[sl]`` where it is read, and travels to a
    process worker as those rows alone (not the whole of ``X``)."""
    import pickle

    from skdgm.deep_lda._local import RowSlice, rows_of
    X, _ = _pgbn_corpus(2, K=(3,), n_docs=120)
    part = RowSlice(X, slice(30, 70))
    want = X[30:70]
    for got in (rows_of(part), pickle.loads(pickle.dumps(part))):
        assert got.shape == want.shape and (got != want).nnz == 0
        np.testing.assert_array_equal(got.indptr, want.indptr)
    assert len(pickle.dumps(part)) < len(pickle.dumps(X)) / 2
    assert rows_of(want) is want


def test_small_calls_stay_in_process(monkeypatch, count_parallel, count_threads):
    """Below the cost threshold n_jobs=2 starts no workers (and gives the same answer);
    with the threshold at zero the same calls fan out."""
    from joblib import parallel_config

    from skdgm._core import chains
    from skdgm.deep_lda import _runs
    made = count_parallel
    monkeypatch.setattr(_runs, "CHUNK_DOCS", 50)      # several tasks per call
    X, _ = _pgbn_corpus(3, K=(3,), n_docs=200)
    params = dict(n_components=3, n_iter=1, batch_size=200, local_burn_in=2,
                  local_samples=2, random_state=0)
    with parallel_config(backend="threading"):
        m = DeepLDA(**params, n_jobs=2).fit(X)
        count_threads.clear()                         # those of the fit
        small = [m.transform(X), m.score_samples(X)]
        assert made == [] and count_threads == []
        monkeypatch.setattr(chains, "MIN_PARALLEL_COST", 0.0)
        monkeypatch.setattr(chains, "MIN_THREAD_COST", 0.0)
        fanned = [m.transform(X), m.score_samples(X)]
        assert made == [] and len(count_threads) == 2   # threads: no joblib Parallel
    for a, b in zip(small, fanned):
        np.testing.assert_array_equal(a, b)


def test_dask_backend(fan_out):
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, _ = _pgbn_corpus(7, K=(3,), n_docs=220)
    params = dict(n_components=3, n_iter=1, batch_size=220, local_burn_in=2,
                  local_samples=2, random_state=1)
    ref = DeepLDA(**params).fit(X)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None):
        with parallel_config(backend="dask"):
            m = DeepLDA(**params, n_jobs=2).fit(X)
    np.testing.assert_array_equal(ref.components_, m.components_)


def test_bernoulli_link():
    X, phi = _pgbn_corpus(8, K=(4,), n_docs=400, scale=8.0)
    B = (X > 0).astype(np.float64)
    m = DeepLDA(6, link="bernoulli", n_iter=6, batch_size=100, local_burn_in=10,
                local_samples=10, random_state=0).fit(B)
    assert _matched_cosine(m.components_, phi.T).min() >= 0.8
    with pytest.raises(ValueError, match="binary"):
        m.partial_fit(X)


def test_float32_and_dense_input():
    X, _ = _pgbn_corpus(9, K=(3,), n_docs=60)
    a = DeepLDA(**CHEAP).fit(X.toarray().astype(np.float32))
    b = DeepLDA(**CHEAP).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)


@pytest.mark.parametrize("bad, match", [
    (-1, "Negative values"), (0.5, "non-integer"), (np.nan, "NaN"), (np.inf, "infinity|inf"),
])
def test_bad_input(bad, match):
    X = np.ones((10, 5))
    X[2, 3] = bad
    with pytest.raises(ValueError, match=match):
        DeepLDA(**CHEAP).fit(X)


def test_bad_input_shapes_and_params():
    X = np.ones((10, 5))
    m = DeepLDA(**CHEAP).fit(X)
    with pytest.raises(ValueError, match="features"):
        m.partial_fit(np.ones((4, 6)))
    with pytest.raises(ValueError, match="0 sample"):
        DeepLDA(**CHEAP).fit(np.ones((0, 5)))
    with pytest.raises(ValueError, match="sampler"):
        DeepLDA(sampler="hmc").fit(X)
    with pytest.raises(ValueError, match="eta"):
        DeepLDA(n_components=(3, 2), eta=(0.1,)).fit(X)


def _text_corpus(seed, n=120):
    rng = np.random.default_rng(seed)
    vocab = [["goal", "match", "team", "score", "league", "coach", "player", "season"],
             ["atom", "cell", "energy", "lab", "theory", "quantum", "protein", "data"]]
    docs, y = [], []
    for i in range(n):
        c = i % 2
        words = rng.choice(vocab[c], size=30).tolist() + rng.choice(vocab[1 - c], size=3).tolist()
        docs.append(" ".join(words))
        y.append(c)
    return docs, np.array(y)


def test_pipeline_countvectorizer_logistic_regression():
    docs, y = _text_corpus(0)
    pipe = make_pipeline(CountVectorizer(), DeepLDA(2, n_iter=5, batch_size=40, local_burn_in=5,
                                                    local_samples=5, random_state=0),
                         LogisticRegression())
    pipe.fit(docs[:80], y[:80])
    assert pipe.score(docs[80:], y[80:]) >= 0.9


def test_gridsearch_over_learning_rate():
    """A grid over learning_rate must pick the rate that learns, by a clear margin.

    ``learning_rate=1e-6`` leaves the topics at their start; 1.0 learns the two
    themes. If learning_rate did not reach the update, or score did not measure
    the fit, both would score alike (measured gap 0.17-0.28 nats per held-out
    word on seeds 1-3 of this corpus; this test asserts 0.1 on every fold).
    """
    docs, _ = _text_corpus(1, n=60)
    X = CountVectorizer().fit_transform(docs)
    base = DeepLDA(2, n_iter=3, batch_size=20, local_burn_in=3, local_samples=3,
                   random_state=0)
    grid = [1e-6, 1.0]
    gs = GridSearchCV(base, {"learning_rate": grid}, cv=2).fit(X)
    res = gs.cv_results_
    assert gs.best_params_["learning_rate"] == 1.0
    for split in ("split0_test_score", "split1_test_score"):
        assert res[split][1] > res[split][0] + 0.1, res
    # the refit model is the model fitted directly with best_params_ on all of X
    direct = clone(base).set_params(learning_rate=1.0).fit(X)
    np.testing.assert_array_equal(gs.best_estimator_.components_, direct.components_)
    assert gs.score(X) == direct.score(X)
    # the tiny rate leaves the topics where the fit started them
    frozen = clone(base).set_params(learning_rate=1e-6).fit(X)
    start = DeepLDA(2, n_iter=1, learning_rate=1e-300, batch_size=20, local_burn_in=3,
                    local_samples=3, random_state=0).fit(X)
    np.testing.assert_allclose(frozen.components_, start.components_, atol=1e-3)
    assert np.abs(direct.components_ - start.components_).max() > 0.05


@pytest.mark.shared_data
def test_20news_smoke():
    path = DATA / "20news_2000.npz"
    if not path.exists():
        pytest.skip("shared data not available")
    d = np.load(path)
    X = sp.csr_matrix((d["train_data"], d["train_indices"], d["train_indptr"]),
                      shape=tuple(d["train_shape"]))
    m = DeepLDA((16,), n_iter=1, batch_size=200, total_samples=X.shape[0],
                local_burn_in=4, local_samples=2, random_state=0)
    for start in range(0, 1000, 200):
        m.partial_fit(X[start:start + 200])
    assert np.all(np.isfinite(m.components_))


# scikit-learn's common checks for DeepLDA run in tests/test_common.py.


@pytest.mark.parametrize("sampler", ["tlasgr", "tlfsgr", "sgrld"])
def test_estimator_step_follows_equations(sampler):
    """Replay one partial_fit from the estimator's own streams with the bare equations."""
    import copy

    X, _ = _pgbn_corpus(10, K=(4,), n_docs=150)
    m = DeepLDA((4, 3), sampler=sampler, total_samples=600, local_burn_in=3, local_samples=2,
                random_state=0).partial_fit(X[:50])
    phis = [p.copy() for p in m.topics_]
    st = m._sg_state
    r, M, M_top = m.r_.copy(), [a.copy() for a in st["M"]], st["M_top"]
    phihat = [p.copy() for p in st["phihat"]]
    ss = m._train_seed
    seed = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key,
                                  n_children_spawned=ss.n_children_spawned)
    rng = copy.deepcopy(m._rng)
    Xb = X[50:100]
    m.partial_fit(Xb)

    stats = m._merge(m._local(m._check_X(Xb, reset=False), seed, phis, r, n_burn=3,
                              n_collect=2, collect_topics=True))
    rho, eps = 600 / 50, 1.0 * (1 + 1 / 20) ** (-0.9 if sampler == "sgrld" else -0.7)
    if sampler == "sgrld":
        eps = 0.1 * (1 + 1 / 20) ** -0.9
    etas = [1 / 4, 1 / 3]
    newM = [(1 - eps) * M[l] + eps * rho * stats["topic_counts"][l].sum(0) for l in range(2)]
    for l in range(2):
        xbar = stats["topic_counts"][l]
        noise = rng.standard_normal(phis[l].shape)
        V = phis[l].shape[0]
        if sampler == "sgrld":
            phi = phihat[l] / phihat[l].sum(0)
            new = np.abs(phihat[l] + eps * ((rho * xbar + etas[l])
                                            - (rho * xbar.sum(0) + phihat[l].sum(0)) * phi)
                         + np.sqrt(2 * eps * phihat[l]) * noise)
            expected = new / new.sum(0)
        else:
            rate = eps / newM[l] if sampler == "tlasgr" else eps / newM[0].mean()
            rate = np.minimum(rate, 1 / (rho * xbar.sum(0) + etas[l] * V))  # documented cap
            y = (phis[l] + rate * ((rho * xbar + etas[l]) - (rho * xbar.sum(0) + etas[l] * V)
                                   * phis[l]) + np.sqrt(2 * rate * phis[l]) * noise)
            expected = np.abs(y - phis[l] * (y.sum(0) - 1))
            expected /= expected.sum(0)
            np.testing.assert_allclose(m.learning_rates_[l], rate, rtol=1e-12)
        np.testing.assert_allclose(m.topics_[l], expected, rtol=1e-10, atol=1e-300)
    newM_top = (1 - eps) * M_top + eps * rho * stats["q_top"]
    b = 1.0 + rho * stats["q_top"]
    rate_r = min(eps / newM_top, 1 / b)
    exp_r = np.abs(r + rate_r * ((rho * stats["top_tables"] + 1.0 / 3) - r * b)
                   + np.sqrt(2 * rate_r * r) * rng.standard_normal(3))
    np.testing.assert_allclose(m.r_, exp_r, rtol=1e-10)


# ------------------------------------------- counts the samplers cannot hold
def test_check_counts_max_total():
    from skdgm._core.base import check_counts

    limit = 2**63 - 1
    check_counts(np.array([[2.0**62, 1.0]]), max_total=limit)   # representable
    for X in (np.array([[2.0**63]]), np.array([[2.0**62, 2.0**62]]),
              sp.csr_matrix(np.array([[0, 2.0**62], [2.0**62, 0]])), np.array([[1e300]])):
        with pytest.raises(ValueError, match=r"at most 9223372036854775807 \(2\*\*63"):
            check_counts(X, max_total=limit, limit_name="2**63 - 1")
    check_counts(np.array([[1e300]]))                            # no limit asked for


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("method", ["fit", "partial_fit", "transform", "score",
                                    "score_samples", "perplexity"])
@pytest.mark.parametrize("bad", [2.0**63, 1e19, "sum"])
def test_counts_beyond_int64_are_rejected(method, sparse, bad):
    """A count (or total) past int64 used to wrap negative: silently an empty document."""
    import pickle

    X = _random_csr(12, 6, 0.5, seed=3).toarray().astype(np.float64)
    m = DeepLDA(**CHEAP).fit(X)
    Xbad = X.copy()
    if bad == "sum":       # every entry representable, the total is not
        Xbad[0, :2] = 2.0**62
    else:
        Xbad[1, 2] = bad
    Xbad = sp.csr_matrix(Xbad) if sparse else Xbad
    before = pickle.dumps(m)
    call = {"perplexity": lambda: m.perplexity(Xbad, X),
            "transform": lambda: m.transform(Xbad)}.get(method, lambda: getattr(m, method)(Xbad))
    with pytest.raises(ValueError, match=r"at most 9223372036854775807 \(2\*\*63 - 1"):
        call()
    assert pickle.dumps(m) == before
    if method == "perplexity":
        with pytest.raises(ValueError, match=r"2\*\*63 - 1"):
            m.perplexity(X, Xbad)
        assert pickle.dumps(m) == before
    # a fresh estimator stays unfitted, with no features recorded
    fresh = DeepLDA(**CHEAP)
    if method in ("fit", "partial_fit"):
        with pytest.raises(ValueError, match=r"2\*\*63 - 1"):
            getattr(fresh, method)(Xbad)
        assert not hasattr(fresh, "n_features_in_") and not hasattr(fresh, "topics_")


def test_gibbs_partial_fit_is_one_gibbs_sweep(monkeypatch):
    """The estimator's batch Gibbs update is exactly _gibbs.gibbs_sweep on its streams:
    Phi and r are drawn between the upward pass and the theta draws (issue 12, item 4)."""
    import copy

    from skdgm._core.chains import run_chains
    from skdgm.deep_lda import _gibbs, _runs

    monkeypatch.setattr(_runs, "CHUNK_DOCS", 100)

    X, _ = _pgbn_corpus(11, K=(4,), n_docs=230)        # three chunks of documents
    m = DeepLDA((4, 3), sampler="gibbs", random_state=0).partial_fit(X)
    phis, r = [p.copy() for p in m.topics_], m.r_.copy()
    thetas = copy.deepcopy(m._gibbs_state[1])
    ss = m._train_seed
    seed = np.random.SeedSequence(ss.entropy, spawn_key=ss.spawn_key,
                                  n_children_spawned=ss.n_children_spawned)
    rng = copy.deepcopy(m._rng)
    m.partial_fit(X)

    def map_chunks(func, tasks, **kw):
        return run_chains(func, tasks, seeds=seed.spawn(len(tasks)), **kw)

    slices = [slice(0, 77), slice(77, 153), slice(153, 230)]
    exp_phis, exp_r, exp_thetas = _gibbs.gibbs_sweep(
        [m._check_X(X, reset=False)[sl] for sl in slices], thetas, phis=phis, r=r,
        etas=[1 / 4, 1 / 3], gamma0=1.0, c0=1.0, a0=0.01, b0=0.01, e0=1.0, f0=1.0,
        link="poisson", rng=rng, map_chunks=map_chunks)
    for a, b in zip(m.topics_, exp_phis):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(m.r_, exp_r)
    for got, exp in zip(m._gibbs_state[1], exp_thetas):
        for a, b in zip(got, exp):
            np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------ sample (item 5)
def _corpus_with_lengths(seed, n_docs=300, V=40):
    """PGBN topics, and document lengths drawn uniformly from 20..60."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.2), 4).T
    theta = rng.gamma(0.5, 1.0, size=(n_docs, 4))
    lengths = rng.integers(20, 61, size=n_docs)
    p = theta @ phi.T
    X = rng.multinomial(lengths, p / p.sum(1, keepdims=True))
    return sp.csr_matrix(X), lengths


def test_sample_lengths_follow_the_training_documents():
    X, lengths = _corpus_with_lengths(0)
    m = DeepLDA((4, 2), n_iter=3, batch_size=100, local_burn_in=5, local_samples=5,
                random_state=0).fit(X)
    S = m.sample(4000, random_state=1)
    got = np.asarray(S.sum(axis=1)).ravel()
    # every length is one of the training lengths; their law is the empirical one:
    # mean within 5 standard errors, and a two-sample KS distance below its 1 % quantile
    assert set(np.unique(got)) <= set(np.unique(lengths))
    se = lengths.std() * np.sqrt(1 / 4000)
    assert abs(got.mean() - lengths.mean()) < 5 * se
    from scipy.stats import ks_2samp
    assert ks_2samp(got, lengths).pvalue > 0.01
    # words: corpus word frequencies are matched
    f_train = np.asarray(X.sum(axis=0)).ravel()
    f_gen = np.asarray(S.sum(axis=0)).ravel()
    corr = np.corrcoef(np.log(f_train + 0.5), np.log(f_gen + 0.5))[0, 1]
    assert corr > 0.9, corr
    # deterministic for a seed; explicit lengths are exact
    assert (m.sample(5, random_state=3) != m.sample(5, random_state=3)).nnz == 0
    N = np.array([0, 1, 7, 100])
    np.testing.assert_array_equal(np.asarray(m.sample(4, lengths=N, random_state=0)
                                             .sum(axis=1)).ravel(), N)
    assert m.sample(0).shape == (0, X.shape[1])


def test_sample_lengths_from_a_partial_fit_stream():
    X, lengths = _corpus_with_lengths(1, n_docs=200)
    m = DeepLDA((4,), local_burn_in=2, local_samples=2, random_state=0)
    m.partial_fit(X[:100]).partial_fit(X[100:])
    np.testing.assert_array_equal(np.repeat(m._length_values, m._length_counts),
                                  np.sort(lengths))
    m.fit(X[:50])                             # fit starts the histogram again
    assert m._length_counts.sum() == 50


def test_sample_bernoulli_number_of_ones():
    X, _ = _corpus_with_lengths(2)
    B = (X > 0).astype(np.float64)
    ones = np.asarray(B.sum(axis=1)).ravel()
    m = DeepLDA(4, link="bernoulli", n_iter=2, batch_size=100, local_burn_in=3,
                local_samples=3, random_state=0).fit(B)
    S = m.sample(2000, random_state=0)
    assert S.data.max() == 1
    got = np.asarray(S.sum(axis=1)).ravel()
    # each document's expected number of ones is a training document's: the mean of
    # 2000 documents within 5 SE (the per-document spread adds at most the binomial variance)
    se = np.sqrt((ones.var() + ones.mean()) / 2000)
    assert abs(got.mean() - ones.mean()) < 5 * se
    with pytest.raises(ValueError, match="distinct words"):
        m.sample(1, lengths=[B.shape[1] + 1])


@pytest.mark.parametrize("lengths, match", [
    ([3, 4], r"shape \(3,\)"), ([1, -1, 2], "non-negative"), ([1, 2.5, 2], "integers"),
    ("prior", "'empirical'"), ([1, np.nan, 2], "integers"),
])
def test_sample_bad_lengths(lengths, match):
    m = DeepLDA(**CHEAP).fit(np.ones((10, 5)))
    with pytest.raises(ValueError, match=match):
        m.sample(3, lengths=lengths)
    with pytest.raises(ValueError, match="n_samples"):
        m.sample(-1)


@pytest.mark.shared_data
def test_20news_sample_matches_corpus_word_frequencies():
    """Generated documents: 20News-like lengths and word frequencies (issue 12, item 5)."""
    from skdgm.datasets import fetch_20newsgroups_bow

    if not (DATA / "20news_2000.npz").is_file():
        pytest.skip("shared data not available")
    X = fetch_20newsgroups_bow(data_home=DATA, download_if_missing=False).train
    m = DeepLDA((32,), n_iter=1, batch_size=500, local_burn_in=5, local_samples=5,
                random_state=0).fit(X[:3000])
    S = m.sample(3000, random_state=0)
    f_train = np.asarray(X[:3000].sum(axis=0)).ravel()
    f_gen = np.asarray(S.sum(axis=0)).ravel()
    corr = np.corrcoef(np.log(f_train + 0.5), np.log(f_gen + 0.5))[0, 1]
    assert corr > 0.7, corr
    len_train = np.asarray(X[:3000].sum(axis=1)).ravel()
    len_gen = np.asarray(S.sum(axis=1)).ravel()
    assert len_gen.max() <= len_train.max()
    assert abs(np.median(len_gen) - np.median(len_train)) <= 0.1 * np.median(len_train)


@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_gibbs_sweep_cython_equals_numpy(link):
    from skdgm.deep_lda import _gibbs

    X = _random_csr(30, 12, 0.3, seed=5)
    if link == "bernoulli":
        X.data[:] = 1
    rng = np.random.default_rng(0)
    phis = [rng.dirichlet(np.ones(12), 4).T.copy(), rng.dirichlet(np.ones(4), 3).T.copy()]
    out = []
    for kernels in ("cython", "numpy"):
        g = np.random.default_rng(1)
        state = (phis, np.full(3, 0.5), [None, None])
        for _ in range(3):
            p, r, th = _gibbs.gibbs_sweep(
                [X[:15], X[15:]], state[2], phis=state[0], r=state[1], etas=[0.3, 0.3],
                gamma0=1.0, c0=1.0, a0=0.01, b0=0.01, e0=1.0, f0=1.0, link=link, rng=g,
                map_chunks=_gibbs.serial_map(g), kernels=kernels)
            state = (p, r, th)
        out.append(state)
    (pa, ra, ta), (pb, rb, tb) = out
    for a, b in zip(pa, pb):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ra, rb)
    for ca, cb in zip(ta, tb):
        for a, b in zip(ca, cb):
            np.testing.assert_array_equal(a, b)


def test_gibbs_n_jobs_gives_identical_results(fan_out):
    from joblib import parallel_config

    X, _ = _pgbn_corpus(12, K=(3,), n_docs=250)
    params = dict(n_components=(3, 2), sampler="gibbs", n_iter=3, random_state=3)
    ref = DeepLDA(**params, n_jobs=1).fit(X)
    thr = DeepLDA(**params, n_jobs=2)
    with parallel_config(backend="threading"):
        thr.fit(X)
    for a, b in zip(ref.topics_, thr.topics_):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(ref.r_, thr.r_)


# ------------------------------------------------- no subnormal arithmetic
def test_draws_stay_above_the_floor_and_products_stay_normal():
    """theta, Phi and r never go below FLOOR = 1e-100, so that the partitions'
    products theta * phi are normal doubles (subnormal arithmetic made K = 512 cost
    56x K = 32 on some CPUs). With the former floor (the smallest normal double)
    batch Gibbs with a small eta put Dirichlet entries near 1e-300."""
    assert _local.FLOOR ** 2 >= np.finfo(np.float64).tiny
    rng = np.random.default_rng(0)
    th = _local_fast.gamma_theta(np.full((50, 40), 1e-3), np.zeros((50, 40), dtype=np.int64),
                                 np.ones(50), rng, _local.FLOOR)
    assert th.min() == _local.FLOOR          # tiny shapes do reach the floor...
    X, _ = _pgbn_corpus(6, K=(4,), n_docs=60)
    m = DeepLDA((6, 3), sampler="gibbs", n_iter=5, eta=0.001, random_state=0).fit(X)
    for arr in m.topics_ + [m.r_] + [t for t in m._gibbs_state[1][0]]:
        assert arr.min() >= _local.FLOOR     # ...and nothing goes below it


def test_verbose_prints_one_line_per_pass(capsys):
    X, _ = _pgbn_corpus(7, K=(3,), n_docs=90)
    m = DeepLDA((4, 2), n_iter=3, batch_size=30, local_burn_in=2, local_samples=2,
                random_state=0, verbose=1).fit(X)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("[DeepLDA]")]
    # one line per pass, then why the fit stopped
    assert lines.pop() == "[DeepLDA] stopped: fixed n_iter=3"
    assert len(lines) == 3 == m.n_iter_ and m.n_updates_ == 9
    assert all("train_perplexity = " in l and "time_left = " in l for l in lines)
    # the estimate of the time left ends at 0 with the fit; partial_fit has none
    assert m.history_["time_left"][-1] == 0.0
    m.partial_fit(X[:30])
    assert m.history_["time_left"][-1] == 0.0 and len(m.history_["time"]) == 4


@pytest.mark.parametrize("V, K", [(7, 3), (300, 16), (50, 1)])
def test_fused_simplex_step_matches_twin(V, K):
    """The Cython TLASGR step draws its normals inside, in the order of
    rng.standard_normal(phi.shape), and computes Eq. 15 as the NumPy twin does."""
    from skdgm.deep_lda import _global_fast

    rng = np.random.default_rng(V)
    phi = rng.dirichlet(np.ones(V), K).T.copy()
    xbar = rng.poisson(0.3, (V, K)).astype(float)
    rate = rng.uniform(1e-4, 1e-1, K)
    a, ra = _global_fast.simplex_step(phi, rate, xbar, 7.0, 0.05,
                                      np.random.default_rng(1), _local.FLOOR)
    b, rb = _global.simplex_step(phi, rate, xbar, 7.0, 0.05,
                                 np.random.default_rng(1).standard_normal((V, K)))
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)
    np.testing.assert_array_equal(ra, rb)
    np.testing.assert_allclose(a.sum(axis=0), 1.0)
    # the stream is left where the twin's draw leaves it
    g1, g2 = np.random.default_rng(1), np.random.default_rng(1)
    _global_fast.simplex_step(phi, rate, xbar, 7.0, 0.05, g1, _local.FLOOR)
    g2.standard_normal((V, K))
    assert g1.random() == g2.random()
    # the same normals passed in (noise=) give the same step, bit for bit
    c, rc = _global_fast.simplex_step(phi, rate, xbar, 7.0, 0.05, None, _local.FLOOR,
                                      np.random.default_rng(1).standard_normal((V, K)))
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(ra, rc)
    with pytest.raises(ValueError, match="noise must have phi's shape"):
        _global_fast.simplex_step(phi, rate, xbar, 7.0, 0.05, None, _local.FLOOR,
                                  np.zeros((V + 1, K)))


@pytest.mark.parametrize("sampler", ["tlasgr", "tlfsgr", "sgrld"])
def test_sg_update_cython_equals_numpy(sampler):
    rng = np.random.default_rng(3)
    phis = [rng.dirichlet(np.ones(40), 6).T.copy(), rng.dirichlet(np.ones(6), 3).T.copy()]
    stats = {"topic_counts": [rng.poisson(0.5, (40, 6)).astype(float),
                              rng.poisson(0.5, (6, 3)).astype(float)],
             "top_tables": np.ones(3), "q_top": 2.0}
    state = {"M": [np.ones(6), np.ones(3)], "M_top": 1.0, "t": 3,
             "phihat": [p * p.shape[0] for p in phis]}
    out = [_global.sg_update(phis, np.ones(3), state, stats, sampler=sampler, eps=0.3,
                             rho=10.0, etas=[0.1, 0.2], gamma0=1.0, c0=1.0,
                             rng=np.random.default_rng(5), kernels=k)
           for k in ("cython", "numpy")]
    for a, b in zip(out[0][0], out[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-12)


@pytest.mark.parametrize("sampler", ["tlasgr", "tlfsgr", "sgrld"])
@pytest.mark.parametrize("kernels", ["cython", "numpy"])
def test_sg_update_on_predrawn_noise_is_the_same_update(sampler, kernels):
    """Normals drawn beforehand (``noise``, as the training's StandardNormals task
    draws them beside the local step) give the update that drawing them inside
    gives, bit for bit, and leave the stream where the inside draw leaves it."""
    from skdgm.deep_lda._local import StandardNormals
    rng = np.random.default_rng(4)
    phis = [rng.dirichlet(np.ones(40), 6).T.copy(), rng.dirichlet(np.ones(6), 3).T.copy()]
    r = np.full(3, 0.5)
    stats = {"topic_counts": [rng.poisson(0.5, (40, 6)).astype(float),
                              rng.poisson(0.5, (6, 3)).astype(float)],
             "top_tables": np.ones(3), "q_top": 2.0}
    state = {"M": [np.ones(6), np.ones(3)], "M_top": 1.0, "t": 3,
             "phihat": [p * p.shape[0] for p in phis]}
    kw = dict(sampler=sampler, eps=0.3, rho=10.0, etas=[0.1, 0.2], gamma0=1.0, c0=1.0,
              kernels=kernels)
    g_in, g_pre = np.random.default_rng(9), np.random.default_rng(9)
    inside = _global.sg_update(phis, r, state, stats, rng=g_in, **kw)
    side = StandardNormals(g_pre, _global.noise_size(phis, r))
    assert side.size == 40 * 6 + 6 * 3 + 3
    side.receive(side.draw())
    pre = _global.sg_update(phis, r, state, stats, rng=None, noise=side.noise, **kw)
    for a, b in zip(inside[0] + [inside[1]] + inside[3], pre[0] + [pre[1]] + pre[3]):
        np.testing.assert_array_equal(a, b)
    assert g_in.random() == g_pre.random()
    with pytest.raises(ValueError, match="fewer than needed"):
        _global.sg_update(phis, r, state, stats, rng=None, noise=side.noise[:-1], **kw)


def test_standard_normals_carry_a_process_workers_stream_back():
    """A StandardNormals task run on a copy of the generator (as a process worker
    receives it, pickled) sets the caller's generator to the state after the draw."""
    import pickle

    from skdgm.deep_lda._local import StandardNormals, local_task
    rng, ref = np.random.default_rng(2), np.random.default_rng(2)
    side = StandardNormals(rng, 17)
    copy = pickle.loads(pickle.dumps(side))
    side.receive(local_task(copy, None))
    np.testing.assert_array_equal(side.noise, ref.standard_normal(17))
    assert rng.random() == ref.random()

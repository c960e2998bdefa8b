"""The theta-collapsed layer-1 local sampler of DeepLDA (issue 15).

:mod:`skdgm.deep_lda._collapsed` runs the upward-downward sampler with
``theta^(1)`` integrated out. Checked here:

* each Cython kernel against its NumPy twin, bit for bit;
* the single-token sweep's stationary law against the exact Dirichlet-multinomial
  law of a document small enough to enumerate (one shared prior row, and a
  prior row per document), with a wrong prior as the test's own control;
* the whole local sampler (fixed globals, one and two layers) by a Geweke
  joint-distribution test, with a sweep that all but drops the prior term
  ``phi[v, k] a_jk`` as the control;
* the Rao-Blackwellised sums against the explicit sampler's draws;
* bad arguments raise a ``ValueError`` that names the problem.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _geweke import assert_geweke_fails, assert_geweke_passes
from scipy import stats
from scipy.special import gammaln

from skdgm.deep_lda import _collapsed, _collapsed_fast, _local

KERNEL_SETS = ["cython", "numpy"]


def _layout(X, phi, r):
    return _local._Layout(sp.csr_matrix(X), [phi], np.asarray(r, float), "poisson")


def _kernels(name):
    """The collapsed kernels of a kernel set, and that set's ``entry_dots`` in the
    argument order of the prior bucket's per-entry totals."""
    assign, sweep, rb, totals = _collapsed.KERNELS[name]
    dots = _local._KERNELS[name][7]

    def entry_totals(wptr, docs, phi, prior):
        return dots(wptr, docs, np.ascontiguousarray(prior), phi)
    return assign, sweep, rb, totals, entry_totals


def _kernel_problem(seed):
    """A random problem laid out for the kernels: ``(rng, phi, X, n, K, lay)``."""
    rng, phi, X = _random_problem(seed)
    return rng, phi, X, X.shape[0], phi.shape[1], _layout(X, phi, np.ones(phi.shape[1]))


def _random_problem(seed, n=12, V=30, K=7, lam=0.6):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.3), K).T.copy()
    X = sp.csr_matrix(rng.poisson(lam, (n, V)))
    return rng, phi, X


# ------------------------------------------------------------------ twins
@pytest.mark.parametrize("shared", [True, False])
def test_kernels_match_twins_bit_for_bit(shared):
    rng, phi, X, n, K, lay = _kernel_problem(0)
    if shared:
        prior = np.broadcast_to(rng.gamma(0.5, size=K), (n, K))
    else:
        prior = rng.gamma(0.5, size=(n, K))
    theta = rng.gamma(1.0, size=(n, K))
    rate = rng.gamma(2.0, size=n)
    out = []
    for name in KERNEL_SETS:
        assign, sweep, rb, totals, entry_totals = _kernels(name)
        g = np.random.default_rng(5)
        z = np.empty(int(lay.data_t.sum()), np.intc)
        A = np.zeros((n, K), np.int64)
        W = np.zeros((lay.words.size, K))
        assign(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, theta, g, z, A, W)
        dense = np.ascontiguousarray(prior)
        total = (totals(lay.phi_words, prior[0]) if shared
                 else entry_totals(lay.wptr, lay.wdocs, lay.phi_words, dense))
        for _ in range(4):
            sweep(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total, shared, g, z, A,
                  W)
        z0 = np.full_like(z, -1)
        A0 = np.zeros_like(A)
        sweep(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total, shared, g, z0, A0,
              np.zeros((0, K)))
        ts, tn = np.zeros((n, K)), np.zeros((n, K))
        rb(prior, A, rate, ts, tn)
        out.append((z, A, W, z0, A0, total, ts, tn, g.random()))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
    z, A, W, z0, A0 = out[0][:5]
    # counts conserve every document's and every word's tokens, and z agrees with A
    np.testing.assert_array_equal(A.sum(1), np.asarray(X.sum(1)).ravel())
    np.testing.assert_array_equal(A0.sum(1), np.asarray(X.sum(1)).ravel())
    assert W.sum() == 5 * X.sum()
    docs_t = np.repeat(lay.wdocs, lay.data_t)
    np.testing.assert_array_equal(np.bincount(docs_t * K + z, minlength=n * K).reshape(n, K), A)


@pytest.mark.parametrize("name", KERNEL_SETS)
def test_word_rows_scatter_the_word_topic_counts(name):
    # counts written into every word's row of a (V, K) array equal the
    # compact (chunk words, K) counts scattered, on the same stream
    rng, phi, X, n, K, lay = _kernel_problem(6)
    assign, sweep, _, totals, _ = _kernels(name)
    prior = np.broadcast_to(np.full(K, 0.3), (n, K))
    total = totals(lay.phi_words, prior[0])
    out = []
    for W in (np.zeros((lay.words.size, K)), np.zeros((phi.shape[0], K))):
        rows = None if W.shape[0] == lay.words.size else lay.words
        g = np.random.default_rng(2)
        z = np.empty(int(lay.data_t.sum()), np.intc)
        A = np.zeros((n, K), np.int64)
        assign(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, np.ones((n, K)), g, z, A, W,
               rows)
        sweep(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total, True, g, z, A, W,
              None, rows)
        out.append(W)
    dense = np.zeros_like(out[1])
    dense[lay.words] = out[0]
    np.testing.assert_array_equal(out[1], dense)
    with pytest.raises(ValueError, match="outside word_topic"):
        sweep(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total, True, g, z, A,
              np.zeros((2, K)), None, lay.words)


def test_rao_blackwell_twin_and_formula():
    rng = np.random.default_rng(1)
    prior = rng.gamma(0.5, size=(6, 5))
    counts = rng.poisson(2.0, (6, 5)).astype(np.int64)
    rate = rng.gamma(2.0, size=6)
    sums = []
    for name in KERNEL_SETS:
        ts, tn = np.ones((6, 5)), np.ones((6, 5))
        _collapsed.KERNELS[name][2](prior, counts, rate, ts, tn)
        sums.append((ts, tn))
    np.testing.assert_array_equal(sums[0][0], sums[1][0])
    np.testing.assert_array_equal(sums[0][1], sums[1][1])
    post = prior + counts
    np.testing.assert_allclose(sums[0][0] - 1, post / rate[:, None], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sums[0][1] - 1, post / post.sum(1, keepdims=True), rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize("K", [1, 5, 9])
def test_prior_totals_match_twins(K):
    rng = np.random.default_rng(K)
    phi = rng.random((7, K))
    a = rng.random(K)
    np.testing.assert_array_equal(_collapsed_fast.prior_totals(phi, a),
                                  _collapsed.prior_totals(phi, a))
    np.testing.assert_allclose(_collapsed.prior_totals(phi, a), phi @ a, rtol=1e-13)
    wptr = np.array([0, 2, 2, 5, 6, 6, 8, 9], np.int64)
    docs = rng.integers(0, 4, 9).astype(np.int64)
    prior = rng.random((4, K))
    # the prior bucket's per-entry totals: the own-words kernel, words by documents
    got = _kernels("cython")[4](wptr, docs, phi, prior)
    np.testing.assert_array_equal(got, _kernels("numpy")[4](wptr, docs, phi, prior))
    words = np.repeat(np.arange(7), np.diff(wptr))
    np.testing.assert_allclose(got, np.einsum("ek,ek->e", phi[words], prior[docs]), rtol=1e-13)


# ------------------------------------------------------------- exact law
# One document of four tokens (word 0 twice, words 1 and 2 once), three topics.
PHI = np.array([[0.6, 0.1, 0.2], [0.3, 0.2, 0.5], [0.1, 0.7, 0.3]])
DOC = np.array([[2, 1, 1]])
PRIOR_ROW = np.array([0.4, 1.3, 0.7])


def _exact_topic_count_law(prior_row):
    """``P(n)`` of the document's topic counts: every assignment enumerated."""
    words = np.repeat(np.arange(3), DOC[0])
    law = {}
    for z in itertools.product(range(3), repeat=len(words)):
        n = np.bincount(z, minlength=3)
        logp = (np.log(PHI[words, z]).sum()
                + np.sum(gammaln(prior_row + n) - gammaln(prior_row)))
        law[tuple(n)] = law.get(tuple(n), 0.0) + np.exp(logp)
    total = sum(law.values())
    return {k: v / total for k, v in law.items()}


def _final_states(kernels, prior_row, shared, n_chains, n_sweeps, seed):
    """Topic counts after ``n_sweeps`` sweeps of ``n_chains`` independent chains,
    each started sequentially (``z = -1``)."""
    lay = _layout(DOC, PHI, np.ones(3))
    _, sweep, _, totals, entry_totals = _kernels(kernels)
    prior = np.broadcast_to(prior_row, (1, 3)) if shared else np.array([prior_row])
    total = (totals(lay.phi_words, prior_row) if shared
             else entry_totals(lay.wptr, lay.wdocs, lay.phi_words, prior))
    g = np.random.default_rng(seed)
    seen = {}
    for _ in range(n_chains):
        z = np.full(4, -1, np.intc)
        A = np.zeros((1, 3), np.int64)
        for _ in range(n_sweeps):
            sweep(lay.wptr, lay.wdocs, lay.data_t, lay.phi_words, prior, total, shared, g, z,
                  A, np.zeros((0, 3)))
        key = tuple(A[0])
        seen[key] = seen.get(key, 0) + 1
    return seen


def _chi2_pvalue(seen, law):
    keys = sorted(law)
    obs = np.array([seen.get(k, 0) for k in keys], float)
    exp = np.array([law[k] for k in keys]) * obs.sum()
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("shared", [True, False])
def test_sweep_draws_the_exact_dirichlet_multinomial_law(shared):
    # 15 states; 6000 independent chains of 6 sweeps each (the sequential start
    # is already close, and a sweep of four tokens mixes); a correct sampler
    # fails at 1e-4 one time in 10^4
    law = _exact_topic_count_law(PRIOR_ROW)
    seen = _final_states("cython", PRIOR_ROW, shared, 6000, 6, seed=3)
    assert _chi2_pvalue(seen, law) > 1e-4
    # the control: the same draws scored against the law of a prior twice as large
    assert _chi2_pvalue(seen, _exact_topic_count_law(2 * PRIOR_ROW)) < 1e-6


def test_numpy_twin_draws_the_same_law():
    law = _exact_topic_count_law(PRIOR_ROW)
    seen = _final_states("numpy", PRIOR_ROW, False, 1500, 4, seed=4)
    assert _chi2_pvalue(seen, law) > 1e-4


# --------------------------------------------------------- whole sampler
V, KS, N_DOCS = 5, (3, 2), 4
PRIOR = dict(a0=20.0, b0=20.0, e0=20.0, f0=20.0)
_G = np.random.default_rng(7)
GLOBALS = {1: ([_G.dirichlet(np.ones(V), 3).T.copy()], np.array([0.8, 1.2, 0.6])),
           2: ([_G.dirichlet(np.ones(V), 3).T.copy(), _G.dirichlet(np.ones(3), 2).T.copy()],
               np.array([1.1, 0.9]))}


def _sample_prior(L):
    phis, r = GLOBALS[L]

    def draw(rng):
        p = PRIOR
        theta_top = None
        theta = []
        if L == 2:
            c3 = rng.gamma(p["e0"], 1.0 / p["f0"], N_DOCS)
            theta_top = rng.gamma(np.broadcast_to(r, (N_DOCS, 2))) / c3[:, None]
            shape = theta_top @ phis[1].T
        else:
            shape = np.broadcast_to(r, (N_DOCS, 3))
        p2 = rng.beta(p["a0"], p["b0"], N_DOCS)
        theta1 = rng.gamma(shape) * (p2 / (1 - p2))[:, None]
        tiny = np.finfo(float).tiny
        theta = [np.maximum(theta1, tiny)]
        if theta_top is not None:
            theta.append(np.maximum(theta_top, tiny))
        return theta
    return draw


def _sample_counts(L):
    phis = GLOBALS[L][0]

    def draw(theta, rng):
        x = rng.poisson(theta[0] @ phis[0].T)
        return sp.csr_matrix(x.astype(float))
    return draw


def _statistics(theta, X):
    x = X.toarray()
    length = x.sum(axis=1)
    out = [theta[0].mean(0), (theta[0] ** 2).mean(0), [(length * theta[0].sum(1)).mean()]]
    if len(theta) > 1:
        out += [theta[1].mean(0), (theta[1] ** 2).mean(0),
                [(theta[0].sum(1) * theta[1].sum(1)).mean()]]
    return np.concatenate(out)


def _transition(L, broken_prior=False):
    phis, r = GLOBALS[L]

    def step(theta, X, rng):
        res = _local.upward_downward(X, rng, phis=phis, r=r, theta=theta, n_burn=1,
                                     n_collect=1, collect_topics=False, **PRIOR)
        return res["theta"]
    if not broken_prior:
        return step

    def broken(theta, X, rng):
        real = _collapsed.KERNELS["cython"]

        def sweep(wptr, docs, counts, phi, prior, total, shared, *rest):
            # the prior bucket a hundred times too light: as if the a_jk
            # term of the conditional were left out
            return real[1](wptr, docs, counts, phi, 0.01 * np.asarray(prior), 0.01 * total,
                           shared, *rest)
        _collapsed.KERNELS["cython"] = (real[0], sweep, *real[2:])
        try:
            return step(theta, X, rng)
        finally:
            _collapsed.KERNELS["cython"] = real
    return broken


N_ITER = 6000


@pytest.mark.parametrize("L", [1, 2])
def test_collapsed_local_sweep_leaves_joint_invariant(L):
    assert_geweke_passes(_sample_prior(L), _sample_counts(L), _transition(L), _statistics,
                         n_iter=N_ITER, rng=np.random.default_rng(0))


@pytest.mark.parametrize("L", [1, 2])
def test_dropped_prior_term_is_caught(L):
    assert_geweke_fails(_sample_prior(L), _sample_counts(L), _transition(L, broken_prior=True),
                        _statistics, n_iter=N_ITER, rng=np.random.default_rng(0))


@pytest.mark.slow
@pytest.mark.parametrize("L", [1, 2])
def test_collapsed_local_sweep_leaves_joint_invariant_long(L):
    assert_geweke_passes(_sample_prior(L), _sample_counts(L), _transition(L), _statistics,
                         n_iter=40_000, rng=np.random.default_rng(1))


# ------------------------------------------------ against the explicit one
def test_collapsed_and_explicit_samplers_agree_on_posterior_means():
    # the two samplers of one posterior: the means of theta^(1) (and its
    # normalised rows) over 40 chains of 60 collected sweeps agree within
    # 5 standard errors of the difference of the chain means
    rng, phi, X = _random_problem(2, n=6, V=20, K=4, lam=1.0)
    r = np.array([0.5, 1.0, 0.3, 0.8])
    means = {True: [], False: []}
    for c in (True, False):
        for s in range(40):
            res = _local.upward_downward(X, np.random.default_rng([s, int(c)]), phis=[phi], r=r,
                                         n_burn=20, n_collect=60, collapse_theta=c)
            means[c].append(np.concatenate([res["theta_norm_sum"][0].ravel(),
                                            res["theta_sum"][0].ravel()]) / 60)
    a, b = np.array(means[True]), np.array(means[False])
    se = np.sqrt(a.var(0, ddof=1) / len(a) + b.var(0, ddof=1) / len(b))
    z = (a.mean(0) - b.mean(0)) / se
    assert np.max(np.abs(z)) < 5, np.max(np.abs(z))
    # Rao-Blackwellisation: the collapsed chain's estimate varies less
    assert np.median(a.var(0) / b.var(0)) < 1.0


def test_collapsed_is_the_default_and_bernoulli_stays_explicit():
    rng, phi, X = _random_problem(3)
    r = np.full(phi.shape[1], 0.5)
    kw = dict(phis=[phi], r=r, n_burn=2, n_collect=2)
    a = _local.upward_downward(X, np.random.default_rng(0), **kw)
    b = _local.upward_downward(X, np.random.default_rng(0), collapse_theta=True, **kw)
    c = _local.upward_downward(X, np.random.default_rng(0), collapse_theta=False, **kw)
    np.testing.assert_array_equal(a["theta_sum"][0], b["theta_sum"][0])
    assert not np.array_equal(a["theta_sum"][0], c["theta_sum"][0])
    Xb = X.copy()
    Xb.data[:] = 1
    d = _local.upward_downward(Xb, np.random.default_rng(0), link="bernoulli", **kw)
    e = _local.upward_downward(Xb, np.random.default_rng(0), link="bernoulli",
                               collapse_theta=False, **kw)
    np.testing.assert_array_equal(d["theta_sum"][0], e["theta_sum"][0])


def test_no_sweeps_returns_the_start():
    rng, phi, X = _random_problem(4)
    theta = [rng.gamma(1.0, size=(X.shape[0], phi.shape[1]))]
    res = _local.upward_downward(X, rng, phis=[phi], r=np.ones(phi.shape[1]), theta=theta,
                                 n_burn=0, n_collect=0)
    np.testing.assert_array_equal(res["theta"][0], theta[0])


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("name", KERNEL_SETS)
def test_bad_arguments_are_named(name):
    rng, phi, X, n, K, lay = _kernel_problem(5)
    assign, sweep, rb, totals, entry_totals = _kernels(name)
    N = int(lay.data_t.sum())
    prior = np.ones((n, K))
    total = entry_totals(lay.wptr, lay.wdocs, lay.phi_words, prior)
    W0 = np.zeros((0, K))
    args = (lay.wptr, lay.wdocs, lay.data_t, lay.phi_words)
    with pytest.raises(ValueError, match="z has"):
        sweep(*args, prior, total, False, rng, np.zeros(N + 1, np.intc),
              np.zeros((n, K), np.int64), W0)
    with pytest.raises(ValueError, match="topic"):
        sweep(*args, prior, total, False, rng, np.full(N, K, np.intc),
              np.zeros((n, K), np.int64), W0)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        sweep(*args, prior, total[:-1], False, rng, np.zeros(N, np.intc),
              np.zeros((n, K), np.int64), W0)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        assign(*args, np.ones((n + 1, K)), rng, np.zeros(N, np.intc),
               np.zeros((n, K), np.int64), W0)
    bad_docs = lay.wdocs.copy()
    bad_docs[0] = n
    with pytest.raises(ValueError, match="outside doc_topic"):
        assign(lay.wptr, bad_docs, lay.data_t, lay.phi_words, np.ones((n, K)), rng,
               np.zeros(N, np.intc), np.zeros((n, K), np.int64), W0)
    with pytest.raises(ValueError, match="inconsistent shapes"):
        rb(prior, np.zeros((n, K), np.int64), np.ones(n + 1), np.zeros((n, K)),
           np.zeros((n, K)))
    with pytest.raises(ValueError, match="inconsistent shapes"):
        totals(lay.phi_words, np.ones(K + 1))


@pytest.mark.parametrize("fn", [_local.crt, _local._local_fast.crt])
def test_crt_column_sums_are_the_tables_summed(fn):
    # the top layer's tables are only summed over documents: the same draws,
    # summed in the kernel
    rng = np.random.default_rng(8)
    counts = rng.poisson(3.0, (9, 5)).astype(np.int64)
    shape = np.broadcast_to(rng.gamma(1.0, size=5), (9, 5))
    full = fn(counts, shape, np.random.default_rng(1))
    sums = fn(counts, shape, np.random.default_rng(1), column_sums=True)
    np.testing.assert_array_equal(sums, full.sum(axis=0))
    np.testing.assert_array_equal(sums, _local.crt(counts, shape, np.random.default_rng(1),
                                                   column_sums=True))

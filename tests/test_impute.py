"""``impute(X)`` with NaN marking missing entries, for every estimator (issue 17, item 3).

Ground truth is exact: ``E[x_miss | x_obs]`` by enumeration on models small enough
(SBN: missing entries and hidden units; DBM: odd layers, even ones summed out;
GRBM: hidden states, the Gaussian visibles integrated). Tolerances are Monte-Carlo
standard errors over independent seeds of the chain. The Rao-Blackwellised
average of conditional means is checked to have a lower variance than the
average of the draws, on the same chains.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

from skdgm import BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM
from skdgm.dbm import _impute as dbm_impute
from skdgm.grbm import _impute as grbm_impute
from skdgm.grbm._model import GRBMParams
from skdgm.sbn import _impute as sbn_impute
from skdgm.sbn._model import SBNParams

N_RUNS = 24      # independent chains per check: the standard error's sample
Z = 4.5          # |estimate - exact| <= Z standard errors (fixed seeds: no flakes)


def _mask(rng, n, d, frac=0.4):
    m = rng.random((n, d)) < frac
    m[np.arange(n), rng.integers(0, d, n)] = False       # at least one observed
    m[0] = False                                          # a complete row
    m[1, :] = True
    m[1, 0] = False                                       # a row with one observed entry
    return m


def _sbn_params(rng, D=5, K=(3,), autoregressive=False, scale=1.5):
    sizes = (D,) + K
    W = [scale * rng.standard_normal((sizes[l], sizes[l + 1])) for l in range(len(K))]
    b = [rng.standard_normal(s) for s in sizes]
    lat = None
    if autoregressive:
        lat = [np.tril(scale * rng.standard_normal((s, s)), -1) for s in sizes]
    return SBNParams(W, b, lat)


def _dbm_params(rng, sizes=(5, 3, 2), scale=1.5):
    coefs = [scale * rng.standard_normal((a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    intercepts = [rng.standard_normal(s) for s in sizes]
    return coefs, intercepts


def _grbm_params(rng, N=4, M=4):
    return GRBMParams(1.2 * rng.standard_normal((M, N)), rng.standard_normal(M),
                      rng.standard_normal(N), np.log(rng.uniform(0.3, 1.0, N)))


def _case(kind, seed=0):
    """(run(rng, rao_blackwell) -> estimate, exact, X, missing) for a small model."""
    rng = np.random.default_rng(seed)
    n = 6
    if kind == "grbm":
        p = _grbm_params(rng)
        X = rng.standard_normal((n, 4)) + p.mu
        missing = _mask(rng, n, 4)
        Xm = np.where(missing, np.nan, X)
        exact = grbm_impute.exact_conditional_mean(p, Xm, missing)
        run = lambda r, rb: grbm_impute.gibbs_impute(p, Xm, missing, r, n_sweeps=300,
                                                     n_burn=50, rao_blackwell=rb)[1]
    elif kind == "dbm":
        coefs, intercepts = _dbm_params(rng)
        X = (rng.random((n, 5)) < 0.5).astype(float)
        missing = _mask(rng, n, 5)
        Xm = np.where(missing, np.nan, X)
        exact = dbm_impute.exact_conditional_mean(coefs, intercepts, Xm, missing)
        run = lambda r, rb: dbm_impute.gibbs_impute(coefs, intercepts, Xm, missing, r,
                                                    n_sweeps=300, n_burn=50,
                                                    rao_blackwell=rb)[1]
    else:
        ar = kind == "sbn_ar"
        K = (3, 2) if kind == "sbn_deep" else (3,)
        p = _sbn_params(rng, K=K, autoregressive=ar)
        X = (rng.random((n, 5)) < 0.5).astype(float)
        missing = _mask(rng, n, 5)
        Xm = np.where(missing, np.nan, X)
        exact = sbn_impute.exact_conditional_mean(p, Xm, missing)
        run = lambda r, rb: sbn_impute.gibbs_impute(p, Xm, missing, r, n_sweeps=200,
                                                    n_burn=40, rao_blackwell=rb)[1]
    return run, exact, Xm, missing


KINDS = ["grbm", "dbm", "sbn", "sbn_ar", "sbn_deep"]


def _runs(run, rb, seed=1):
    return np.array([run(np.random.default_rng([seed, k]), rb) for k in range(N_RUNS)])


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_matches_exact_conditional_mean(kind):
    run, exact, Xm, missing = _case(kind)
    est = _runs(run, True)
    mean = est.mean(0)[missing]
    se = est.std(0, ddof=1)[missing] / np.sqrt(N_RUNS)
    err = np.abs(mean - exact[missing])
    assert np.all(err <= Z * se + 1e-12), (err / np.maximum(se, 1e-300)).max()
    # the check has power: a value a few standard errors off would fail it
    assert np.median(se) < 0.02


@pytest.mark.parametrize("kind", ["grbm", "dbm", "sbn"])
def test_exact_check_rejects_a_slightly_wrong_model(kind):
    """Negative control: the same check against the exact answer of a model whose
    first weight matrix is 10 % larger must fail, so the tolerance has power."""
    run, exact, Xm, missing = _case(kind)
    rng = np.random.default_rng(0)
    if kind == "grbm":
        p = _grbm_params(rng)
        wrong = grbm_impute.exact_conditional_mean(p._replace(W=1.1 * p.W), Xm, missing)
    elif kind == "dbm":
        coefs, intercepts = _dbm_params(rng)
        wrong = dbm_impute.exact_conditional_mean([1.1 * coefs[0]] + coefs[1:], intercepts,
                                                  Xm, missing)
    else:
        p = _sbn_params(rng)
        wrong = sbn_impute.exact_conditional_mean(
            SBNParams([1.1 * p.weights[0]], p.biases, None), Xm, missing)
    assert not np.allclose(wrong, exact)
    est = _runs(run, True)
    se = est.std(0, ddof=1)[missing] / np.sqrt(N_RUNS)
    assert np.any(np.abs(est.mean(0)[missing] - wrong[missing]) > Z * se)


@pytest.mark.parametrize("kind", KINDS)
def test_rao_blackwell_has_lower_variance_than_draws(kind):
    run, _, _, missing = _case(kind)
    var_rb = _runs(run, True).var(0, ddof=1)[missing]
    var_raw = _runs(run, False).var(0, ddof=1)[missing]
    # the variance of a variance estimate from 24 runs is large; compare the totals
    assert var_rb.sum() < 0.8 * var_raw.sum(), (var_rb.sum(), var_raw.sum())


# ------------------------------------------------------------ through the estimators

def _binary_data(n=150, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.35).astype(float)
    X[:, 1] = X[:, 0]
    X[:, 3] = np.maximum(X[:, 2], X[:, 4])
    return X


def _fitted(kind):
    if kind == "grbm":
        rng = np.random.default_rng(0)
        X = rng.standard_normal((300, 3))
        X[:, 1] = X[:, 0] + 0.3 * rng.standard_normal(300)
        est = GaussianBernoulliRBM(n_components=4, n_iter=10, batch_size=50, cd_steps=5,
                                   n_posterior_samples=2, random_state=0).fit(X)
    elif kind == "dbm":
        X = _binary_data()
        est = DBMCAST(n_components=(4, 3), n_iter=10, pretrain=False, n_chains=20,
                      batch_size=50, n_posterior_samples=2, random_state=0).fit(X)
    else:
        X = _binary_data()
        est = BayesianSBN(n_components=(3,), n_iter=20, burn_in=10, n_posterior_samples=3,
                          random_state=0).fit(X)
    return est, X


def _exact_for(est, Xm, missing):
    if isinstance(est, GaussianBernoulliRBM):
        return np.mean([grbm_impute.exact_conditional_mean(p.astype(np.float64), Xm, missing)
                        for p in est.posterior_samples_], axis=0)
    if isinstance(est, DBMCAST):
        return np.mean([dbm_impute.exact_conditional_mean(c, b, Xm, missing)
                        for c, b in est.posterior_samples_], axis=0)
    return np.mean([sbn_impute.exact_conditional_mean(p, Xm, missing)
                    for p in est.posterior_samples_], axis=0)


@pytest.mark.parametrize("kind", ["grbm", "dbm", "sbn"])
def test_estimator_impute_matches_exact(kind):
    est, X = _fitted(kind)
    rng = np.random.default_rng(5)
    Xt = X[:8]
    missing = _mask(rng, len(Xt), Xt.shape[1])
    Xm = np.where(missing, np.nan, Xt)
    exact = _exact_for(est, Xm, missing)
    runs = []
    for r in range(N_RUNS):
        est.set_params(random_state=r)       # impute re-seeds from random_state
        out = est.impute(Xm, n_sweeps=100)
        np.testing.assert_array_equal(out[~missing], Xt[~missing])
        runs.append(out)
    runs = np.array(runs)
    mean = runs.mean(0)[missing]
    se = runs.std(0, ddof=1)[missing] / np.sqrt(N_RUNS)
    assert np.all(np.abs(mean - exact[missing]) <= Z * se + 1e-9)
    if kind != "grbm":
        assert np.all((runs >= 0) & (runs <= 1))
    # same int seed, same answer; no missing entry, the input back
    np.testing.assert_array_equal(est.impute(Xm, n_sweeps=100), runs[-1])
    np.testing.assert_array_equal(est.impute(Xt), Xt)


@pytest.mark.parametrize("kind", ["grbm", "dbm", "sbn"])
def test_impute_bad_input(kind):
    est, X = _fitted(kind)
    unfitted = type(est)(**est.get_params())
    with pytest.raises(NotFittedError):
        unfitted.impute(X[:3])
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in est.__dict__.items()}
    Xm = X[:4].copy()
    Xm[2] = np.nan
    with pytest.raises(ValueError, match="no observed entry"):
        est.impute(Xm)
    with pytest.raises(ValueError, match="features"):
        est.impute(X[:4, :-1])
    with pytest.raises(ValueError, match="n_sweeps"):
        est.impute(X[:4], n_sweeps=1)
    if kind != "grbm":
        with pytest.raises(ValueError, match="binary"):
            est.impute(X[:4] * 2)
    with pytest.raises(ValueError, match="infinity|inf"):
        bad = X[:4].copy()
        bad[0, 0] = np.inf
        est.impute(bad)
    assert set(est.__dict__) == set(before)
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(est.__dict__[k], v)


# ------------------------------------------------------------------- DeepLDA

def _lda_single_topic(seed=0):
    """A one-topic, one-layer DeepLDA with a flat Beta(1, 1) prior on p^(2)."""
    rng = np.random.default_rng(seed)
    V = 8
    phi = rng.dirichlet(np.ones(V))
    theta = rng.gamma(2.0, 4.0, size=60)
    X = rng.poisson(theta[:, None] * phi).astype(float)
    est = DeepLDA(1, n_iter=3, batch_size=60, local_burn_in=5, local_samples=5,
                  n_posterior_samples=1, a0=1.0, b0=1.0, random_state=0).fit(X)
    return est, X


def _lda_exact(est, Xm, missing):
    """``E[x_miss | x_obs] = phi_miss E[theta | x_obs]`` for one topic, by quadrature.

    ``theta ~ Gam(r, rate c)``, ``c = (1 - p) / p``, ``p ~ Beta(a0, b0)``; given ``c`` the
    observed counts (exposure ``s = sum_obs phi``, total ``n``) leave
    ``theta | x_obs, c ~ Gam(r + n, rate c + s)``, and ``p(c | x_obs) ∝ p(c) c^r (c + s)^-(r + n)``.
    """
    from scipy.integrate import quad
    from scipy.stats import beta as beta_dist
    phi, r = est.topics_[0][:, 0], float(est.r_[0])
    out = np.where(missing, 0.0, Xm)
    for i in range(len(Xm)):
        m = missing[i]
        if not m.any():
            continue
        s, n = phi[~m].sum(), Xm[i, ~m].sum()

        def log_w(p):
            c = (1 - p) / p
            return (beta_dist.logpdf(p, est.a0, est.b0) + r * np.log(c)
                    - (r + n) * np.log(c + s))

        ref = log_w(0.5)
        den = quad(lambda p: np.exp(log_w(p) - ref), 0, 1, limit=200, epsabs=0)[0]
        num = quad(lambda p: np.exp(log_w(p) - ref) * (r + n) / ((1 - p) / p + s), 0, 1,
                   limit=200, epsabs=0)[0]
        out[i, m] = phi[m] * num / den
    return out


def _lda_chain(est, Xm, missing, rb, seed):
    from skdgm.deep_lda._impute import gibbs_impute
    phis, r = est.posterior_samples_[0]

    def sweep(Xc, s, thetas):
        res = est._local(Xc, s, phis, r, n_burn=0, n_collect=1, collect_topics=False,
                         thetas=thetas)
        return [part["theta"] for part in res], est._merge(res)["theta_sum"][0]

    root = np.random.SeedSequence([7, seed])
    return gibbs_impute(sweep, phis[0], Xm, missing, np.random.default_rng(root.spawn(1)[0]),
                        root.spawn(200), n_sweeps=200, n_burn=40, link="poisson",
                        rao_blackwell=rb)[1]


def test_deep_lda_impute_matches_exact_single_topic():
    est, X = _lda_single_topic()
    Xt = X[:6]
    missing = _mask(np.random.default_rng(3), len(Xt), Xt.shape[1])
    Xm = np.where(missing, np.nan, Xt)
    exact = _lda_exact(est, Xm, missing)
    runs = np.array([_lda_chain(est, Xm, missing, True, k) for k in range(N_RUNS)])
    se = runs.std(0, ddof=1)[missing] / np.sqrt(N_RUNS)
    err = np.abs(runs.mean(0)[missing] - exact[missing])
    assert np.all(err <= Z * se + 1e-12), (err / se).max()
    # power: the answer of a model with twice the r is rejected
    est_wrong = type(est)(**est.get_params()).fit(X)
    est_wrong.r_ = 2.0 * est.r_
    wrong = _lda_exact(est_wrong, Xm, missing)
    assert np.any(np.abs(runs.mean(0)[missing] - wrong[missing]) > Z * se)
    # the estimator gives the same kind of answer (one chain, so a looser check)
    out = est.impute(Xm, n_sweeps=200)
    np.testing.assert_array_equal(out[~missing], Xt[~missing])
    assert np.all(np.abs(out[missing] - exact[missing]) <= Z * se * np.sqrt(N_RUNS))


def test_deep_lda_rao_blackwell_has_lower_variance():
    est, X = _lda_single_topic()
    Xt = X[:6]
    missing = _mask(np.random.default_rng(3), len(Xt), Xt.shape[1])
    Xm = np.where(missing, np.nan, Xt)
    var_rb = np.array([_lda_chain(est, Xm, missing, True, k)
                       for k in range(N_RUNS)]).var(0, ddof=1)[missing]
    var_raw = np.array([_lda_chain(est, Xm, missing, False, k)
                        for k in range(N_RUNS)]).var(0, ddof=1)[missing]
    assert var_rb.sum() < 0.8 * var_raw.sum()


def test_deep_lda_impute_beats_word_means_on_held_out_counts():
    rng = np.random.default_rng(0)
    V, K = 40, 4
    phi = np.zeros((V, K))
    for k, block in enumerate(np.array_split(np.arange(V), K)):
        phi[block, k] = rng.dirichlet(np.ones(len(block)))
    theta = rng.gamma(0.3, 30.0, size=(300, K))
    X = rng.poisson(theta @ phi.T).astype(float)
    est = DeepLDA(K, n_iter=8, batch_size=100, local_burn_in=10, local_samples=10,
                  random_state=0).fit(X[:200])
    Xt = X[200:]
    missing = rng.random(Xt.shape) < 0.2
    missing[:, 0] = False
    filled = est.impute(np.where(missing, np.nan, Xt))
    mse = np.mean((filled[missing] - Xt[missing]) ** 2)
    base = np.mean((X[:200].mean(0)[np.nonzero(missing)[1]] - Xt[missing]) ** 2)
    assert mse < 0.5 * base, (mse, base)
    assert np.all(filled[missing] >= 0)


def test_deep_lda_impute_bad_input():
    est, X = _lda_single_topic()
    with pytest.raises(NotFittedError):
        DeepLDA(1).impute(X[:2])
    Xm = X[:3].copy()
    Xm[1] = np.nan
    with pytest.raises(ValueError, match="no observed entry"):
        est.impute(Xm)
    with pytest.raises(ValueError, match="features"):
        est.impute(X[:3, :-1])
    with pytest.raises(ValueError, match="integer"):
        est.impute(X[:3] + 0.5)
    with pytest.raises(ValueError, match="n_sweeps"):
        est.impute(X[:3], n_sweeps=0)
    np.testing.assert_array_equal(est.impute(X[:3]), X[:3])


@pytest.mark.parametrize("kind", ["grbm", "dbm", "sbn"])
def test_impute_takes_csr_with_nan_entries(kind):
    est, X = _fitted(kind)
    Xm = X[:6].copy()
    Xm[2:4, 1] = np.nan
    np.testing.assert_array_equal(est.impute(sp.csr_matrix(Xm)), est.impute(Xm))


def test_deep_lda_impute_takes_csr():
    est, X = _lda_single_topic()
    Xm = X[:4].copy()
    Xm[0, 2] = np.nan
    np.testing.assert_array_equal(est.impute(sp.csr_matrix(Xm)), est.impute(Xm))


@pytest.mark.parametrize("link", ["poisson", "bernoulli"])
def test_deep_lda_impute_one_task_per_chunk(monkeypatch, link):
    """Issue 26: one task per chunk for every sweep and kept sample.

    Documents that fit in one chunk get the per-sweep implementation's answer bit
    for bit; with several chunks, every chunk's answer depends on its own rows and
    position only (the first chunk's equals imputing its rows alone) and the whole
    answer is the same for one and two workers.
    """
    from skdgm.deep_lda import _runs
    from skdgm.deep_lda._impute import impute_per_sweep

    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, (60, 30))
    X = (X > 0).astype(int) if link == "bernoulli" else X
    est = DeepLDA((6, 3), link=link, n_iter=2, batch_size=20, random_state=0,
                  n_posterior_samples=2).fit(X)
    Xm = X.astype(float)
    Xm[rng.random(X.shape) < 0.1] = np.nan
    missing = np.isnan(Xm)
    ref = np.where(missing, impute_per_sweep(est._local, est._merge, Xm, missing,
                                             est.posterior_samples_, est._eval_seed(4),
                                             n_sweeps=6, link=link), Xm)
    out = est.impute(Xm, n_sweeps=6)
    np.testing.assert_array_equal(out, ref)
    monkeypatch.setattr(_runs, "CHUNK_DOCS", 25)      # three chunks of 20 documents
    three = est.impute(Xm, n_sweeps=6)
    np.testing.assert_array_equal(three[:20], est.impute(Xm[:20], n_sweeps=6))
    assert not np.array_equal(three[20:40][missing[20:40]], out[20:40][missing[20:40]])
    from skdgm._core import chains
    monkeypatch.setattr(chains, "MIN_PARALLEL_COST", 0.0)   # really use the workers
    monkeypatch.setattr(chains, "MIN_THREAD_COST", 0.0)
    np.testing.assert_array_equal(est.set_params(n_jobs=2).impute(Xm, n_sweeps=6), three)
    monkeypatch.setattr(chains, "SHARE_MIN_BYTES", 1)       # the kept samples as files
    from joblib import parallel_config
    with parallel_config(backend="loky"):                   # process workers, not threads
        np.testing.assert_array_equal(est.impute(Xm, n_sweeps=6), three)


def test_deep_lda_filled_counts_is_the_dense_fill_as_csr():
    """Issue 26: the CSR of the documents at a fill, built from the observed entries
    and the missing positions, is what ``csr_matrix`` makes of the dense filled
    documents (same entries, order and values; zero fills left out), and the
    rates at the missing entries are ``(Phi theta)_miss``."""
    from skdgm.deep_lda._impute import FilledCounts, sparse_missing

    rng = np.random.default_rng(1)
    X = rng.poisson(0.7, (25, 40)).astype(float)
    X[3] = 0.0                                      # a document of missing entries and zeros
    missing = rng.random(X.shape) < 0.2
    Xm = np.where(missing, np.nan, X)
    filled = FilledCounts(*sparse_missing(Xm, missing))
    rows, cols = np.nonzero(missing)
    np.testing.assert_array_equal(filled.rows, rows)
    np.testing.assert_array_equal(filled.cols, cols)
    for fill in (np.zeros(rows.size), rng.poisson(1.0, rows.size).astype(float),
                 rng.poisson(5.0, rows.size).astype(float)):
        full = np.where(missing, 0.0, X)
        full[rows, cols] = fill
        ref, got = sp.csr_matrix(full), filled.csr(fill)
        assert got.shape == ref.shape
        for a in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(got, a), getattr(ref, a))
    theta, phi = rng.gamma(1.0, 1.0, (25, 6)), rng.dirichlet(np.ones(40), 6).T
    np.testing.assert_allclose(filled.rates(theta, phi),
                               np.einsum("ek,ek->e", theta[rows], phi[cols]), rtol=1e-13)

"""Posterior uncertainty of features: ``transform(X, return_std=True)`` and ``n_posterior_samples``.

Issue 17, item 2. Every estimator's mean must be the ``transform`` users had, its
standard deviation the mixture's over the kept parameter states (checked against a
direct computation from ``posterior_samples_``), and keeping more states must not
change training.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import expit

from skdgm import BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM
from skdgm._core.posterior import IterateKeeper, Moments, bernoulli_std
from skdgm.dbm import _model as dbm_model
from skdgm.grbm._model import hidden_activation, sigmoid
from skdgm.sbn import _model as sbn_model


def _binary(n=120, d=6, seed=0):
    rng = np.random.default_rng(seed)
    X = (rng.random((n, d)) < 0.4).astype(float)
    X[:, 1] = X[:, 0]
    return X


def _gaussian(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[:, 1] += X[:, 0]
    return X


def _counts(n=80, v=25, seed=0):
    rng = np.random.default_rng(seed)
    return sp.csr_matrix(rng.poisson(1.0, (n, v)).astype(float))


def _grbm(**kw):
    return GaussianBernoulliRBM(**{**dict(n_components=4, n_iter=4, batch_size=50,
                                          cd_steps=3, random_state=0), **kw})


def _dbm(**kw):
    return DBMCAST(**{**dict(n_components=(4, 3), n_iter=4, pretrain=False, n_chains=10,
                             batch_size=40, random_state=0), **kw})


def _sbn(**kw):
    return BayesianSBN(**{**dict(n_components=(3,), n_iter=12, burn_in=4,
                                 n_posterior_samples=4, random_state=0), **kw})


def _lda(**kw):
    return DeepLDA(**{**dict(n_components=(4, 2), n_iter=3, batch_size=40, local_burn_in=2,
                             local_samples=4, n_posterior_samples=3, random_state=0), **kw})


# ------------------------------------------------------------------ shared pieces

def test_moments_law_of_total_variance():
    rng = np.random.default_rng(0)
    p = rng.random((5, 4, 3))               # 5 samples of conditional means
    acc = Moments()
    for ps in p:
        acc.add(ps, var=ps * (1 - ps))
    np.testing.assert_allclose(acc.mean(), p.mean(0))
    total = (p * (1 - p)).mean(0) + p.var(0)
    np.testing.assert_allclose(acc.var(), total)
    # for binary units the mixture's spread is that of a Bernoulli with the mean
    np.testing.assert_allclose(acc.std(), bernoulli_std(p.mean(0)))
    draws = Moments()
    for x in rng.normal(3.0, 0.5, (4000, 2)):
        draws.add(x)
    assert draws.std() == pytest.approx([0.5, 0.5], rel=0.05)


def test_iterate_keeper_copies_and_resizes():
    k = IterateKeeper(1)
    cur = (np.zeros(2),)
    k.keep(cur)
    assert k.states(cur)[0] is cur and len(k) == 1       # n=1 stores nothing
    k.set_size(3)
    for i in range(5):
        a = np.full(2, float(i))
        k.keep((a,))
        a[:] = -1                                         # a later in-place update
    assert [s[0][0] for s in k.states(cur)] == [2.0, 3.0, 4.0]
    k.set_size(2)
    assert [s[0][0] for s in k.states(cur)] == [3.0, 4.0]


# ------------------------------------------------------------- per estimator

@pytest.mark.parametrize("kind", ["grbm", "dbm", "sbn", "lda"])
def test_return_std_mean_is_transform(kind):
    est, X = {"grbm": (_grbm(n_posterior_samples=3), _gaussian()),
              "dbm": (_dbm(n_posterior_samples=3), _binary()),
              "sbn": (_sbn(), _binary()),
              "lda": (_lda(), _counts())}[kind]
    est.fit(X)
    Xt = X[:7]
    plain = est.transform(Xt)
    mean, std = est.transform(Xt, return_std=True)
    np.testing.assert_array_equal(mean, plain)
    assert std.shape == mean.shape and np.all(np.isfinite(std)) and np.all(std >= 0)
    assert np.any(std > 0)
    if kind != "lda":
        # binary hidden units: the mixture's spread is sqrt(pbar (1 - pbar))
        np.testing.assert_allclose(std, bernoulli_std(mean), rtol=1e-12, atol=1e-12)
    # float32 in, float32 out for both
    if not sp.issparse(Xt):
        m32, s32 = est.transform(Xt.astype(np.float32), return_std=True)
        assert m32.dtype == s32.dtype == np.float32


def test_grbm_average_over_kept_iterates():
    X = _gaussian()
    est = _grbm(n_posterior_samples=3).fit(X)
    states = est.posterior_samples_
    assert len(states) == 3
    for a, b in zip(states[-1], est._params()):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(states[0].W, states[-1].W)
    p = np.array([sigmoid(hidden_activation(X[:5], s)) for s in states])
    mean, std = est.transform(X[:5], return_std=True)
    np.testing.assert_allclose(mean, p.mean(0), rtol=1e-12)
    np.testing.assert_allclose(std ** 2, (p * (1 - p)).mean(0) + p.var(0), rtol=1e-10)
    # keeping states does not touch training: same parameters as with one state
    one = _grbm().fit(X)
    np.testing.assert_array_equal(one.components_, est.components_)
    # the default keeps today's behaviour: the current model only, no copies
    assert len(one.posterior_samples_) == 1
    assert one.posterior_samples_[0].W is one.components_
    np.testing.assert_array_equal(one.transform(X[:5]),
                                  sigmoid(hidden_activation(X[:5], one._params())))


def test_grbm_partial_fit_keeps_one_state_per_call():
    X = _gaussian()
    est = _grbm(n_posterior_samples=2)
    for _ in range(3):
        est.partial_fit(X)
    assert len(est.posterior_samples_) == 2
    est.set_params(n_posterior_samples=4)
    est.partial_fit(X)
    est.partial_fit(X)
    assert len(est.posterior_samples_) == 4


def test_dbm_average_over_kept_iterates():
    X = _binary()
    est = _dbm(n_posterior_samples=3).fit(X)
    states = est.posterior_samples_
    assert len(states) == 3
    for a, b in zip(states[-1][0], est.coefs_):
        np.testing.assert_array_equal(a, b)
    mus = []
    for coefs, intercepts in states:
        mf = dbm_model.mean_field(X[:5], coefs, intercepts, est.n_mean_field_eval,
                                  est.mean_field_tol, starts=("doubled", "zeros"))
        mus.append(np.hstack(mf[1:]))
    mus = np.array(mus)
    mean, std = est.transform(X[:5], return_std=True)
    np.testing.assert_allclose(mean, mus.mean(0), rtol=1e-12)
    np.testing.assert_allclose(std ** 2, (mus * (1 - mus)).mean(0) + mus.var(0), rtol=1e-10)
    one = _dbm().fit(X)
    for a, b in zip(one.coefs_, est.coefs_):
        np.testing.assert_array_equal(a, b)
    assert len(one.posterior_samples_) == 1


def test_sbn_std_over_posterior_samples_exact_and_chain():
    X = _binary()
    est = _sbn().fit(X)
    p = np.array([sbn_model.posterior_mean_exact(s, X[:5]) for s in est.posterior_samples_])
    mean, std = est.transform(X[:5], return_std=True)
    np.testing.assert_allclose(mean, p.mean(0), rtol=1e-12)
    np.testing.assert_allclose(std ** 2, (p * (1 - p)).mean(0) + p.var(0), rtol=1e-10)
    # above 16 hidden units the features come from Gibbs draws; same definition
    big = _sbn(n_components=(17,), n_iter=3, burn_in=1, n_posterior_samples=2).fit(X)
    m, s = big.transform(X[:4], return_std=True)
    np.testing.assert_array_equal(m, big.transform(X[:4]))
    np.testing.assert_allclose(s, np.sqrt(m * (1 - m)))


def test_deep_lda_transform_averages_over_kept_samples():
    X = _counts()
    est = _lda().fit(X)
    assert len(est.posterior_samples_) == 3
    T, S = est.transform(X[:6], return_std=True)
    np.testing.assert_allclose(T.sum(1), 1.0)
    # the latest sample alone gives another answer: the kept samples are used
    latest = _lda(n_posterior_samples=1).fit(X)
    np.testing.assert_array_equal(latest.topics_[0], est.topics_[0])
    assert not np.allclose(latest.transform(X[:6]), T)
    TL, SL = est.transform(X[:6], return_std=True, all_layers=True)
    assert [t.shape for t in TL] == [(6, 4), (6, 2)] == [s.shape for s in SL]
    np.testing.assert_array_equal(TL[0], T)
    np.testing.assert_array_equal(SL[0], S)


@pytest.mark.parametrize("make", [_grbm, _dbm])
def test_n_posterior_samples_is_validated(make):
    est = make(n_posterior_samples=0)
    X = _gaussian() if make is _grbm else _binary()
    with pytest.raises(ValueError, match="n_posterior_samples"):
        est.fit(X)
    assert not hasattr(est, "n_features_in_")


def test_impute_over_states_carries_the_chain_and_averages():
    from skdgm._core.posterior import impute_over_states
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    missing = np.array([[False, True], [True, False]])
    seen = []

    def impute_one(params, chain):
        seen.append(chain)
        return (0 if chain is None else chain + 1), np.full(X.shape, params)

    out = impute_over_states(impute_one, [1.0, 2.0, 6.0], X, missing)
    assert seen == [None, 0, 1]              # each state continues the previous chain
    np.testing.assert_array_equal(out, [[1.0, 3.0], [3.0, 1.0]])

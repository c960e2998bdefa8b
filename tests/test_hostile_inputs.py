"""Four hostile-input cases a review's matrix still found (issue 27), each fixed here.

* ``DBMCAST(pretrain_learning_rate=0.0)`` pre-trained nothing, silently;
* ``DeepLDA(e0=1e-300)`` fitted, then ``sample`` raised numpy's "pvals < 0, pvals
  > 1 or pvals contains NaNs" (a ``Gam(e0, 1/f0)`` draw of 0 divided ``theta``);
* ``DBMCAST.set_params(beta_min=...)`` after ``fit`` must reach ``partial_fit``;
* ``DBMCAST(learning_rate=1e6)`` returned weights of 1.2e6 (the review's figure),
  below the absolute divergence bound: the relative-growth rule of
  ``check_finite_params`` flags it (and the same runaway of BayesianSBN's DSGHMC).
"""

import copy
import pickle

import numpy as np
import pytest

from skdgm import DBMCAST, DeepLDA
from skdgm._core.base import DIVERGENCE_GROWTH, check_finite_params
from skdgm.deep_lda._generate import sample_word_probabilities
from skdgm.exceptions import DivergenceError


def _binary(n=60, d=6, seed=0):
    return (np.random.default_rng(seed).random((n, d)) < 0.4).astype(float)


def _counts(n=60, d=8, seed=0):
    return np.random.default_rng(seed).poisson(2.0, (n, d)).astype(float)


def _dbm(**kw):
    return DBMCAST(**{**dict(n_components=(4, 3), n_iter=2, n_chains=10, batch_size=30,
                             pretrain_n_iter=1, n_temperatures=4, swap_interval=3,
                             random_state=0), **kw})


# --- DBMCAST(pretrain_learning_rate=0.0) ----------------------------------------


def test_dbm_zero_pretrain_learning_rate_is_rejected_and_names_the_option():
    est = _dbm(pretrain_learning_rate=0.0)
    with pytest.raises(ValueError, match="pretrain_learning_rate"):
        est.fit(_binary())
    assert not hasattr(est, "coefs_")
    # pretrain=False is the way to skip pre-training; any positive rate is accepted
    _dbm(pretrain=False, pretrain_n_iter="auto").fit(_binary())
    _dbm(pretrain_learning_rate=1e-6).fit(_binary())


# --- DeepLDA(e0=1e-300) -----------------------------------------------------------


@pytest.mark.parametrize("e0", [1e-300, 5e-324, 0.01])
def test_deep_lda_tiny_e0_samples_finite_documents(e0):
    X = _counts()
    est = DeepLDA(n_components=(3, 2, 2), n_iter=2, e0=e0, local_burn_in=2,
                  local_samples=2, random_state=0).fit(X)
    assert np.all(np.isfinite(est.transform(X)))
    lengths = np.full(500, 30)
    docs = est.sample(500, lengths=lengths, random_state=0)
    np.testing.assert_array_equal(np.asarray(docs.sum(axis=1)).ravel(), lengths)


def test_word_probabilities_stay_on_the_simplex_when_every_scale_underflows():
    rng = np.random.default_rng(1)
    # four layers: before the guards, three scales c of 0 (or of 1e-100, their floor,
    # multiplied up layer after layer) overflowed or divided by 0
    Ks = [12, 5, 4, 3, 2]
    phis = [rng.dirichlet(np.ones(Ks[l]), size=Ks[l + 1]).T for l in range(4)]
    r = np.full(2, 0.5)
    p = sample_word_probabilities(phis, r, 1e-300, 1.0, 200, rng)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-12)
    # c -> 0 sends every shape above the top to infinity, where a gamma draw equals
    # its shape: each document's words are then Phi^(1) ... Phi^(4) r / |r|, the
    # same for all documents (to double precision, with r's own draw at the top
    # the only randomness left)
    top = rng.standard_gamma(np.full((20000, 2), 0.5))
    top /= top.sum(axis=1, keepdims=True)
    expected = (phis[0] @ phis[1] @ phis[2] @ phis[3] @ top.T).T.mean(axis=0)
    se = (phis[0] @ phis[1] @ phis[2] @ phis[3] @ top.T).T.std(axis=0) / np.sqrt(200)
    np.testing.assert_array_less(np.abs(p.mean(axis=0) - expected), 5 * se + 1e-12)


# --- DBMCAST.set_params(beta_min=...) then partial_fit -----------------------------


@pytest.mark.parametrize("sampler", ["cast", "adaptive_st", "trans_sap"])
def test_dbm_beta_min_set_after_fit_reaches_partial_fit(sampler):
    X = _binary(n=300)
    est = _dbm(sampler=sampler, beta_min=0.9).fit(X)
    same, moved = copy.deepcopy(est), copy.deepcopy(est)
    same.partial_fit(X)
    moved.set_params(beta_min=0.1).partial_fit(X)
    np.testing.assert_allclose(moved._sampler_obj.betas, np.linspace(1.0, 0.1, 4))
    np.testing.assert_allclose(same._sampler_obj.betas, np.linspace(1.0, 0.9, 4))
    # the ladder changed the negative phase, hence the update
    assert not np.array_equal(moved.coefs_[0], same.coefs_[0])


# --- DBMCAST(learning_rate=1e6): relative growth ------------------------------------


def test_dbm_huge_learning_rate_diverges_and_leaves_the_estimator_as_it_was():
    X = _binary()
    est = _dbm(learning_rate=1e6)
    with pytest.raises(DivergenceError, match="moved by .* in one update"):
        est.fit(X)
    assert not hasattr(est, "coefs_")
    fitted = _dbm().fit(X)
    fitted.set_params(learning_rate=1e6)
    before = pickle.dumps(fitted.__dict__)
    with pytest.raises(DivergenceError, match="learning_rate|step size"):
        fitted.partial_fit(X)
    assert pickle.dumps(fitted.__dict__) == before


def test_sbn_dsghmc_huge_learning_rate_diverges_too():
    # the same runaway in BayesianSBN's SG-MCMC steps, unflagged before
    # (benchmarks/results/topics_interop.txt: weights of 4.8e6 on binarised digits)
    from skdgm import BayesianSBN

    X = _binary(n=100, d=8)
    est = BayesianSBN(n_components=(4,), inference="dsghmc_gibbs", n_iter=3,
                      learning_rate=1e6, random_state=0)
    with pytest.raises(DivergenceError, match="in one update"):
        est.fit(X)
    assert not hasattr(est, "params_")
    # a thousand times the default step still trains
    est.set_params(learning_rate=10.0).fit(X)
    assert np.all(np.isfinite(est.coefs_[0]))


@pytest.mark.parametrize("lr", [0.05, 1.0, 10.0])
def test_dbm_healthy_learning_rates_do_not_trip_the_growth_rule(lr):
    est = _dbm(learning_rate=lr, n_iter=5).fit(_binary(n=200, d=16))
    assert np.all(np.isfinite(est.coefs_[0]))


def test_growth_rule_compares_the_step_with_the_previous_magnitude_or_the_scale():
    old = {"w": np.array([2.0, -1.0])}
    # a step of 150 is 75 times the previous magnitude 2: healthy
    check_finite_params({"w": np.array([152.0, -1.0])}, "t", previous=old)
    with pytest.raises(DivergenceError, match="moved by 201"):
        check_finite_params({"w": np.array([2.0, 200.0])}, "t", previous=old)
    # from tiny parameters the natural scale (bound / DIVERGENCE_BOUND) is the reference
    tiny = {"w": np.array([1e-3])}
    check_finite_params({"w": np.array([99.0])}, "t", previous=tiny)
    check_finite_params({"w": np.array([990.0])}, "t", previous=tiny, bound=1e9)
    with pytest.raises(DivergenceError):
        check_finite_params({"w": np.array([101.0])}, "t", previous=tiny)
    # lists of arrays are compared entry by entry; names absent from previous are not
    check_finite_params({"w": [np.ones(2), np.full(3, 50.0)], "new": np.full(2, 1e6)},
                        "t", previous={"w": [np.ones(2), np.ones(3)]})
    assert DIVERGENCE_GROWTH == 100.0

"""BayesianSBN's default scoring above 16 hidden units (``method="stratified"``, issue 25).

The states short Gibbs chains visit are summed exactly and importance draws from
the chains' mixture estimate the rest. Checked against exact ``log p(x)`` on models
small enough to enumerate: every state counted once (all states visited: the exact
value), the estimate of ``p(x)`` unbiased when the chains miss most of the mass,
the reported standard error matching the seed-to-seed spread, and at the default
settings, on a sharp many-moded posterior like a trained SBN's, most rows exact and
the mean error below that of the previous default (``"warm_ais"``).
"""

import numpy as np
import pytest

from skdgm import BayesianSBN
from skdgm.sbn import _evaluate, _model, _stratified
from test_sbn_scoring import _model_and_rows   # a random SBN and rows drawn from it

DEFAULTS = _stratified.STRATIFIED


def _run(params, X, seed, **settings):
    return _stratified.log_marginal_stratified(params, X, np.random.SeedSequence(seed),
                                               **{**DEFAULTS, **settings})


@pytest.mark.parametrize("sizes", [(3,), (2, 1)])
def test_every_state_visited_gives_the_exact_value(sizes):
    """8 states, 32 chains x 12 sweeps of a flat posterior: all visited, each counted once."""
    params, X = _model_and_rows(sizes, 6, seed=0, scale=0.3)
    exact = _model.log_marginal_exact(params, X)
    lp, se = _run(params, X, 1, n_chains=32, n_warm=4, beta_start=0.0, n_sweeps=8)
    np.testing.assert_allclose(lp, exact, rtol=0, atol=1e-10)
    np.testing.assert_array_equal(se, 0.0)


@pytest.mark.parametrize("sizes", [(10,), (6, 5)])
def test_unbiased_for_p_against_enumeration(sizes):
    """Two one-sweep chains leave most states to the draws: mean of ``p_hat / p`` is 1."""
    params, X = _model_and_rows(sizes, 4, seed=1)
    exact = _model.log_marginal_exact(params, X)
    settings = dict(n_chains=2, n_warm=0, n_sweeps=1, n_samples=4)
    est = np.array([_run(params, X, s, **settings)[0] for s in range(300)])
    ratio = np.exp(est - exact)              # (seeds, rows)
    mean, se = ratio.mean(0), ratio.std(0) / np.sqrt(len(ratio))
    assert np.all(np.abs(mean - 1.0) < 4 * se + 1e-3), (mean, se)
    assert np.all(ratio.std(0) > 1e-3)       # the draws did carry part of the sum


def test_std_err_matches_the_seed_spread():
    """Few chains and draws (errors of 0.05-0.3 nats): reported s.e. ~ spread over 40 seeds."""
    params, X = _model_and_rows((12,), 30, seed=1, n_features=40, scale=2.0)
    exact = _model.log_marginal_exact(params, X)
    runs = [_run(params, X, s, n_chains=4, n_warm=0, n_sweeps=2, n_samples=16)
            for s in range(40)]
    est = np.array([r[0] for r in runs])
    se = np.array([r[1] for r in runs])
    spread = est.std(0, ddof=1)
    assert 0.05 < np.median(spread) < 0.5
    assert 0.7 < np.median(se.mean(0) / spread) < 1.4
    # close to exact: within the noise of the mean, plus the Jensen gap ~ se^2 / 2
    err = est - exact
    assert abs(err.mean()) < 4 * err.std() / np.sqrt(err.size) + np.mean(se ** 2)


def test_defaults_on_a_sharp_posterior_beat_warm_ais():
    """Weights like a trained SBN's (a flip moves log p(x | h) by tens of nats), noisy rows.

    A row's mass sits on a few far-apart states: the median row is exact to 1e-3 at
    the defaults, and the mean error over 40 rows and 4 seeds is smaller than that
    of the previous default, ``"warm_ais"``. (Both miss the main mode of some rows
    by 10-20 nats: see the user guide.)
    """
    rng = np.random.default_rng(2)
    params, X = _model_and_rows((14,), 40, seed=2, n_features=120, scale=3.0)
    X = np.abs(X - (rng.random(X.shape) < 0.1))
    exact = _model.log_marginal_exact(params, X)
    n_chains = _stratified.stratified_chains(params)
    err = np.array([_run(params, X, s, n_chains=n_chains)[0] for s in range(4)]) - exact
    warm = np.array([_evaluate.log_marginal_warm_ais(
        params, X, np.random.SeedSequence(s), n_runs=_evaluate.warm_ais_runs(params),
        **_evaluate.WARM_AIS)[0] for s in range(4)]) - exact
    assert np.median(np.abs(err)) < 1e-3
    assert err.mean() > warm.mean() + 0.5, (err.mean(), warm.mean())


def test_chunks_are_independent_of_the_rest_of_the_rows():
    params, X = _model_and_rows((18,), 80, seed=3)
    full = _run(params, X, 4, n_chains=8, chunk_rows=32)
    head = _run(params, X[:32], 4, n_chains=8, chunk_rows=32)
    np.testing.assert_array_equal(full[0][:32], head[0])
    np.testing.assert_array_equal(full[1][:32], head[1])
    assert not np.array_equal(_run(params, X[:32], 5, n_chains=8, chunk_rows=32)[0], head[0])


def test_chains_follow_the_width():
    sizes = {16: 32, 20: 32, 40: 16, 64: 10, 200: 4, 1000: 4}
    for k, chains in sizes.items():
        params = _model.init_params(5, (k,), np.random.default_rng(0))
        assert _stratified.stratified_chains(params) == chains


def test_estimator_default_route_and_n_jobs():
    rng = np.random.default_rng(8)
    X = (rng.random((70, 15)) < 0.3).astype(float)
    sbn = BayesianSBN(n_components=20, n_iter=4, random_state=0).fit(X)
    lp, se = sbn.score_samples(X, return_std=True)
    direct = _stratified.log_marginal_stratified(
        sbn.params_, X, sbn._call_seed(0), n_chains=_stratified.stratified_chains(sbn.params_),
        **DEFAULTS)
    np.testing.assert_array_equal(lp, direct[0])
    np.testing.assert_array_equal(se, direct[1])
    np.testing.assert_array_equal(sbn.set_params(n_jobs=2).score_samples(X), lp)
    np.testing.assert_array_equal(sbn.score_samples(X), lp)      # re-seeded each call


def test_wide_models_route_to_warm_ais():
    rng = np.random.default_rng(9)
    X = (rng.random((30, 12)) < 0.3).astype(float)
    sbn = BayesianSBN(n_components=_stratified.STRATIFIED_MAX_UNITS + 1, n_iter=2,
                      random_state=0).fit(X)
    np.testing.assert_array_equal(sbn.score_samples(X[:5]),
                                  sbn.score_samples(X[:5], method="warm_ais"))

"""Bidirectional Monte Carlo (sandwich bounds) and the error bars of the scores (issue 17).

Ground truth is exact enumeration on small models (skdgm._core.exact): the
stochastic lower bound (forward AIS) must not sit above the truth, nor the upper
bound (reverse AIS from exact draws) below it, by more than K_SE of their
standard errors. Every seed is fixed. Negative controls show the same assertion
failing on a deliberately wrong log-density and on reverse runs not started from
the target.
"""

import warnings
from functools import partial

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skdgm import BayesianSBN, DBMCAST, DeepLDA, GaussianBernoulliRBM
from skdgm._core.bdmc import (BDMCResult, average_over_points, bidirectional_monte_carlo,
                              choose_n_betas)
from skdgm.dbm import _bounds as dbm_bounds
from skdgm.dbm import _model as dbm_model
from skdgm.grbm import _bounds as grbm_bounds
from skdgm.grbm._model import GRBMParams, ais_callables, exact_log_partition
from skdgm.sbn import _bounds as sbn_bounds
from skdgm.sbn import _model as sbn_model

#: Standard errors a bound may sit on the wrong side of the truth. The
#: delta-method error is itself estimated from the runs; 3 keeps a correct
#: implementation passing at the fixed seeds while the negative controls, off by
#: tens of standard errors, fail.
K_SE = 3.0


def assert_sandwich(res, exact, k=K_SE):
    """``lower <= exact <= upper`` within ``k`` standard errors (elementwise)."""
    lower, upper = np.asarray(res.lower), np.asarray(res.upper)
    se_l, se_u = np.asarray(res.lower_std_err), np.asarray(res.upper_std_err)
    exact = np.asarray(exact)
    over = lower - exact - k * se_l
    under = exact - upper - k * se_u
    assert np.all(over <= 1e-12), (
        f"lower bound above the truth by {np.max(lower - exact):.4g} "
        f"(standard error {float(np.max(se_l)):.3g})")
    assert np.all(under <= 1e-12), (
        f"upper bound below the truth by {np.max(exact - upper):.4g} "
        f"(standard error {float(np.max(se_u)):.3g})")


def grbm_params(seed=0, n_visible=3, n_hidden=5, scale=1.0):
    rng = np.random.default_rng(seed)
    return GRBMParams(scale * rng.standard_normal((n_hidden, n_visible)),
                      0.5 * rng.standard_normal(n_hidden), rng.standard_normal(n_visible),
                      0.3 * rng.standard_normal(n_visible))


def sbn_params(seed=0, sizes=(8, 4, 3), scale=1.5):
    rng = np.random.default_rng(seed)
    p = sbn_model.init_params(sizes[0], sizes[1:], rng, scale=scale)
    p.biases[:] = [scale * rng.standard_normal(b.shape) for b in p.biases]
    return p


def dbm_params(seed=0, sizes=(6, 5, 4), scale=1.0):
    rng = np.random.default_rng(seed)
    coefs = [scale * rng.standard_normal((a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    intercepts = [0.5 * rng.standard_normal(s) for s in sizes]
    return coefs, intercepts


# ---------------------------------------------------------------- the shared engine
def test_grbm_sandwich_contains_exact_log_z():
    p = grbm_params()
    res = grbm_bounds.log_partition_bounds(p, n_betas=300, n_runs=64, random_state=0)
    assert res.exact_start and res.target == "log_partition"
    assert res.exact == pytest.approx(exact_log_partition(p))
    assert_sandwich(res, res.exact)


def replicate_gaps(run, n_rep=10):
    """Mean gap over independent replicates and its standard error from their spread.

    With few temperatures the weights are heavy-tailed and one run's
    delta-method error is unreliable; the spread of replicates is not.
    """
    gaps = np.array([run(seed).gap for seed in range(n_rep)])
    return gaps.mean(), gaps.std(ddof=1) / np.sqrt(n_rep)


def test_gap_shrinks_with_temperatures():
    p = grbm_params(seed=1, scale=1.5)
    g10, se10 = replicate_gaps(lambda s: grbm_bounds.log_partition_bounds(
        p, n_betas=10, n_runs=16, random_state=s))
    g300, se300 = replicate_gaps(lambda s: grbm_bounds.log_partition_bounds(
        p, n_betas=300, n_runs=16, random_state=s))
    assert g10 - g300 > K_SE * np.hypot(se10, se300)
    assert g300 < 0.25 * g10
    long_ = grbm_bounds.log_partition_bounds(p, n_betas=300, n_runs=64, random_state=0)
    assert_sandwich(long_, long_.exact)


def test_negative_control_wrong_log_density_fails():
    """A log-density that is not the model's (weights off by 30 %) breaks the sandwich."""
    p = grbm_params(seed=2)
    wrong = p._replace(W=1.3 * p.W)
    log_density, transition, sample_base, log_z0 = ais_callables(wrong)
    res = bidirectional_monte_carlo(
        log_density, transition, sample_base,
        partial(grbm_bounds.exact_model_draws, params=wrong), log_z0, 300, 64,
        random_state=0)
    assert_sandwich(res, exact_log_partition(wrong))       # consistent with itself
    with pytest.raises(AssertionError, match="bound"):
        assert_sandwich(res, exact_log_partition(p))       # but not the model


def test_negative_control_reverse_not_from_target_fails():
    """Reverse runs started from the base instead of the model give no upper bound."""
    p = grbm_params(seed=3, scale=1.5)
    log_density, transition, sample_base, log_z0 = ais_callables(p)
    res = bidirectional_monte_carlo(log_density, transition, sample_base, sample_base,
                                    log_z0, 10, 64, random_state=0)
    with pytest.raises(AssertionError, match="upper bound below"):
        assert_sandwich(res, exact_log_partition(p))


def test_bdmc_identical_for_any_n_jobs():
    p = grbm_params()
    a = grbm_bounds.log_partition_bounds(p, n_betas=30, n_runs=16, random_state=5, n_jobs=1)
    b = grbm_bounds.log_partition_bounds(p, n_betas=30, n_runs=16, random_state=5, n_jobs=2)
    assert a.lower == b.lower and a.upper == b.upper


def test_chain_started_upper_bound_is_flagged():
    p = grbm_params()
    res = grbm_bounds.log_partition_bounds(p, n_betas=100, n_runs=32, exact_start=False,
                                           n_chain_steps=200, random_state=0)
    assert not res.exact_start
    assert_sandwich(res, res.exact)   # a long chain on a small model is close to exact


def test_sbn_sandwich_on_simulated_data():
    p = sbn_params()
    res = sbn_bounds.log_likelihood_bounds(p, 40, n_betas=200, n_runs=16,
                                           random_state=0, average=False)
    assert res.target == "log_likelihood" and res.lower.shape == (40,)
    assert_sandwich(res, res.exact)                     # every simulated point
    mean = average_over_points(res)
    assert_sandwich(mean, mean.exact)
    assert mean.gap_std_err < np.max(res.gap_std_err)


def test_sbn_gap_shrinks_with_temperatures():
    p = sbn_params(sizes=(16, 10, 6), scale=2.5)
    short = sbn_bounds.log_likelihood_bounds(p, 100, n_betas=10, n_runs=8, random_state=0)
    long_ = sbn_bounds.log_likelihood_bounds(p, 100, n_betas=300, n_runs=8, random_state=0)
    assert_sandwich(short, short.exact)
    assert_sandwich(long_, long_.exact)
    # 100 independent points: the mean's error is small and trustworthy
    assert short.gap - long_.gap > K_SE * np.hypot(short.gap_std_err, long_.gap_std_err)


def test_dbm_sandwich_contains_exact_log_z():
    coefs, intercepts = dbm_params(sizes=(12, 10, 10), scale=2.0)
    res = dbm_bounds.log_partition_bounds(coefs, intercepts, n_betas=300, n_runs=64,
                                          random_state=0)
    assert res.exact == pytest.approx(dbm_model.exact_log_partition(coefs, intercepts))
    assert_sandwich(res, res.exact)
    g10, se10 = replicate_gaps(lambda s: dbm_bounds.log_partition_bounds(
        coefs, intercepts, n_betas=10, n_runs=32, random_state=s))
    g300, se300 = replicate_gaps(lambda s: dbm_bounds.log_partition_bounds(
        coefs, intercepts, n_betas=300, n_runs=32, random_state=s))
    assert g10 - g300 > K_SE * np.hypot(se10, se300)


def test_dbm_exact_odd_draws_match_enumeration():
    """The reverse runs' start: draws of the odd layers with the enumerated marginal."""
    # four layers: two odd ones (h1, h3), so the draws' split into layers matters
    coefs, intercepts = dbm_params(sizes=(3, 2, 2, 2))
    draws = dbm_bounds.exact_odd_draws(20000, np.random.default_rng(0), coefs=coefs,
                                       intercepts=intercepts)
    code = 2 ** np.arange(4)
    freq = np.bincount((draws @ code).astype(int), minlength=16) / len(draws)
    cfgs = dbm_model.all_states(4)
    logp = dbm_model.log_marginal_odd(np.split(cfgs, [2], axis=1), coefs, intercepts)
    p_by_idx = np.zeros(16)
    p_by_idx[(cfgs @ code).astype(int)] = np.exp(logp - np.logaddexp.reduce(logp))
    se = np.sqrt(p_by_idx * (1 - p_by_idx) / len(draws))
    assert np.all(np.abs(freq - p_by_idx) <= 4 * se + 1e-12)


# ---------------------------------------------------------------- "auto" temperatures
def test_choose_n_betas_reaches_tol():
    p = grbm_params(seed=1, scale=1.5)
    calls = []

    def run(n):
        calls.append(n)
        return grbm_bounds.log_partition_bounds(p, n_betas=n, n_runs=32, random_state=0)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = choose_n_betas(run, 0.2, start=10, max_betas=1280)
    assert res.converged and abs(res.gap) + 2 * res.gap_std_err < 0.2
    assert calls == [10 * 2 ** i for i in range(len(calls))] and len(calls) > 1
    assert res.n_betas == calls[-1]


def test_choose_n_betas_warns_at_cap():
    p = grbm_params(seed=1, scale=1.5)

    def run(n):
        return grbm_bounds.log_partition_bounds(p, n_betas=n, n_runs=16, random_state=0)

    with pytest.warns(ConvergenceWarning, match=r"gap is still [0-9.]+ nats .* cap of 20"):
        res = choose_n_betas(run, 1e-6, start=10, max_betas=20)
    assert not res.converged and res.n_betas == 20


def test_choose_n_betas_rejects_bad_tol():
    with pytest.raises(ValueError, match="tol"):
        choose_n_betas(lambda n: None, 0.0)


# ---------------------------------------------------------------- the estimators
def binary_data(n=150, d=10, seed=0):
    rng = np.random.default_rng(seed)
    proto = rng.random((3, d)) < 0.5
    X = proto[rng.integers(0, 3, n)]
    flip = rng.random((n, d)) < 0.1
    return (X ^ flip).astype(float)


def test_sbn_estimator_bounds_contain_exact():
    est = BayesianSBN(n_components=(6, 4), n_iter=5, random_state=0).fit(binary_data())
    res = est.log_likelihood_bounds(n_samples=60, n_betas=100)
    assert res.target == "log_likelihood" and res.n_samples == 60 and res.exact_start
    assert_sandwich(res, res.exact)
    again = est.log_likelihood_bounds(n_samples=60, n_betas=100)
    assert again.lower == res.lower                 # an int random_state is a seed


def test_grbm_estimator_bounds_contain_exact():
    X = np.random.default_rng(0).standard_normal((120, 4))
    est = GaussianBernoulliRBM(n_components=6, n_iter=3, random_state=0).fit(X)
    res = est.log_likelihood_bounds(n_samples=50, n_betas=300)
    assert res.target == "log_partition" and res.exact_start
    assert res.exact == pytest.approx(est.log_partition()[0])
    assert_sandwich(res, res.exact)


def test_dbm_estimator_bounds_contain_exact():
    est = DBMCAST(n_components=(8, 6), n_iter=3, random_state=0).fit(binary_data())
    res = est.log_likelihood_bounds(n_samples=50, n_betas=300)
    assert res.exact == pytest.approx(est.log_partition_)
    assert_sandwich(res, res.exact)


def test_score_samples_std_exact_is_zero():
    Xb = binary_data()
    Xc = np.random.default_rng(0).standard_normal((80, 4))
    for est, X in [(BayesianSBN(n_components=(5,), n_iter=3, random_state=0), Xb),
                   (GaussianBernoulliRBM(n_components=5, n_iter=2, random_state=0), Xc),
                   (DBMCAST(n_components=(6, 4), n_iter=2, random_state=0), Xb)]:
        est.fit(X)
        s, se = est.score_samples(X[:7], return_std=True)
        np.testing.assert_array_equal(s, est.score_samples(X[:7]))
        np.testing.assert_array_equal(se, np.zeros(7))
        assert est.score(X, return_std=True) == (est.score(X), 0.0)


def test_sbn_ais_std_err_matches_run_to_run_spread():
    """The reported per-row error is the spread of the AIS estimate over seeds.

    20 seeds; the z-scores ``(estimate - exact) / std_err`` of 8 rows must have a
    spread near 1 (0.6-1.6 allows for the delta-method error's own noise).
    """
    X = binary_data(seed=1)
    est = BayesianSBN(n_components=(8, 4), n_iter=5, random_state=0).fit(X)
    exact = est.score_samples(X[:8])
    z = []
    for seed in range(20):
        est.set_params(random_state=seed, n_ais_betas=20, n_ais_runs=5)
        lp, se = est.score_samples(X[:8], method="ais", return_std=True)
        assert np.all(se > 0)
        z.append((lp - exact) / se)
    sd = np.std(np.concatenate(z))
    assert 0.6 < sd < 1.6, sd


def test_sbn_score_std_combines_independent_rows():
    """Above 16 hidden units ``score`` is AIS: its error is sqrt(sum se_i^2) / n."""
    X = binary_data(40, 10, seed=4)
    est = BayesianSBN(n_components=(10, 8), n_iter=2, n_ais_betas=20, n_ais_runs=4,
                      random_state=0).fit(X)
    lp, se = est.score_samples(X, return_std=True)
    assert np.all(se > 0)
    mean, err = est.score(X, return_std=True)
    assert mean == pytest.approx(lp.mean())
    assert err == pytest.approx(np.sqrt(np.sum(se ** 2)) / len(se))
    assert err < se.mean()


def test_grbm_ais_std_err_is_log_z_error():
    X = np.random.default_rng(0).standard_normal((60, 3))
    est = GaussianBernoulliRBM(n_components=20, n_iter=2, n_ais_betas=50, n_ais_runs=20,
                               random_state=0).fit(X)
    log_z, se = est.log_partition()
    s, s_se = est.score_samples(X[:5], return_std=True)
    np.testing.assert_array_equal(s_se, np.full(5, se))
    assert se > 0 and est.score(X, return_std=True)[1] == se


def test_deep_lda_score_std_is_jackknife():
    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, (60, 30)).astype(float)
    est = DeepLDA(n_components=(5, 3), n_iter=3, random_state=0).fit(X)
    s, se = est.score_samples(X[:10], return_std=True)
    np.testing.assert_array_equal(s, est.score_samples(X[:10]))
    assert se.shape == (10,) and np.all(se >= 0) and np.any(se > 0)
    mean, err = est.score(X, return_std=True)
    assert mean == est.score(X) and 0 < err < 1
    one = DeepLDA(n_components=(5, 3), n_iter=3, n_posterior_samples=1,
                  random_state=0).fit(X)
    assert np.isnan(one.score(X, return_std=True)[1])
    with pytest.raises(NotImplementedError, match="tempered posterior"):
        est.log_likelihood_bounds()


def test_jackknife_of_independent_blocks_matches_replicates():
    """On synthetic blocks with known noise the jackknife recovers the true error."""
    from skdgm.deep_lda._bounds import jackknife_heldout
    rng = np.random.default_rng(0)
    S, n_docs = 10, 1
    rows = np.zeros(4, dtype=int)
    weights = np.ones(4)

    def draw():
        num = rng.gamma(50.0, 1 / 50.0, (S, 4)) * np.array([0.1, 0.2, 0.3, 0.4])
        den = np.ones((S, n_docs))
        return num, den

    est, ses = [], []
    for _ in range(400):
        num, den = draw()
        d, dse, pooled, pse = jackknife_heldout(num, den, rows, weights, n_docs)
        assert d[0] == pytest.approx(pooled)
        est.append(pooled)
        ses.append(pse)
    # the mean jackknife error is the replicates' spread within 15 %
    assert np.mean(ses) == pytest.approx(np.std(est), rel=0.15)


@pytest.mark.parametrize("name", ["BayesianSBN", "GaussianBernoulliRBM", "DBMCAST"])
def test_bounds_bad_arguments(name):
    cls = {"BayesianSBN": BayesianSBN, "GaussianBernoulliRBM": GaussianBernoulliRBM,
           "DBMCAST": DBMCAST}[name]
    X = (np.random.default_rng(0).standard_normal((40, 4)) if name == "GaussianBernoulliRBM"
         else binary_data(40, 6))
    est = cls(n_components=3, n_iter=1, random_state=0).fit(X)
    before = dict(est.__dict__)
    for kwargs, match in [({"n_samples": 0}, "n_samples"), ({"n_betas": 1}, "n_betas"),
                          ({"n_betas": "many"}, "n_betas"), ({"tol": -1.0}, "tol"),
                          ({"n_samples": 2.5}, "n_samples")]:
        with pytest.raises(ValueError, match=match):
            est.log_likelihood_bounds(**kwargs)
    assert est.__dict__.keys() == before.keys()


def test_auto_betas_sbn_uses_chosen_count():
    X = binary_data(seed=2)
    est = BayesianSBN(n_components=(10, 8), n_iter=3, n_ais_betas="auto", ais_tol=0.3,
                      random_state=0).fit(X)
    s, se = est.score_samples(X[:5], method="ais", return_std=True)
    chosen = est._auto_betas_cache[2]
    res = est.log_likelihood_bounds(n_samples=100, n_betas="auto")
    assert res.n_betas == chosen and abs(res.gap) + 2 * res.gap_std_err < 0.3
    fixed = BayesianSBN(n_components=(10, 8), n_iter=3, n_ais_betas=chosen,
                        random_state=0).fit(X)
    np.testing.assert_array_equal(fixed.score_samples(X[:5], method="ais"), s)


def test_auto_betas_warns_when_cap_is_hit():
    X = np.random.default_rng(0).standard_normal((60, 3))
    est = GaussianBernoulliRBM(n_components=20, n_iter=2, n_ais_betas="auto",
                               ais_tol=1e-9, n_ais_runs=4, random_state=0).fit(X)
    import skdgm._core.bdmc as bdmc
    old = bdmc.AUTO_MAX_BETAS
    try:
        bdmc.AUTO_MAX_BETAS = 200     # keep the test cheap: 100, then the cap
        with pytest.warns(ConvergenceWarning, match="cap of 200 inverse temperatures"):
            log_z, se = est.log_partition()
    finally:
        bdmc.AUTO_MAX_BETAS = old
    assert np.isfinite(log_z) and se > 0


def test_choose_n_betas_does_not_accept_contradictory_bounds():
    """A gap far below zero (upper under lower) is a contradiction, not convergence."""
    def run(n):
        return BDMCResult(lower=146.8, upper=143.2, gap=-3.6, lower_std_err=0.5,
                          upper_std_err=0.2, gap_std_err=0.6, n_betas=n)

    with pytest.warns(ConvergenceWarning, match=r"gap is still -3.6 nats"):
        res = choose_n_betas(run, 0.5, start=100, max_betas=400)
    assert not res.converged and res.n_betas == 400


def test_auto_betas_dbm_log_z_is_the_chosen_forward_run():
    """Above 16 odd units, "auto" makes log Z the forward half of the last BDMC round."""
    X = binary_data(seed=3)
    est = DBMCAST(n_components=(20, 4), n_iter=2, n_ais_betas="auto", n_ais_runs=16,
                  random_state=0).fit(X)
    log_z = est.log_partition(random_state=7)
    res = est.log_likelihood_bounds(n_betas="auto", random_state=7)
    assert not res.exact_start and res.converged and res.n_betas >= 100
    assert log_z == res.lower == est.log_partition_
    assert est.log_partition_std_ == res.lower_std_err > 0
    s, se = est.score_samples(X[:4], return_std=True)
    np.testing.assert_array_equal(se, np.full(4, res.lower_std_err))

import numpy as np
import pytest

from skdgm._core.ais import (annealed_importance_sampling, beta_schedule, log_mean_exp,
                             ais_log_weights)
from _rbm_reference import RBMPath, exact_log_z, random_rbm


def _ais(path, n_betas, n_runs, seed, **kw):
    return annealed_importance_sampling(
        path.log_density, path.transition, path.sample_base, path.log_z0,
        beta_schedule(n_betas), n_runs, random_state=seed, **kw)


@pytest.mark.parametrize("shape", [(12, 8), (20, 10)])
def test_ais_matches_exact_log_z_1000_betas(shape):
    # The bar: |error| < 0.15 nats at 1,000 betas x 100 runs. The estimate's
    # own standard error is also checked to be honest (error within 4 SE + small bias).
    W, a, b = random_rbm(*shape, scale=1.0, seed=0)
    truth = exact_log_z(W, a, b)
    res = _ais(RBMPath(W, a, b), 1000, 100, seed=1)
    assert abs(res.log_z - truth) < 0.15
    assert abs(res.log_z - truth) < 4 * res.std_err + 0.02
    assert res.log_weights.shape == (100,)


def test_ais_10000_betas_within_005():
    W, a, b = random_rbm(20, 10, scale=1.0, seed=3)
    truth = exact_log_z(W, a, b)
    res = _ais(RBMPath(W, a, b), 10000, 100, seed=4)
    assert abs(res.log_z - truth) < 0.05


def test_ais_can_fail_with_too_few_betas():
    # A strongly coupled RBM with 3 betas is far off: the test above could fail.
    W, a, b = random_rbm(20, 10, scale=3.0, seed=5)
    truth = exact_log_z(W, a, b)
    res = _ais(RBMPath(W, a, b), 3, 20, seed=6)
    assert abs(res.log_z - truth) > 0.5


def test_weights_are_accumulated_before_each_transition():
    # With a transition that does nothing, AIS reduces to importance sampling from f_0
    # with weights f_1/f_0, whatever the schedule: check that identity exactly.
    W, a, b = random_rbm(6, 3, scale=1.0, seed=7)
    path = RBMPath(W, a, b)
    rng1, rng2 = np.random.default_rng(0), np.random.default_rng(0)
    lw = ais_log_weights(50, rng1, log_density=path.log_density,
                         transition=lambda s, beta, rng: s, sample_base=path.sample_base,
                         betas=beta_schedule(17))
    v = path.sample_base(50, rng2)
    np.testing.assert_allclose(lw, path.log_density(v, 1.0) - path.log_density(v, 0.0))


def test_per_point_trailing_axes():
    # One annealing path per "point": the state has an extra axis and the estimate is
    # one log Z per point; here every point is the same RBM, so all must agree with truth.
    W, a, b = random_rbm(8, 4, scale=1.0, seed=8)
    path = RBMPath(W, a, b)

    def base(n, rng):
        return np.stack([path.sample_base(3, rng) for _ in range(n)])

    res = annealed_importance_sampling(path.log_density, path.transition, base,
                                       np.full(3, path.log_z0), 200, 50, random_state=0)
    assert res.log_z.shape == (3,)
    np.testing.assert_allclose(res.log_z, exact_log_z(W, a, b), atol=0.1)


def test_std_err_matches_spread_of_repeated_estimates():
    # The delta-method SE should describe the spread of independent estimates.
    W, a, b = random_rbm(12, 8, scale=1.5, seed=9)
    path = RBMPath(W, a, b)
    ests, ses = [], []
    for s in range(30):
        r = _ais(path, 100, 20, seed=100 + s)
        ests.append(r.log_z)
        ses.append(r.std_err)
    ratio = np.std(ests, ddof=1) / np.mean(ses)
    assert 0.5 < ratio < 2.0


def test_log_mean_exp_stable():
    assert log_mean_exp(np.array([1000.0, 1000.0])) == pytest.approx(1000.0)
    assert log_mean_exp(np.log([1.0, 3.0])) == pytest.approx(np.log(2.0))


def test_bad_schedules():
    with pytest.raises(ValueError):
        beta_schedule(1)
    with pytest.raises(ValueError):
        beta_schedule(10, kind="nope")
    W, a, b = random_rbm(4, 2, scale=1.0, seed=0)
    p = RBMPath(W, a, b)
    with pytest.raises(ValueError):
        annealed_importance_sampling(p.log_density, p.transition, p.sample_base, p.log_z0,
                                     [0.0, 0.7, 0.5, 1.0], 10)
    s = beta_schedule(50, "sigmoid")
    assert s[0] == 0.0 and s[-1] == 1.0 and np.all(np.diff(s) > 0)

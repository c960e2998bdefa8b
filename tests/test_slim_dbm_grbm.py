"""The module-level functions the DBM and GRBM estimators delegate to (issue 16).

Each is called directly, without an estimator, and compared with the step-by-step
computation it replaced or with the estimator that calls it.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from skdgm import DBMCAST, GaussianBernoulliRBM
from skdgm.dbm import _tempering
from skdgm.dbm._defaults import check_sizes
from skdgm.dbm._impute import gibbs_impute, impute_over_states
from skdgm.dbm._train import (init_params, initial_chain_layers, pretrain_stack,
                              pretrain_verbose, rate_schedule, sa_pass, sa_update)
from skdgm.exceptions import DivergenceError
from skdgm.grbm._defaults import check_burn_in
from skdgm.grbm._train import checked_cd_update


def _binary(n=40, d=6, seed=0):
    return (np.random.default_rng(seed).random((n, d)) < 0.3).astype(float)


def _chains(X, coefs, intercepts, rng):
    layers = initial_chain_layers(X, 5, coefs, intercepts, rng)
    return _tempering.make_chains("sap", layers, coefs, intercepts,
                                  betas=_tempering.temperature_ladder(3, 0.5),
                                  gain=rate_schedule(1.0, 1000.0), swap_interval=5,
                                  swap="at_beta_one", fpcd_learning_rate=0.0, fpcd_decay=0.9)


def test_sa_pass_is_the_loop_of_sa_updates():
    X = _binary()
    results = []
    for by_pass in (True, False):
        rng = np.random.default_rng(3)
        coefs, intercepts, _ = init_params(X, [4, 3], rng)
        chains = _chains(X, coefs, intercepts, rng)
        lr = rate_schedule(0.05, 2000.0)
        if by_pass:
            res = sa_pass(X, coefs, intercepts, chains, rng, lr_schedule=lr, n_updates=0,
                          batch_size=10, n_mean_field=5, mean_field_tol=1e-4,
                          starts=("doubled", "zeros"), energy_trace=[])
            assert res.n_updates == 4
            assert set(res.metrics) >= {"reconstruction_error", "energy_split_rhat"}
            results.append(res.coefs + res.intercepts)
        else:
            from skdgm._core.base import dense_rows, iter_minibatches
            for t, sl in enumerate(iter_minibatches(X.shape[0], 10, rng)):
                u = sa_update(coefs, intercepts, dense_rows(X, sl), chains, rng,
                              learning_rate=float(lr(t)), n_mean_field=5,
                              mean_field_tol=1e-4, starts=("doubled", "zeros"),
                              monitor=t % 10 == 0)
                coefs, intercepts = u.coefs, u.intercepts
                chains.after_update(u.grads, float(lr(t)))
            results.append(coefs + intercepts)
    for a, b in zip(*results):
        assert_array_equal(a, b)


def test_sa_pass_names_the_diverging_update():
    X = _binary()
    rng = np.random.default_rng(0)
    coefs, intercepts, _ = init_params(X, [4, 3], rng)
    chains = _chains(X, coefs, intercepts, rng)
    with pytest.raises(DivergenceError, match="DBMCAST update 0"):
        sa_pass(X, coefs, intercepts, chains, rng, lr_schedule=lambda t: 1e300,
                n_updates=0, batch_size=10, n_mean_field=2, mean_field_tol=0.0,
                starts=("doubled",), divergence_bound=1e6)


def test_pretrain_verbose_prints_without_changing_the_stack(capsys):
    X = _binary()
    kw = dict(n_epochs=2, learning_rate=0.05, batch_size=10)
    quiet = pretrain_stack(X, [4, 3], rng=np.random.default_rng(1), **kw)
    loud = pretrain_verbose(X, [4, 3], rng=np.random.default_rng(1), name="DBMCAST", **kw)
    for a, b in zip(quiet[0] + quiet[1], loud[0] + loud[1]):
        assert_array_equal(a, b)
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[0].startswith("[DBMCAST] Pre-training RBM 1/2")


def test_dbm_impute_over_one_state_is_gibbs_impute():
    X = _binary()
    est = DBMCAST(n_components=(3, 2), n_iter=2, batch_size=20, random_state=0).fit(X)
    Xm = X[:4].copy()
    Xm[0, 0] = Xm[2, 1:3] = np.nan
    missing = np.isnan(Xm)
    filled = impute_over_states([(est.coefs_, est.intercepts_)], Xm, missing,
                                np.random.default_rng(5), n_sweeps=6)
    _, direct = gibbs_impute(est.coefs_, est.intercepts_, Xm, missing,
                             np.random.default_rng(5), n_sweeps=6, n_burn=3)
    assert_array_equal(filled[missing], direct[missing])
    assert_array_equal(filled[~missing], Xm[~missing])


def test_dbm_log_partition_with_a_generator_draws_once():
    # The BDMC seed is derived only on the "auto" path: an AIS estimate seeded by a
    # Generator advances it exactly as log_partition_estimate alone does.
    X = _binary()
    est = DBMCAST(n_components=(3, 2), n_iter=1, batch_size=20, random_state=0).fit(X)
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    a = est.log_partition(exact=False, n_betas=20, n_runs=4, random_state=g1)
    from skdgm.dbm import _model
    b, _ = _model.log_partition_estimate(est.coefs_, est.intercepts_, est._ais_base(),
                                         exact=False, n_betas=20, n_runs=4, random_state=g2)
    assert a == b
    assert g1.random() == g2.random()


def test_check_sizes_and_burn_in_name_the_problem():
    assert check_sizes("auto") is None
    assert check_sizes((4, 2.0)) == [4, 2]
    with pytest.raises(ValueError, match="non-empty sequence of positive integers"):
        check_sizes((3, 0))
    with pytest.raises(ValueError, match="smaller than cd_steps"):
        check_burn_in(5, 5, "noise")
    with pytest.raises(ValueError, match="must be 0 with negative_phase='annealed'"):
        check_burn_in(1, 5, "annealed")


def test_checked_cd_update_puts_adam_back_when_the_check_fails():
    X = np.random.default_rng(0).normal(size=(30, 3))
    est = GaussianBernoulliRBM(n_components=2, cd_steps=2, n_iter=1, batch_size=10,
                               random_state=0).fit(X)
    adam = est._adam
    m, t = [a.copy() for a in adam.m], adam.t

    def boom(arrays, where, bound=None):
        raise DivergenceError(where)

    with pytest.raises(DivergenceError, match="update 9"):
        checked_cd_update(est._params(), X[:10], np.random.default_rng(0),
                          est._settings(2), learning_rate=0.01, adam=adam,
                          where="update 9", bound=1e6, check=boom)
    assert adam.t == t
    for a, b in zip(adam.m, m):
        assert_array_equal(a, b)

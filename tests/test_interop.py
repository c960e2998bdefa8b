"""``to_inference_data`` (ArviZ) for every estimator, and our diagnostics against arviz-stats.

Skips cleanly without ``arviz-base`` / ``arviz-stats`` (the optional ``skdgm[arviz]``
extra), except the test that the missing extra is named.
"""

import sys

import numpy as np
import pytest

import skdgm
from skdgm._core import diagnostics
from test_ecosystem import data     # 0/1, counts or real values, as each model takes

CHEAP = {
    "GaussianBernoulliRBM": dict(n_components=4, cd_steps=3, n_iter=4, batch_size=16),
    "BayesianSBN": dict(n_components=(3,), n_iter=10, burn_in=2),
    "DeepLDA": dict(n_components=(3, 2), n_iter=3, batch_size=30, local_burn_in=2,
                    local_samples=2),
    "DBMCAST": dict(n_components=(6, 4), n_iter=4, n_chains=10, batch_size=30,
                    pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3),
}
ALL = sorted(CHEAP)
EXACT_LOGLIK = ["BayesianSBN", "DBMCAST", "GaussianBernoulliRBM"]


def make(name, seed=0, **params):
    return getattr(skdgm, name)(**{**CHEAP[name], "n_posterior_samples": 4,
                                   "random_state": seed, **params})


def _arviz():
    return pytest.importorskip("arviz_base")


def _arviz_stats():
    azs = pytest.importorskip("arviz_stats")
    if not hasattr(azs, "rhat"):        # its public functions need xarray-einstats
        pytest.skip("arviz_stats without its xarray extra")
    return azs


@pytest.fixture(scope="module")
def fitted():
    return {name: [make(name, seed=s).fit(data(name)) for s in range(2)] for name in ALL}


# --- the missing extra is named --------------------------------------------------------


def test_without_arviz_the_error_names_the_extra(monkeypatch):
    est = make("DeepLDA").fit(data("DeepLDA"))
    monkeypatch.setitem(sys.modules, "arviz_base", None)      # import fails
    with pytest.raises(ImportError, match=r'pip install "skdgm\[arviz\]"'):
        est.to_inference_data()


# --- the groups hold the estimator's own arrays -----------------------------------------


def _expected_posterior(est):
    """The kept states, named as the user guide's ArviZ page lists them."""
    name = type(est).__name__
    out = {}
    for s, state in enumerate(est.posterior_samples_):
        if name == "DeepLDA":
            topics, r = state
            arrays = {f"topics_{l}": t for l, t in enumerate(topics)} | {"r": r}
        elif name == "GaussianBernoulliRBM":
            arrays = {"components": state.W, "intercept_hidden": state.b, "mean": state.mu,
                      "log_variance": state.log_var}
        else:
            weights, biases = state[0], state[1]
            arrays = ({f"weights_{l}": w for l, w in enumerate(weights)}
                      | {f"biases_{l}": b for l, b in enumerate(biases)})
        for k, v in arrays.items():
            out.setdefault(k, []).append(np.asarray(v, dtype=np.float64))
    return out


@pytest.mark.parametrize("name", ALL)
def test_inference_data_holds_the_kept_states_history_and_data(fitted, name):
    _arviz()
    est, other = fitted[name]
    X = data(name)
    idata = est.to_inference_data(X, chains=[other])
    assert {"posterior", "sample_stats", "observed_data"} <= set(idata.children)
    post = idata.posterior
    assert post.sizes["chain"] == 2 and post.sizes["draw"] == 4
    for i, e in enumerate((est, other)):
        expected = _expected_posterior(e)
        assert set(expected) == set(post.data_vars)
        for k, draws in expected.items():
            var = post[k]
            assert var.dims[:2] == ("chain", "draw")
            np.testing.assert_array_equal(var.values[i], np.stack(draws))
    # the sample stats are history_, one draw per training pass
    stats = idata.sample_stats
    assert stats.sizes["chain"] == 2
    some = [k for k in stats.data_vars if k in est.history_]
    assert some
    for k in some:
        n = stats.sizes["draw"]
        np.testing.assert_array_equal(stats[k].values[0], np.asarray(est.history_[k][-n:], float))
        np.testing.assert_array_equal(stats[k].values[1],
                                      np.asarray(other.history_[k][-n:], float))
    np.testing.assert_array_equal(idata.observed_data["X"].values, X)
    assert idata.observed_data["X"].dims == ("row", "feature")


def test_layer_dims_are_named(fitted):
    _arviz()
    idata = fitted["DeepLDA"][0].to_inference_data()
    assert idata.posterior["topics_0"].dims == ("chain", "draw", "word", "topic_1")
    assert idata.posterior["topics_1"].dims == ("chain", "draw", "topic_1", "topic_2")
    assert idata.posterior["r"].dims == ("chain", "draw", "topic_2")
    idata = fitted["DBMCAST"][0].to_inference_data()
    assert idata.posterior["weights_1"].dims == ("chain", "draw", "hidden_1", "hidden_2")
    assert idata.posterior["biases_0"].dims == ("chain", "draw", "visible")
    assert "observed_data" not in idata.children


@pytest.mark.parametrize("name", EXACT_LOGLIK)
def test_log_likelihood_is_exact_per_state(fitted, name):
    _arviz()
    est = fitted[name][0]
    X = data(name, n=20, seed=3)
    ll = est.to_inference_data(X, log_likelihood=True).log_likelihood["X"]
    assert ll.dims == ("chain", "draw", "row") and ll.shape == (1, 4, 20)
    # with one kept state: score_samples (exact for the SBN and the GRBM at these
    # sizes, a variational lower bound for the DBM)
    single = make(name, n_posterior_samples=1).fit(data(name))
    one = single.to_inference_data(X, log_likelihood=True).log_likelihood["X"].values[0, 0]
    score = single.score_samples(X)
    if name == "DBMCAST":
        assert np.all(one >= score - 1e-9)
    else:
        # the same exact log p, each path rounding in the model's dtype (the GRBM
        # trains in float32 by default): a few float32 ulps apart, not more
        params = getattr(single, "components_", None)
        eps = np.finfo(params.dtype if params is not None else np.float64).eps
        np.testing.assert_allclose(one, score, rtol=max(1e-12, 10 * eps), atol=1e-10)


def test_log_likelihood_errors_name_the_reason(fitted):
    _arviz()
    with pytest.raises(ValueError, match="theta would have to be integrated"):
        fitted["DeepLDA"][0].to_inference_data(data("DeepLDA"), log_likelihood=True)
    with pytest.raises(ValueError, match="needs the rows X"):
        fitted["BayesianSBN"][0].to_inference_data(log_likelihood=True)
    big = make("GaussianBernoulliRBM", n_components=20, n_posterior_samples=1).fit(
        data("GaussianBernoulliRBM"))
    with pytest.raises(ValueError, match="n_components"):
        big.to_inference_data(data("GaussianBernoulliRBM"), log_likelihood=True)


def test_chains_must_match(fitted):
    _arviz()
    est = fitted["DeepLDA"][0]
    with pytest.raises(ValueError, match="fitted DeepLDA"):
        est.to_inference_data(chains=[fitted["DBMCAST"][0]])
    with pytest.raises(ValueError, match="as many states"):
        est.to_inference_data(chains=[make("DeepLDA", n_posterior_samples=2).fit(
            data("DeepLDA"))])
    with pytest.raises(ValueError, match="differ in shape"):
        est.to_inference_data(chains=[make("DeepLDA", n_components=(4, 2)).fit(
            data("DeepLDA"))])
    with pytest.raises(ValueError, match="features"):
        est.to_inference_data(data("DeepLDA")[:, :3])


def test_not_fitted_raises():
    from sklearn.exceptions import NotFittedError

    _arviz()
    with pytest.raises(NotFittedError):
        skdgm.DeepLDA().to_inference_data()


# --- arviz-stats runs on the result, and agrees with skdgm._core.diagnostics -------------


def test_arviz_stats_rhat_and_ess_run_and_equal_ours(fitted):
    azs = _arviz_stats()
    est, other = fitted["DeepLDA"]
    idata = est.to_inference_data(chains=[other])
    r_hat, ess = azs.rhat(idata), azs.ess(idata)
    draws = idata.posterior["r"].values              # (chain, draw, topic)
    for k in range(draws.shape[2]):
        assert r_hat["r"].values[k] == pytest.approx(diagnostics.rhat(draws[:, :, k]),
                                                     rel=1e-10)
        assert ess["r"].values[k] == pytest.approx(diagnostics.ess_bulk(draws[:, :, k]),
                                                   rel=1e-10)
    assert np.all(np.isfinite(ess["topics_0"].values))


def _ar1(m, n, rho, rng):
    x = np.empty((m, n))
    x[:, 0] = rng.standard_normal(m)
    for t in range(1, n):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.standard_normal(m)
    return x


def test_our_diagnostics_equal_arviz_stats_on_random_traces():
    """Same definitions, same numbers: 1e-10 relative over 200 random traces.

    Odd and even lengths, one to four chains, autocorrelations from -0.5 to 0.99,
    rounded traces (ties; tail indicators constant within a half-chain).
    """
    azs = _arviz_stats()
    rng = np.random.default_rng(0)
    for _ in range(200):
        m, n = int(rng.integers(1, 5)), int(rng.integers(4, 300))
        x = _ar1(m, n, rng.uniform(-0.5, 0.99), rng)
        if rng.random() < 0.3:
            x = np.round(x)
        ours = [diagnostics.ess_bulk(x), diagnostics.ess_tail(x),
                diagnostics.effective_sample_size(x)]
        theirs = [azs.ess(x), azs.ess(x, method="tail", prob=(0.05, 0.95)),
                  azs.ess(x, method="mean")]
        if m > 1:
            ours += [diagnostics.rhat(x), diagnostics.split_rhat(x)]
            theirs += [azs.rhat(x), azs.rhat(x, method="split")]
        np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_ess_tail_never_exceeds_the_draws_when_an_indicator_is_constant():
    # before issue 27: a half-chain whose 5 % indicator never changed gave 0/0
    # autocorrelations and a tail ESS of 1,667 from these 600 draws
    walk = np.cumsum(np.random.default_rng(1).standard_normal((3, 200)), axis=1)
    x = 0.1 * walk + np.random.default_rng(2).standard_normal((3, 200))
    halves = np.concatenate([x[:, :100], x[:, 100:]])
    low = halves <= np.quantile(x, 0.05)
    assert np.any(low.all(axis=1) | ~low.any(axis=1))    # the degenerate case is here
    assert 0 < diagnostics.ess_tail(x) <= x.size

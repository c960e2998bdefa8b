"""BayesianSBN's ``inference="auto"`` (issue 25): batch Gibbs on small data, DSGHMC-NAIS
on large, chosen by the training rows; and the verbose line's small step sizes."""

import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from skdgm import BayesianSBN
from skdgm._core.base import _fmt
from skdgm.sbn import _defaults
from skdgm.sbn._defaults import AUTO_INFERENCE_ROWS, resolve_inference


def _digits(n):
    X = load_digits().data[:n]
    return (X > 7).astype(np.float64)


def _same_fit(a, b):
    assert a.n_components_ == b.n_components_ and a.burn_in_ == b.burn_in_
    assert a.n_iter_ == b.n_iter_ and len(a.posterior_samples_) == len(b.posterior_samples_)
    for x, y in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_):
        assert np.array_equal(x, y)
    for key, values in b.history_.items():
        if key not in ("time", "time_left"):
            assert np.array_equal(a.history_[key], values), key


def test_resolution_rule():
    assert AUTO_INFERENCE_ROWS == 12_500
    # batch Gibbs at the measured 10,000 rows (better and cheaper there), DSGHMC-NAIS
    # from the measured 12,500 (better and cheaper at 12,500, 15,000, 25,000, 50,000)
    rows = (1, 1_797, 10_000, AUTO_INFERENCE_ROWS - 1, AUTO_INFERENCE_ROWS, 100_000, 10**7)
    assert [resolve_inference("auto", n) for n in rows] == [
        "gibbs", "gibbs", "gibbs", "gibbs", "dsghmc_nais", "dsghmc_nais", "dsghmc_nais"]
    # a row count not known yet (a dask array of unknown chunks) is a large one
    assert resolve_inference("auto", None) == "dsghmc_nais"
    for inference in ("gibbs", "vb", "online_vb", "dsghmc_gibbs", "dsghmc_nais"):
        assert all(resolve_inference(inference, n) == inference for n in rows)
    assert BayesianSBN().get_params()["inference"] == "auto"


def test_below_the_threshold_auto_is_batch_gibbs_bit_for_bit(capsys):
    X = _digits(120)
    auto = BayesianSBN(n_iter=12, random_state=0, verbose=1).fit(X)
    out = capsys.readouterr().out.splitlines()
    gibbs = BayesianSBN(inference="gibbs", n_iter=12, random_state=0).fit(X)
    assert auto.inference_ == gibbs.inference_ == "gibbs"
    assert auto.get_params()["inference"] == "auto"          # the parameter is untouched
    _same_fit(auto, gibbs)
    np.testing.assert_array_equal(auto.score_samples(X[:20]), gibbs.score_samples(X[:20]))
    assert out[0] == ("[BayesianSBN] inference='auto': 'gibbs' for 120 rows "
                      "(batch Gibbs below 12,500)")
    assert sum("inference=" in ln for ln in out) == 1
    # an explicit choice says nothing about it
    BayesianSBN(inference="gibbs", n_iter=2, random_state=0, verbose=1).fit(X)
    assert not any("inference=" in ln for ln in capsys.readouterr().out.splitlines())


def test_from_the_threshold_auto_is_dsghmc_nais_bit_for_bit(monkeypatch):
    # the threshold moved down so that a cheap fit crosses it; the width, the prior
    # (Student-t) and the update-counted run length follow the chosen inference
    monkeypatch.setattr(_defaults, "AUTO_INFERENCE_ROWS", 100)
    X = _digits(120)
    kw = dict(n_components=4, n_iter=2, batch_size=40, n_sghmc_steps=2,
              n_hidden_samples=2, random_state=0)
    auto = BayesianSBN(**kw).fit(X)
    nais = BayesianSBN(inference="dsghmc_nais", **kw).fit(X)
    assert auto.inference_ == "dsghmc_nais" and auto.get_params()["inference"] == "auto"
    _same_fit(auto, nais)
    assert BayesianSBN(**kw).fit(X[:99]).inference_ == "gibbs"
    # a refit on other rows chooses again
    assert auto.fit(X[:99]).inference_ == "gibbs"


def test_partial_fit_needs_a_streaming_option():
    # "auto" is a choice for a fit on known rows; a stream names its inference
    assert not hasattr(BayesianSBN(), "partial_fit")
    assert hasattr(BayesianSBN(inference="dsghmc_nais"), "partial_fit")
    with pytest.raises(ValueError, match="inference"):
        BayesianSBN(inference="automatic").fit(_digits(20))


def test_auto_warns_only_about_parameters_neither_choice_reads():
    import warnings

    X = _digits(60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # learning_rate is DSGHMC's, burn_in Gibbs's: "auto" may run either
        BayesianSBN(n_iter=2, burn_in=1, learning_rate=0.02, random_state=0).fit(X)
    with pytest.warns(UserWarning, match="n_local_iter"):
        BayesianSBN(n_iter=2, n_local_iter=2, random_state=0).fit(X)


def test_dask_rows_below_the_threshold_name_the_choice():
    da = pytest.importorskip("dask.array")
    X = da.from_array(_digits(60), chunks=30)
    with pytest.raises(ValueError, match="inference='auto', which chose 'gibbs'"):
        BayesianSBN(random_state=0).fit(X)


def test_verbose_step_size_is_readable(capsys):
    # DSGHMC's step is learning_rate / N: 0.01 / 120 printed with four decimals read
    # "0.0000"
    X = _digits(120)
    est = BayesianSBN(n_components=3, inference="dsghmc_nais", n_iter=1, batch_size=60,
                      n_sghmc_steps=1, n_hidden_samples=2, random_state=0, verbose=1).fit(X)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "step_size" in ln]
    assert lines
    shown = float(re.search(r"step_size = ([0-9.e+-]+),", lines[0]).group(1))
    assert shown > 0
    np.testing.assert_allclose(shown, est.history_["step_size"][0], rtol=1e-2)
    assert _fmt(0.01 / 50_000) == "2e-07" and _fmt(-3.14159e-4) == "-0.000314"
    assert _fmt(0.5) == "0.5000" and _fmt(0.0) == "0.0000" and _fmt(2e5) == "2.0000e+05"


@pytest.mark.parametrize("make", [lambda X: X.tolist(), lambda X: _ArrayOnly(X)])
def test_auto_reads_the_rows_of_any_array_like(make):
    # "auto" is resolved before validate_data: lists and objects that are arrays only
    # through __array__ (scikit-learn's _NotAnArray) must count their rows too
    X = (np.random.default_rng(0).random((40, 5)) < 0.5).astype(float)
    est = BayesianSBN(n_components=(2,), n_iter=2, burn_in=1, random_state=0).fit(make(X))
    assert est.inference_ == "gibbs"
    ref = BayesianSBN(n_components=(2,), n_iter=2, burn_in=1, random_state=0,
                      inference="gibbs").fit(X)
    np.testing.assert_array_equal(est.transform(X), ref.transform(X))


class _ArrayOnly:
    def __init__(self, X):
        self._X = X

    def __array__(self, dtype=None, copy=None):
        return self._X if dtype is None else self._X.astype(dtype)

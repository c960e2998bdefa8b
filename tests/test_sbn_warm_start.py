"""BayesianSBN ``warm_start``: a batch fit split into calls is the uninterrupted fit (issue 24).

Also the ``n_iter="auto"`` burn-in cap in row visits (issue 25).
"""

import pickle
import warnings

import numpy as np
import pytest

from skdgm import BayesianSBN
from skdgm.sbn._defaults import AUTO_BURN_ROW_VISITS, AUTO_CAP_FACTOR, auto_plateau_plan
from skdgm.sbn._warm import thinned

X = (np.random.default_rng(1).random((50, 8)) < 0.3).astype(float)
# wall-clock entries of history_ differ between any two runs
CLOCK = ("time", "time_left")


def _assert_same_fit(a, b):
    assert a.n_iter_ == b.n_iter_
    if a.inference == "gibbs":           # VB reads no burn-in
        assert a.burn_in_ == b.burn_in_
    for name in ("weights", "biases"):
        for x, y in zip(getattr(a.params_, name), getattr(b.params_, name)):
            np.testing.assert_array_equal(x, y)
    assert len(a.posterior_samples_) == len(b.posterior_samples_)
    for p, q in zip(a.posterior_samples_, b.posterior_samples_):
        for x, y in zip(p.weights + p.biases, q.weights + q.biases):
            np.testing.assert_array_equal(x, y)
    assert set(a.history_) == set(b.history_)
    for key in set(a.history_) - set(CLOCK):
        np.testing.assert_array_equal(np.asarray(a.history_[key]), np.asarray(b.history_[key]))


def _params(inference, **kw):
    p = dict(n_components=3, inference=inference, n_posterior_samples=3, random_state=0)
    if inference == "gibbs":
        p["burn_in"] = 4
    return {**p, **kw}


@pytest.mark.parametrize("inference", ["gibbs", "vb"])
@pytest.mark.parametrize("pieces", [(6, 11), (2, 5, 1, 9), (3, 14), (1, 16)])
def test_fit_in_pieces_equals_one_fit(inference, pieces):
    # (3, 14): the first piece ends before burn-in (4); (1, 16): one pass, then the rest
    full = BayesianSBN(n_iter=sum(pieces), **_params(inference)).fit(X)
    est = BayesianSBN(n_iter=pieces[0], warm_start=True, **_params(inference)).fit(X)
    for m in pieces[1:]:
        est.set_params(n_iter=m).fit(X)
    _assert_same_fit(full, est)


def test_a_pickled_checkpoint_continues_the_same_chain():
    full = BayesianSBN(n_iter=12, **_params("gibbs")).fit(X)
    first = BayesianSBN(n_iter=5, warm_start=True, **_params("gibbs")).fit(X)
    resumed = pickle.loads(pickle.dumps(first)).set_params(n_iter=7).fit(X)
    _assert_same_fit(full, resumed)


def test_continuation_is_not_the_fresh_fit():
    # guards the test above against a no-op: warm_start=False restarts the chain
    cont = BayesianSBN(n_iter=6, warm_start=True, **_params("gibbs")).fit(X)
    cont.set_params(n_iter=6).fit(X)
    fresh = BayesianSBN(n_iter=6, **_params("gibbs")).fit(X)
    fresh.set_params(n_iter=6).fit(X)
    assert cont.n_iter_ == 12 and fresh.n_iter_ == 6
    assert not np.array_equal(cont.params_.weights[0], fresh.params_.weights[0])


def test_auto_first_call_then_more_passes():
    # the plateau run keeps every draw after its burn-in; the continuation thins
    # the whole chain by the fixed rule of its final length
    auto = BayesianSBN(n_components=3, n_posterior_samples=4, random_state=0,
                       warm_start=True).fit(X)
    burn, total = auto.burn_in_, auto.n_iter_
    ref = BayesianSBN(n_components=3, n_posterior_samples=4, random_state=0,
                      n_iter=total, burn_in=burn).fit(X)
    _assert_same_fit(ref, auto)
    auto.set_params(n_iter=10).fit(X)
    longer = BayesianSBN(n_components=3, n_posterior_samples=4, random_state=0,
                         n_iter=total + 10, burn_in=burn).fit(X)
    _assert_same_fit(longer, auto)


def test_bad_continuations_raise_and_leave_the_estimator_as_it_was():
    est = BayesianSBN(n_iter=5, warm_start=True, **_params("gibbs")).fit(X)
    before = est.params_.weights[0].copy(), est.n_iter_
    with pytest.raises(ValueError, match="rows it was fitted on"):
        est.fit(X[:40])
    est.set_params(n_iter="auto")
    with pytest.raises(ValueError, match="integer n_iter"):
        est.fit(X)
    np.testing.assert_array_equal(est.params_.weights[0], before[0])
    assert est.n_iter_ == before[1]


def test_other_inference_or_cold_model_starts_afresh():
    est = BayesianSBN(n_iter=4, warm_start=True, **_params("gibbs")).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # burn_in is unused by VB
        est.set_params(inference="vb", n_iter=3).fit(X)
    assert est.n_iter_ == 3
    # a model fitted without warm_start has no chain to continue
    cold = BayesianSBN(n_iter=4, **_params("gibbs")).fit(X)
    cold.set_params(warm_start=True, n_iter=3).fit(X)
    assert cold.n_iter_ == 3


def test_warm_start_warns_with_a_streaming_inference():
    with pytest.warns(UserWarning, match="warm_start"):
        BayesianSBN(n_components=3, inference="online_vb", n_iter=1, warm_start=True,
                    random_state=0).fit(X)


def test_thinned_matches_the_collection_rule():
    draws = list(range(1, 23))              # the draw after pass burn_in + d is d
    assert thinned(draws, 5, 3) == [10, 15, 20]
    assert thinned(draws, 1, 2) == [21, 22]
    assert thinned([], 3, 2) == []


def test_burn_in_cap_in_row_visits():
    # up to 20,833 rows the cap of four times the fixed rule binds (nothing changed)
    for n in (4_000, 10_000, 20_833):
        assert auto_plateau_plan(n, "gibbs") == (24, AUTO_CAP_FACTOR * 24, 36)
    assert auto_plateau_plan(50_000, "gibbs") == (24, AUTO_BURN_ROW_VISITS // 50_000, 36)
    # never below the fixed rule's burn-in; VB keeps its own cap
    assert auto_plateau_plan(1_000_000, "gibbs") == (24, 24, 36)
    assert auto_plateau_plan(50_000, "vb") == (60, 240, 0)

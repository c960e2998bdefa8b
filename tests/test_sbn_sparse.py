"""BayesianSBN on the training skeleton, and CSR input read one minibatch at a time (issue 14).

``fit`` is ``_initialize`` (with the greedy pre-training stages when deep) plus
``n_iter`` passes of the same engine steps ``partial_fit`` runs; ``n_iter_`` counts
passes over the data. A CSR input gives bit-identical results to the same data dense,
and no more than ``batch_size`` rows of it are ever dense at once, in ``fit``,
``partial_fit``, ``transform`` and ``score_samples``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skdgm import BayesianSBN
from skdgm._core.base import BaseGenerativeModel

BATCH = 16
CHEAP = dict(n_components=(3,), n_iter=3, burn_in=1, n_posterior_samples=2, batch_size=BATCH,
             random_state=0)
CASES = {
    "gibbs": dict(),
    "gibbs_deep_pretrain": dict(n_components=(4, 3), pretrain=True),
    "gibbs_ar": dict(autoregressive=True),
    "online_vb": dict(inference="online_vb"),
    "dsghmc_gibbs": dict(inference="dsghmc_gibbs", n_sghmc_steps=2, prior="normal"),
}


def _data(n=70, d=9, seed=0):
    rng = np.random.default_rng(seed)
    # mostly zeros, as sparse binary data are
    return (rng.random((n, d)) < 0.25).astype(float)


def _make(case, **kw):
    params = {**CHEAP, **CASES[case], **kw}
    if params.get("inference", "gibbs") not in ("gibbs", "dsghmc_gibbs"):
        params.pop("burn_in")
    return BayesianSBN(**params)


@pytest.fixture
def dense_limit(monkeypatch):
    """Make ``csr_matrix.toarray`` raise when asked for more than ``BATCH`` rows."""
    real = sp.csr_matrix.toarray
    seen = []

    def guarded(self, *args, **kwargs):
        if self.shape[0] > BATCH:
            raise AssertionError(f"densified {self.shape[0]} rows of a CSR input "
                                 f"(batch_size={BATCH})")
        seen.append(self.shape[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", guarded)
    monkeypatch.setattr(sp.csr_matrix, "todense",
                        lambda self, *a, **k: np.asmatrix(guarded(self, *a, **k)))
    return seen


def _state(est):
    return est.coefs_ + est.intercepts_ + (est.lateral_coefs_ or [])


@pytest.mark.parametrize("case", sorted(CASES))
def test_csr_fit_is_identical_to_dense_and_never_densifies_the_whole(case, dense_limit):
    X = _data()
    dense = _make(case).fit(X)
    S = sp.csr_matrix(X)
    sparse = _make(case).fit(S)
    assert dense_limit, "the CSR path never densified a minibatch (was it used?)"
    for a, b in zip(_state(dense), _state(sparse)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(dense.transform(X), sparse.transform(S))
    np.testing.assert_array_equal(dense.score_samples(X), sparse.score_samples(S))
    for k in set(dense.history_) - {"time", "time_left"}:
        np.testing.assert_array_equal(dense.history_[k], sparse.history_[k])


@pytest.mark.parametrize("case", ["online_vb", "dsghmc_gibbs"])
def test_csr_partial_fit_is_identical_to_dense(case, dense_limit):
    X = _data()
    a, b = _make(case), _make(case)
    for s in range(0, len(X), BATCH):
        a.partial_fit(X[s:s + BATCH])
        b.partial_fit(sp.csr_matrix(X[s:s + BATCH]))
    for u, v in zip(_state(a), _state(b)):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("case", ["gibbs", "gibbs_deep_pretrain", "online_vb"])
def test_fit_is_reset_plus_passes_and_n_iter_counts_passes(case):
    X = _data()
    est = _make(case)
    # fit runs the base class's skeleton (no fit loop of its own)
    assert type(est)._initialize is not BaseGenerativeModel._initialize
    est.fit(X)
    L = len(est.coefs_)
    stages = L if (L > 1 and est.pretrain) else 0
    n_passes = est.n_iter * (stages + 1)
    assert est.n_iter_ == n_passes
    assert len(est.history_["stage"]) == n_passes == len(est.history_["time"])
    assert est.history_["stage"][-est.n_iter:] == [0] * est.n_iter
    first = [w.copy() for w in _state(est)]
    # a second fit resets: the same answer, not a continuation
    est.fit(X)
    for u, v in zip(first, _state(est)):
        np.testing.assert_array_equal(u, v)
    assert est.n_iter_ == n_passes


def test_gibbs_results_do_not_depend_on_the_input_format_but_on_batch_size():
    # the chunking (batch_size) fixes the order of the draws; the format does not
    X = _data()
    a = _make("gibbs", batch_size=10).fit(sp.csr_matrix(X))
    b = _make("gibbs", batch_size=10).fit(X)
    np.testing.assert_array_equal(a.coefs_[0], b.coefs_[0])

"""DBMCAST's fast variational bound, the default of ``score_samples`` (issue 25).

Any factorised ``Q`` gives a lower bound (Eq. 3); ``bound="fast"`` stops the
mean-field after 3 sweeps from each start. Checked on a model whose odd layers can
be enumerated: the fast bound never exceeds the exact ``log p(v)`` nor the
converged (``"tight"``) bound, and sits within a few hundredths of a nat of it;
with enough sweeps it reaches the tight bound; a row's value depends on that row
alone; a CSR input gives the dense values; a bad ``bound`` raises and changes nothing.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits

from skdgm import DBMCAST
from skdgm.dbm import _model as M
from skdgm.dbm import _scoring


@pytest.fixture(scope="module")
def trained():
    # |W| up to ~4 (tests/test_dbm.py measured a tight-bound gap of 0.27 nats mean)
    X = (load_digits().data > 7).astype(float)
    est = DBMCAST((12, 8), n_iter=10, random_state=0, learning_rate=0.05, pretrain_n_iter=30,
                  pretrain_learning_rate=0.3).fit(X)
    return est, X[::9][:200]


def test_fast_bound_is_a_bound_close_to_the_tight_one(trained):
    est, V = trained
    assert est.log_partition_std_ == 0.0                 # log Z exact: enumerated
    exact = M.exact_log_prob(V, est.coefs_, est.intercepts_, log_z=est.log_partition_)
    fast = est.score_samples(V)
    tight = est.score_samples(V, bound="tight")
    assert np.all(fast <= exact + 1e-9)
    assert np.all(fast <= tight + 1e-6)
    assert np.mean(tight - fast) < 0.05
    assert est.score(V) == pytest.approx(fast.mean())
    assert est.score(V, bound="tight") == pytest.approx(tight.mean())
    # zero sweeps (the starts themselves) are looser: the sweeps do matter
    start = _scoring.fast_bound(V, est.coefs_, est.intercepts_, n_iter=0) - est.log_partition_
    assert np.mean(fast - start) > 0.1


def test_enough_sweeps_reach_the_tight_bound(trained):
    est, V = trained
    tight = est.score_samples(V, bound="tight") + est.log_partition_
    long = _scoring.fast_bound(V, est.coefs_, est.intercepts_, n_iter=200, tol=0.0)
    np.testing.assert_allclose(long, tight, rtol=0, atol=1e-4)   # float32 sweeps


def test_rows_are_independent_and_csr_matches_dense(trained):
    est, V = trained
    full = est.score_samples(V)
    np.testing.assert_array_equal(est.score_samples(V[:7]), full[:7])
    np.testing.assert_allclose(est.score_samples(sp.csr_matrix(V)), full, rtol=0, atol=1e-9)


def test_bad_bound_raises_and_leaves_the_estimator_alone():
    X = (load_digits().data[:200] > 7).astype(float)
    est = DBMCAST((6, 4), n_iter=1, random_state=0).fit(X)
    before = dict(est.__dict__)
    with pytest.raises(ValueError, match="bound must be 'fast' or 'tight', got 'loose'"):
        est.score_samples(X, bound="loose")
    with pytest.raises(ValueError, match="bound must be"):
        est.score(X, bound=None)
    assert est.__dict__.keys() == before.keys()

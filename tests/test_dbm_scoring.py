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
    long = _scoring.fast_bound(V, est.coefs_, est.intercepts_, n_iter=200, margin=np.inf)
    np.testing.assert_allclose(long, tight, rtol=0, atol=1e-4)   # float32 sweeps


def test_rows_are_independent_and_csr_matches_dense(trained):
    est, V = trained
    full = est.score_samples(V)
    # to float32 rounding, not bit for bit: BLAS may round a 7-row float32 product
    # differently from the same rows in a 200-row one (OpenBLAS 0.3.31 does; 3e-9 here)
    np.testing.assert_allclose(est.score_samples(V[:7]), full[:7], rtol=1e-6, atol=0)
    np.testing.assert_allclose(est.score_samples(sp.csr_matrix(V)), full, rtol=1e-6, atol=0)


def test_bad_bound_raises_and_leaves_the_estimator_alone():
    X = (load_digits().data[:200] > 7).astype(float)
    est = DBMCAST((6, 4), n_iter=1, random_state=0).fit(X)
    before = dict(est.__dict__)
    with pytest.raises(ValueError, match="bound must be 'fast' or 'tight', got 'loose'"):
        est.score_samples(X, bound="loose")
    with pytest.raises(ValueError, match="bound must be"):
        est.score(X, bound=None)
    assert est.__dict__.keys() == before.keys()


def _random_dbm(sizes, seed, scale=1.5):
    rng = np.random.default_rng(seed)
    coefs = [rng.normal(0, scale, (a, b)) for a, b in zip(sizes[:-1], sizes[1:])]
    intercepts = [rng.normal(0, 1, k) for k in sizes]
    return coefs, intercepts


@pytest.mark.parametrize("start", ["doubled", "zeros"])
@pytest.mark.parametrize("n_iter", [0, 1, 3])
def test_fast_bound_is_eq3_at_its_q(start, n_iter):
    # The fast bound sums the even layers out at the odd means; that must be Eq. 3
    # (lower_bound_unnormalised) at the Q whose even layers are sigma of their
    # float64 input: checked on four hidden layers (two of each parity).
    coefs, intercepts = _random_dbm((9, 6, 5, 4, 3), seed=1)
    V = (np.random.default_rng(2).random((30, 9)) < 0.4).astype(float)
    c32 = [w.astype(np.float32) for w in coefs]
    b32 = [b.astype(np.float32) for b in intercepts]
    mus = _scoring._swept(start, (V @ coefs[0]).astype(np.float32), c32, b32, n_iter)
    q = [V, None, None, None, None]
    for l in (1, 3):
        q[l] = mus[l].astype(np.float64)
    for l in (2, 4):
        q[l] = M.sigmoid(M.layer_input(l, q, coefs, intercepts))
    want = M.lower_bound_unnormalised(q, coefs, intercepts)
    got = _scoring.fast_bound(V, coefs, intercepts, (start,), n_iter=n_iter)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)


def test_visible_bias_given_or_left_out():
    # fast_bound compares its starts without v's bias term and adds it once: the
    # term passed in gives the value computed in place, 0.0 leaves out exactly it
    coefs, intercepts = _random_dbm((9, 6, 5, 4, 3), seed=5)
    V = (np.random.default_rng(6).random((25, 9)) < 0.4).astype(float)
    odd = [M.sigmoid(np.random.default_rng(7).normal(size=(25, k))) for k in (6, 4)]
    full = M.log_marginal_odd(odd, coefs, intercepts, visible=V)
    vb = V @ intercepts[0]
    np.testing.assert_array_equal(
        M.log_marginal_odd(odd, coefs, intercepts, visible=V, visible_bias=vb), full)
    np.testing.assert_allclose(
        M.log_marginal_odd(odd, coefs, intercepts, visible=V, visible_bias=0.0) + vb, full,
        rtol=1e-13, atol=1e-12)
    assert np.ptp(vb) > 1.0           # the term differs by row: leaving it out shows


@pytest.mark.parametrize("sizes", [(9, 6, 5), (9, 6, 5, 4, 3)])
@pytest.mark.parametrize("scale", [0.3, 1.5])
def test_zeros_ceiling_bounds_the_screens_value(sizes, scale):
    # The screen's float32 value of the "zeros" start after one sweep never exceeds
    # the product-free ceiling; a tight case (weak weights) and a loose one
    coefs, intercepts = _random_dbm(sizes, seed=8, scale=scale)
    V = (np.random.default_rng(9).random((200, 9)) < 0.4).astype(float)
    c32 = [w.astype(np.float32) for w in coefs]
    b32 = [b.astype(np.float32) for b in intercepts]
    VW32 = (V @ coefs[0]).astype(np.float32)
    mus = _scoring._swept("zeros", VW32, c32, b32, 1)
    rough = _scoring._bound_at(mus, VW32, c32, b32)
    ceiling = _scoring._zeros_ceiling(mus, VW32, c32, b32,
                                      _scoring._even_grams(coefs, len(intercepts)))
    assert np.all(ceiling >= rough - 1e-4)
    assert np.median(ceiling - rough) < (1.0 if scale < 1 else 30.0)


@pytest.mark.parametrize("margin", [0.0, 1.0, 5.0])
def test_ceiling_changes_no_row(monkeypatch, margin):
    # The ceiling only spares the screen's products: the rows it drops are rows the
    # screen drops. On a model with strong weights it drops some (not all) rows;
    # an infinite slack (the ceiling never drops a row) gives the same values.
    coefs, intercepts = _random_dbm((30, 16, 24), seed=10, scale=1.5)
    V = (np.random.default_rng(11).random((300, 30)) < 0.4).astype(float)
    calls = []
    real = _scoring._zeros_ceiling
    monkeypatch.setattr(_scoring, "_zeros_ceiling", lambda *a: calls.append(r := real(*a)) or r)
    got = _scoring.fast_bound(V, coefs, intercepts, margin=margin)
    monkeypatch.setattr(_scoring, "CEILING_SLACK", np.inf)
    np.testing.assert_array_equal(_scoring.fast_bound(V, coefs, intercepts, margin=margin), got)
    doubled = _scoring.fast_bound(V, coefs, intercepts, ("doubled",))
    dropped = calls[0] + 0.05 < doubled - V @ intercepts[0] - margin
    assert 0 < dropped.sum() < len(V)


def test_zeros_start_first_half_sweep_is_the_plain_sweep():
    # the "zeros" start's first odd half is computed from one row (its even layers
    # are sigma(b) in every row): the same means as sweeping the stacked start
    coefs, intercepts = _random_dbm((9, 6, 5, 4, 3), seed=3)
    V = (np.random.default_rng(4).random((20, 9)) < 0.4).astype(np.float32)
    c32 = [w.astype(np.float32) for w in coefs]
    b32 = [b.astype(np.float32) for b in intercepts]
    VW = V @ c32[0]
    fast = _scoring._swept("zeros", VW, c32, b32, 1)
    plain, _ = M._mean_field_sweep(M.mean_field_init(V, c32, b32, "zeros"), c32, b32, VW,
                                   layers=[1, 3])
    for l in (1, 3):
        np.testing.assert_allclose(fast[l], plain[l], rtol=0, atol=1e-6)
    for l in (2, 4):
        np.testing.assert_array_equal(fast[l], plain[l])


def test_blocks_do_not_change_a_row(trained, monkeypatch):
    est, V = trained
    whole = est.score_samples(V)
    monkeypatch.setattr(_scoring, "FAST_BLOCK", 7)      # 200 rows in 29 blocks
    # to float32 rounding (see test_rows_are_independent_and_csr_matches_dense)
    np.testing.assert_allclose(est.score_samples(V), whole, rtol=1e-6, atol=0)


def test_entropy_in_place_matches_the_textbook_form():
    mu = np.array([[0.0, 1.0, 0.5, 1e-300, 1 - 2 ** -53, 0.3, 0.999]])
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -(mu * np.log(mu) + (1 - mu) * np.log1p(-mu))
    want = np.nan_to_num(terms, nan=0.0).sum(axis=1)
    np.testing.assert_allclose(M._entropy(mu), want, rtol=1e-14)
    np.testing.assert_allclose(M._entropy(mu.astype(np.float32)), want, rtol=1e-6)


def test_screen_keeps_the_rows_where_the_second_start_is_close(trained):
    # margin=inf sweeps both starts in full: the best of the two one-start bounds.
    # A margin no row meets leaves the doubled start's bound. The default margin
    # keeps every row of this model (its "zeros" start trails by < 1.5 nats after
    # one sweep and wins on some rows after three), so it changes nothing here.
    est, V = trained
    W, b = est.coefs_, est.intercepts_
    doubled = _scoring.fast_bound(V, W, b, ("doubled",))
    zeros = _scoring.fast_bound(V, W, b, ("zeros",))
    assert np.any(zeros > doubled + 1e-3)
    full = _scoring.fast_bound(V, W, b, margin=np.inf)
    np.testing.assert_array_equal(full, np.maximum(doubled, zeros))
    np.testing.assert_array_equal(_scoring.fast_bound(V, W, b, margin=-1e9), doubled)
    np.testing.assert_array_equal(_scoring.fast_bound(V, W, b), full)

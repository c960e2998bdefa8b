"""The fast row step of the SBN Gibbs iteration against its NumPy twin (issue 15).

``kernels="cython"`` accumulates every row's precision in float32 by one GEMM per chunk
(:func:`skdgm.sbn._gibbs.accumulate_statistics_fast`) and draws the rows from batched
Cholesky factors (:func:`skdgm.sbn._gibbs.draw_rows_fast`); ``kernels="numpy"`` is the
plain float64 iteration. Same random numbers in, the same draws out up to float32
rounding of the precisions.
"""

import numpy as np
import pytest

from skdgm import BayesianSBN
from skdgm.sbn import _gibbs, _model, _priors


def _problem(n=60, D=12, K=5, seed=0, ar=False):
    r = np.random.default_rng(seed)
    p = _model.init_params(D, (K,), r, autoregressive=ar, scale=0.5)
    X = (r.random((n, D)) < 0.3).astype(float)
    hidden = [(r.random((n, K)) < 0.5).astype(float)]
    pp = dict(_priors.DEFAULT_PRIOR_PARAMS)
    states = [_priors.init_prior_state("normal", (len(b), _model.row_mask(p, l).shape[1] - 1),
                                       pp) for l, b in enumerate(p.biases)]
    return p, X, hidden, states, pp


def test_float32_statistics_match_float64():
    r = np.random.default_rng(1)
    n, d, J = 50, 7, 9
    Z = np.hstack([(r.random((n, d - 1)) < 0.5), np.ones((n, 1))]).astype(float)
    x = (r.random((n, J)) < 0.4).astype(float)
    G = r.gamma(1.0, 0.3, size=(n, J))
    P64, B64 = np.zeros((J, d, d)), np.zeros((J, d))
    P32, B32 = np.zeros((J, d, d), np.float32), np.zeros((J, d))
    for sl in (slice(0, 20), slice(20, 50)):          # accumulated over two chunks
        _gibbs.accumulate_statistics(P64, B64, Z[sl], x[sl], G[sl])
        _gibbs.accumulate_statistics_fast(P32, B32, Z[sl], x[sl], G[sl])
    np.testing.assert_allclose(P32, P64, rtol=2e-6, atol=1e-6)
    np.testing.assert_array_equal(B32, B64)
    # and against the definition, one row
    np.testing.assert_allclose(P64[3], (Z.T * G[:, 3]) @ Z, rtol=1e-12)


def test_fast_rows_are_the_twin_draws():
    r = np.random.default_rng(2)
    J, d = 70, 6                                       # more rows than one block
    A = r.normal(size=(J, d, 3 * d))
    P = (A @ A.transpose(0, 2, 1)).astype(np.float32)
    B = r.normal(size=(J, d))
    prec = r.uniform(0.5, 2.0, size=(J, d))
    fast = _gibbs.draw_rows_fast(P, B, prec, np.random.default_rng(3))
    ref = _gibbs.draw_rows(P, B, prec, np.ones((J, d), bool), np.random.default_rng(3))
    # the same normals; the factor is float32 (relative rounding 6e-8 times the
    # condition number, here < 1e3)
    np.testing.assert_allclose(fast, ref, rtol=1e-4, atol=1e-5)
    # a precision float32 cannot factorise falls back to float64, same draw
    bad = np.zeros((1, 2, 2), np.float32)
    bad[0] = [[1.0, 1.0 - 1e-9], [1.0 - 1e-9, 1.0]]
    prec0 = np.full((1, 2), 1e-9)
    fast = _gibbs.draw_rows_fast(bad, np.ones((1, 2)), prec0, np.random.default_rng(5))
    ref = _gibbs.draw_rows(bad, np.ones((1, 2)), prec0, np.ones((1, 2), bool),
                           np.random.default_rng(5))
    assert np.all(np.isfinite(fast))
    np.testing.assert_allclose(fast, ref, rtol=1e-6)


@pytest.mark.parametrize("ar", [False, True])
def test_iteration_kernels_agree(ar):
    p, X, hidden, states, pp = _problem(ar=ar)
    out = {}
    for k in ("cython", "numpy"):
        h = [a.copy() for a in hidden]
        out[k] = _gibbs.gibbs_iteration(p, X, h, states, "normal", pp,
                                        np.random.default_rng(4), kernels=k, chunk_size=25)
    (pc, hc, _), (pn, hn, _) = out["cython"], out["numpy"]
    np.testing.assert_array_equal(hc[0], hn[0])       # the sweeps agree draw for draw
    for a, b in zip(pc.weights + pc.biases, pn.weights + pn.biases):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_fit_is_identical_for_any_n_jobs():
    _, X, _, _, _ = _problem(n=50)
    kw = dict(n_components=4, n_iter=4, burn_in=1, n_posterior_samples=2, random_state=0)
    a = BayesianSBN(n_jobs=1, **kw).fit(X)
    b = BayesianSBN(n_jobs=2, **kw).fit(X)
    for u, v in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_):
        np.testing.assert_array_equal(u, v)

"""transform, score_samples and score on row-chunked dask arrays, every estimator (issue 28).

Each block runs the estimator's in-memory method where it lives (``map_blocks``
on one snapshot of the fitted model), so a block's rows get exactly the values
the in-memory method gives that block; the methods seed their random streams
per call, so where they draw (DeepLDA's local sampler, SBN's samplers above 16
hidden units) the values depend on the chunking, as they depend on how an
in-memory input is split into calls. Deterministic ones (exact SBN, DBM mean
field, GRBM) equal the whole in-memory call to rounding.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from _dask_fits import thread_cluster  # noqa: E402,F401 - fixture
from skdgm import DBMCAST, BayesianSBN, DeepLDA, GaussianBernoulliRBM  # noqa: E402

ROWS = 50


def _binary(n=130, d=12, seed=0):
    return (np.random.default_rng(seed).random((n, d)) < 0.3).astype(np.float64)


def _counts(n=130, d=12, seed=0):
    return np.random.default_rng(seed).poisson(1.0, (n, d)).astype(np.float64)


def _gaussian(n=130, d=12, seed=0):
    return np.random.default_rng(seed).standard_normal((n, d))


# (estimator, data, whether its methods draw random numbers)
CASES = {
    "sbn-exact": (lambda: BayesianSBN(n_components=5, n_iter=3, random_state=0), _binary, False),
    "sbn-sampled": (lambda: BayesianSBN(n_components=20, n_iter=2, random_state=0,
                                        n_posterior_samples=2), _binary, True),
    "dbm": (lambda: DBMCAST(n_components=(5, 3), n_iter=2, batch_size=40, random_state=0),
            _binary, False),
    "grbm": (lambda: GaussianBernoulliRBM(n_components=4, n_iter=2, batch_size=40,
                                          random_state=0), _gaussian, False),
    "deep_lda": (lambda: DeepLDA(n_components=(4, 2), n_iter=2, batch_size=40,
                                 random_state=0), _counts, True),
}

_FITTED = {}


def _fitted(case):
    if case not in _FITTED:
        make, data, _ = CASES[case]
        X = data()
        _FITTED[case] = (make().fit(X), X)
    return _FITTED[case]


def _by_block(method, X, **kwargs):
    outs = [method(X[s:s + ROWS], **kwargs) for s in range(0, X.shape[0], ROWS)]
    if isinstance(outs[0], tuple):
        return tuple(np.concatenate(p) for p in zip(*outs))
    return np.concatenate(outs)


def _dask(X):
    return da.from_array(X, chunks=(ROWS, X.shape[1]))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("name", ["transform", "score_samples"])
@pytest.mark.parametrize("return_std", [False, True])
def test_each_block_gets_the_in_memory_values(case, name, return_std):
    est, X = _fitted(case)
    method = getattr(est, name)
    out = method(_dask(X), return_std=return_std)
    want = _by_block(method, X, return_std=return_std)
    outs, wants = (out, want) if return_std else ((out,), (want,))
    for o, w in zip(outs, wants):
        assert isinstance(o, da.Array)
        assert o.chunks[0] == (50, 50, 30)
        assert o.shape == w.shape and o.dtype == w.dtype
        np.testing.assert_array_equal(o.compute(), w)
    if not CASES[case][2]:        # nothing drawn: the whole in-memory call, to rounding
        whole = method(X, return_std=return_std)
        for o, w in zip(outs, whole if return_std else (whole,)):
            np.testing.assert_allclose(o.compute(), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", sorted(CASES))
def test_score_is_a_float_from_the_blocks(case):
    est, X = _fitted(case)
    got = est.score(_dask(X))
    assert isinstance(got, float)
    if isinstance(est, DeepLDA):     # pooled over held-out tokens, block by block
        parts = [est._score_block(X[s:s + ROWS]) for s in range(0, X.shape[0], ROWS)]
        want = sum(p[0] for p in parts) / sum(p[1] for p in parts)
    else:
        want = float(np.mean(_by_block(est.score_samples, X)))
    assert got == pytest.approx(want, rel=1e-12)
    if not CASES[case][2]:
        assert got == pytest.approx(est.score(X), rel=1e-12)


def test_dbm_options_pass_through():
    est, X = _fitted("dbm")
    got = est.score_samples(_dask(X), bound="tight").compute()
    np.testing.assert_array_equal(got, _by_block(est.score_samples, X, bound="tight"))
    assert est.score(_dask(X), bound="tight") == pytest.approx(
        est.score(X, bound="tight"), rel=1e-12)


def test_workers_give_the_same_values(thread_cluster):
    cases = ["sbn-sampled", "deep_lda", "grbm"]
    local = [_fitted(c)[0].transform(_dask(_fitted(c)[1])).compute() for c in cases]
    with distributed.Client(thread_cluster):
        remote = [_fitted(c)[0].transform(_dask(_fitted(c)[1])).compute() for c in cases]
        score = _fitted("deep_lda")[0].score(_dask(_fitted("deep_lda")[1]))
    assert all(np.array_equal(a, b) for a, b in zip(local, remote))
    assert score == _fitted("deep_lda")[0].score(_dask(_fitted("deep_lda")[1]))


def test_sparse_blocks():
    est, X = _fitted("deep_lda")
    Xs = da.from_array(sp.csr_matrix(X), chunks=(ROWS, X.shape[1]), asarray=False)
    np.testing.assert_array_equal(est.score_samples(Xs).compute(), _by_block(est.score_samples, X))
    sbn, Xb = _fitted("sbn-exact")
    Xbs = da.from_array(sp.csr_matrix(Xb), chunks=(ROWS, Xb.shape[1]), asarray=False)
    np.testing.assert_array_equal(sbn.transform(Xbs).compute(), _by_block(sbn.transform, Xb))


def test_the_result_belongs_to_the_model_of_the_call():
    make, data, _ = CASES["grbm"]
    X = data()
    est = make().fit(X)
    lazy = est.transform(_dask(X))
    want = est.transform(X)
    est.set_params(random_state=5).fit(X)           # refit before computing
    np.testing.assert_allclose(lazy.compute(), want, rtol=1e-12)


def test_bad_input_names_the_problem():
    est, X = _fitted("sbn-exact")
    X_bad = X.copy()
    X_bad[120, 3] = 0.5                              # in the last block
    lazy = est.transform(_dask(X_bad))
    with pytest.raises(ValueError, match="binary"):
        lazy.compute()                               # the in-memory message, from its block
    with pytest.raises(ValueError, match="binary"):
        est.score(_dask(X_bad))
    with pytest.raises(ValueError, match="12 features"):
        est.transform(_dask(X[:, :10]))
    with pytest.raises(ValueError, match="rechunk"):
        est.score_samples(da.from_array(X, chunks=(ROWS, 6)))
    with pytest.raises(ValueError, match="return_std"):
        est.score(_dask(X), return_std=True)
    lda, Xc = _fitted("deep_lda")
    with pytest.raises(ValueError, match="not available on a dask array"):
        lda.transform(_dask(Xc), all_layers=True)
    with pytest.raises(NotFittedError):
        BayesianSBN().transform(_dask(X))

"""The shortcuts of the DBM training update (issue 26) against the plain computations.

The one-start update skips the bound, the SAP chains hand their sweep's energy to
the trace, the weight gradient is two ``gemm`` calls into one buffer and the logistic
runs in place: each must give what the plain NumPy expression gives.
"""

import numpy as np
import pytest
from scipy.special import expit

from skdgm._core.numerics import sigmoid
from skdgm.dbm import DBMCAST, _model, _tempering, _train


def _model_arrays(dtype, sizes=(9, 6, 5), seed=0):
    rng = np.random.default_rng(seed)
    coefs = [rng.normal(0, 1.0, (a, b)).astype(dtype) for a, b in zip(sizes, sizes[1:])]
    intercepts = [rng.normal(0, 0.5, s).astype(dtype) for s in sizes]
    V = (rng.random((7, sizes[0])) < 0.4).astype(dtype)
    return coefs, intercepts, V


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_moment_difference_matches_numpy(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.random((13, 4)).astype(dtype), rng.random((13, 6)).astype(dtype)
    c, d = rng.random((5, 4)).astype(dtype), rng.random((5, 6)).astype(dtype)
    g = _train.moment_difference(a, b, c, d, 1 / 13, 1 / 5)
    assert g.dtype == dtype and g.flags.c_contiguous and g.shape == (4, 6)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(g, a.T @ b / 13 - c.T @ d / 5, rtol=0, atol=tol)
    # a wrong sign or scale would be far off
    assert np.abs(g - (a.T @ b / 13 + c.T @ d / 5)).max() > 0.1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_product_gives_the_in_memory_gradient(dtype):
    # a dask block returns moment_product; one block must give moment_difference's bits
    rng = np.random.default_rng(3)
    a, b = rng.random((100, 30)).astype(dtype), rng.random((100, 20)).astype(dtype)
    c, d = rng.random((50, 30)).astype(dtype), rng.random((50, 20)).astype(dtype)
    p = _train.moment_product(a, b)
    assert p.flags.c_contiguous and p.dtype == dtype
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(p, a.T @ b, rtol=0, atol=tol)
    g = _train.product_difference(p, c, d, 1 / 100, 1 / 50)
    assert g.dtype == dtype and g.flags.c_contiguous
    np.testing.assert_array_equal(g, _train.moment_difference(a, b, c, d, 1 / 100, 1 / 50))
    # two blocks' summed products: the same gradient up to rounding
    two = _train.moment_product(a[:40], b[:40]) + _train.moment_product(a[40:], b[40:])
    np.testing.assert_allclose(_train.product_difference(two, c, d, 1 / 100, 1 / 50), g,
                               rtol=0, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_in_place_matches_expit(dtype):
    x = np.random.default_rng(2).normal(0, 8, (50, 40)).astype(dtype)
    ref = expit(x)
    y = x.copy()
    out = sigmoid(y, out=y)
    assert out is y and out.dtype == dtype
    tol = 2e-7 if dtype == np.float32 else 5e-16
    np.testing.assert_allclose(out, ref, rtol=0, atol=tol)
    np.testing.assert_array_equal(sigmoid(x), out)
    assert sigmoid(0.0) == 0.5


@pytest.mark.parametrize("start", ["doubled", "zeros"])
def test_one_start_without_bound_gives_the_same_means(start):
    coefs, intercepts, V = _model_arrays(np.float64)
    full = _model.mean_field(V, coefs, intercepts, 7, 1e-6, starts=(start,),
                             return_info=True)
    quick = _model.mean_field(V, coefs, intercepts, 7, 1e-6, starts=(start,),
                              return_info=True, with_bound=False)
    assert quick.bound is None and full.bound is not None
    for a, b in zip(full.mus, quick.mus):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(full.converged, quick.converged)
    np.testing.assert_array_equal(quick.start, 0)
    np.testing.assert_allclose(
        full.bound, _model.lower_bound_unnormalised(full.mus, coefs, intercepts))
    # two starts still choose by the bound whatever with_bound says
    two = _model.mean_field(V, coefs, intercepts, 7, 1e-6, return_info=True,
                            with_bound=False)
    assert two.bound is not None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sap_chains_sweep_energy_is_the_energy_and_the_same_draws(dtype):
    coefs, intercepts, V = _model_arrays(dtype)
    rng = np.random.default_rng(3)
    layers = [(rng.random((6, len(b))) < 0.5).astype(dtype) for b in intercepts]
    chains = _tempering.GibbsChains(layers)
    plain = [x.copy() for x in layers]
    r1, r2 = np.random.default_rng(4), np.random.default_rng(4)
    for _ in range(3):
        new = chains.step(coefs, intercepts, r1)
        _model.gibbs_sweep(plain, coefs, intercepts, r2)
        for a, b in zip(new, plain):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(chains.sweep_energy,
                                   _model.energy(new, coefs, intercepts),
                                   rtol=1e-5 if dtype == np.float32 else 1e-12)
    # FPCD's chains run on other parameters: no energy to hand over
    fp = _tempering.FastWeightChains(layers, coefs, intercepts, 0.01, 0.9)
    fp.step(coefs, intercepts, r1)
    assert fp.sweep_energy is None


def test_energy_trace_matches_recomputed_energy():
    X = (np.random.default_rng(5).random((60, 9)) < 0.4).astype(float)
    kw = dict(n_components=(6, 5), pretrain=False, n_iter=2, n_chains=8, batch_size=20,
              random_state=0, mean_field_starts="doubled", dtype="float64")
    sap = DBMCAST(sampler="sap", **kw).fit(X)
    # FPCD with zero fast rates runs the same chains as SAP but recomputes the energy
    fpcd = DBMCAST(sampler="fpcd", fpcd_learning_rate=0.0, **kw).fit(X)
    np.testing.assert_array_equal(sap.coefs_[0], fpcd.coefs_[0])
    np.testing.assert_allclose(np.array(sap._energy_trace),
                               np.array(fpcd._energy_trace), rtol=1e-12)

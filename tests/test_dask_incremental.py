"""dask-ml's ``Incremental`` drives ``partial_fit`` over a dask array's blocks (issue 27).

It is the out-of-core route of ``doc/scaling.rst`` ("Out of core on one machine:
dask-ml's Incremental"): one block in memory at a time, in order. Skips without dask-ml.
"""

import numpy as np
import pytest

import skdgm
from test_ecosystem import data     # 0/1, counts or real values, as each model takes

CHEAP = {
    "GaussianBernoulliRBM": dict(n_components=4, cd_steps=3, batch_size=16),
    # partial_fit exists for the streaming inferences (online VB, DSGHMC)
    "BayesianSBN": dict(n_components=(3,), inference="online_vb", batch_size=20),
    "DeepLDA": dict(n_components=(3, 2), batch_size=20, local_burn_in=2, local_samples=2),
    "DBMCAST": dict(n_components=(6, 4), n_chains=10, batch_size=20, n_temperatures=4,
                    beta_min=0.6, swap_interval=3),
}
ALL = sorted(CHEAP)


def make(name):
    return getattr(skdgm, name)(**CHEAP[name], random_state=0)


def _fit(name, **kwargs):
    """``Incremental(...).fit`` over 120 rows in three blocks of 40: (fitted, X, dX, da)."""
    da = pytest.importorskip("dask.array")
    wrappers = pytest.importorskip("dask_ml.wrappers")
    X = data(name, n=120)
    dX = da.from_array(X, chunks=(40, X.shape[1]))
    return wrappers.Incremental(make(name), **kwargs).fit(dX), X, dX, da


@pytest.mark.parametrize("name", ALL)
def test_incremental_is_partial_fit_block_by_block(name):
    inc, X, dX, _ = _fit(name, shuffle_blocks=False)
    est = inc.estimator_
    ref = make(name)
    for start in range(0, len(X), 40):
        ref.partial_fit(X[start:start + 40])
    assert est.n_iter_ == ref.n_iter_ == 3
    # the same model, bit for bit
    np.testing.assert_array_equal(est.transform(X), ref.transform(X))
    # score on a dask array adds each block's in-memory (numerator, denominator)
    # sums (``_core.blocks.dask_method``): the same sums, added in another order
    # than one in-memory call's, and DeepLDA's sampled score seeded per block
    sums = np.sum([ref._score_block(X[s:s + 40]) for s in range(0, len(X), 40)], axis=0)
    np.testing.assert_allclose(inc.score(dX, None), sums[0] / max(sums[1], 1), rtol=1e-12)
    if name != "DeepLDA":       # nothing random: one in-memory call agrees to rounding
        np.testing.assert_allclose(inc.score(dX, None), ref.score(X), rtol=1e-12)
    # the default shuffles the blocks (a random order per pass): still one call each
    shuffled, *_ = _fit(name, random_state=0)
    assert shuffled.estimator_.n_iter_ == 3


@pytest.mark.parametrize("name", ["BayesianSBN", "DBMCAST", "GaussianBernoulliRBM"])
def test_incremental_transform_maps_the_blocks(name):
    inc, X, dX, da = _fit(name, shuffle_blocks=False)
    model = inc.estimator_
    whole = model.transform(X)
    Z = inc.transform(dX)
    assert isinstance(Z, da.Array)
    # a deterministic transform gives the same rows block by block
    np.testing.assert_allclose(Z.compute(), whole, rtol=1e-12)
    # map_blocks with the output's chunks (doc/scaling.rst) also knows the shape
    n_out = whole.shape[1]
    Z = dX.map_blocks(model.transform, chunks=(dX.chunks[0], (n_out,)), dtype=float)
    assert Z.shape == whole.shape
    np.testing.assert_allclose(Z.compute(), whole, rtol=1e-12)

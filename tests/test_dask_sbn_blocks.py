"""BayesianSBN online VB and DSGHMC on dask arrays, the rows staying where they live (issue 28).

A step's local part (the ``n_local_iter`` coordinate sweeps of the rows' ``q(H)``,
Sec. 3.2) runs block by block where a block lives, from starting means drawn on
the client exactly as in memory; the global step reads the rows' ``q(H)`` and the
visible layer's centred moment ``sum_n zbar_n (x_n - 1/2)``, summed over blocks.
What "the same" means here:

* one block holding every row is the in-memory fit bit for bit (the same rows,
  the same starting means, the same products);
* several blocks give the in-memory fit to rounding: the local step is per row,
  and only the block sums of the centred moment are added in another order
  (the tests allow 1e-9 relative after a few dozen steps);
* the same blocks give the same fit bit for bit with no client, one worker or
  two (the block results are concatenated and summed in block order).

DSGHMC (Gibbs and NAIS proposals): every SGHMC step's hidden samples are drawn
per block, from a stream per block and step, and the Gibbs chains stay with
their block between the steps of a minibatch; only the gradient sums return.
So a dask fit is another chain of the same sampler (even with one block): the
same blocks give the same fit for any number of workers, and its quality is the
in-memory fit's (exact held-out log-likelihoods over seeds).
"""

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from _dask_fits import (assert_blocks_decide_the_answer,  # noqa: E402
                        assert_every_call_raises, assert_quality_matches,
                        assert_one_total_per_update, assert_the_client_never_holds,
                        fit_killing_a_worker, record_gathers,
                        process_cluster,  # noqa: F401
                        remote_cluster,  # noqa: F401
                        thread_cluster)  # noqa: F401 - fixtures
from skdgm import BayesianSBN  # noqa: E402
from skdgm._core import blocks as blocks_mod  # noqa: E402

SBN = dict(n_components=5, inference="online_vb", n_iter=3, batch_size=40, random_state=1)
DEEP = dict(SBN, n_components=(5, 3), pretrain=False)
NAIS = dict(SBN, inference="dsghmc_nais", n_iter=1, n_sghmc_steps=3, n_hidden_samples=3)
GIBBS = dict(NAIS, inference="dsghmc_gibbs", gibbs_sweeps=2)


def _binary(n=320, d=12, seed=0):
    rng = np.random.default_rng(seed)
    proto = rng.random((3, d)) < 0.5
    X = proto[rng.integers(0, 3, n)] ^ (rng.random((n, d)) < 0.1)
    return X.astype(np.float64)


def _params(est):
    return list(est.coefs_) + list(est.intercepts_) + [
        a for s in est.posterior_samples_ for a in s.weights + s.biases]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(_params(a), _params(b)))


def _close(a, b, rtol=1e-9):
    return all(np.allclose(x, y, rtol=rtol, atol=rtol) for x, y in zip(_params(a), _params(b)))


def _dask(X, rows):
    return da.from_array(X, chunks=(rows, X.shape[1]))


# --------------------------------------------------------------- same answer
@pytest.mark.parametrize("params", [SBN, DEEP], ids=["one-layer", "two-layers"])
def test_one_block_is_the_in_memory_fit_bit_for_bit(params):
    X = _binary()
    a = BayesianSBN(**params).fit(X)
    b = BayesianSBN(**params).fit(_dask(X, X.shape[0]))
    assert _same(a, b)
    assert a.n_iter_ == b.n_iter_ == 3
    np.testing.assert_allclose(a.history_["batch_bound"], b.history_["batch_bound"],
                               rtol=1e-12)
    # a partial_fit continues both the same way, and a first partial_fit starts the same
    assert _same(a.partial_fit(X[:80]), b.partial_fit(_dask(X[:80], 80)))
    assert _same(BayesianSBN(**params).partial_fit(X[:120]),
                 BayesianSBN(**params).partial_fit(_dask(X[:120], 120)))


@pytest.mark.parametrize("params", [SBN, DEEP], ids=["one-layer", "two-layers"])
def test_several_blocks_are_the_in_memory_fit_to_rounding(params):
    X = _binary()
    a = BayesianSBN(**params).fit(X)
    b = BayesianSBN(**params).fit(_dask(X, 50))          # 7 blocks; minibatches span several
    assert _close(a, b)
    # 22 blocks, 3-4 in every minibatch: the tree pairs the centred moments unlike a
    # sum in block order, and stays as close
    assert _close(a, BayesianSBN(**params).fit(_dask(X, 15)))
    # the control: another seed is far away, so the tolerance above means something
    assert not _close(a, BayesianSBN(**dict(params, random_state=2)).fit(X), rtol=1e-3)


@pytest.mark.parametrize("params, resumed", [
    (SBN, DEEP), (GIBBS, dict(GIBBS, n_components=(5, 3), pretrain=False)), (NAIS, NAIS),
    (dict(GIBBS, autoregressive=True), dict(GIBBS, autoregressive=True))],
    ids=["online_vb", "dsghmc_gibbs", "dsghmc_nais", "dsghmc_gibbs-autoregressive"])
def test_blocks_decide_the_answer_not_workers_or_client(thread_cluster, params, resumed):
    X = _binary()
    Xd = _dask(X, 50)
    assert_blocks_decide_the_answer(
        thread_cluster, _same, lambda: BayesianSBN(**params).fit(Xd),
        lambda: BayesianSBN(**resumed).fit(Xd[:160]).partial_fit(Xd[160:]),
        lambda: BayesianSBN(**params).fit(_dask(X, 90)),
        # DSGHMC-Gibbs carries each block's chains in its thread slot's task result:
        # three slots and four (two workers of two threads) must not change them
        slots=((3, 1), (2, 2)) if params is GIBBS or params is NAIS else ())


@pytest.mark.parametrize("params, task, combine", [
    (SBN, "_local_block", "_join_blocks"), (GIBBS, "_block_gradient", "add_parts"),
    (NAIS, "_block_gradient", "add_parts")], ids=["online_vb", "dsghmc_gibbs", "dsghmc_nais"])
def test_the_client_receives_one_total_per_update(thread_cluster, monkeypatch, params,
                                                  task, combine):
    # the blocks' results are joined by a tree on the workers (forced here for
    # every minibatch, which spans 3-4 blocks of 15 rows): every update's gather
    # brings back one total; the same tree on the client (no client at all) gives
    # the same fit bit for bit
    Xd = _dask(_binary(), 15)
    local = BayesianSBN(**params).fit(Xd)
    monkeypatch.setattr(blocks_mod, "TREE_ON_WORKERS_ABOVE", 1)
    gathered = record_gathers(monkeypatch)
    with distributed.Client(thread_cluster):
        est = BayesianSBN(**params).fit(Xd)
    n_updates = 8 * est.n_iter_ * (1 if params is SBN else params["n_sghmc_steps"])
    assert_one_total_per_update(gathered, task, combine, n_updates)
    assert _same(local, est)


def test_dsghmc_draws_per_block_so_one_block_is_another_chain():
    # the control of the bit-for-bit tests: the blocks' streams are not the
    # in-memory stream (else the per-block seeds were not used)
    X = _binary()
    assert not _same(BayesianSBN(**GIBBS).fit(X), BayesianSBN(**GIBBS).fit(_dask(X, 320)))


def test_sparse_blocks_train_as_dense_ones():
    X = _binary()
    dense = BayesianSBN(**SBN).fit(_dask(X, 100))
    csr = BayesianSBN(**SBN).fit(da.from_array(sp.csr_matrix(X), chunks=(100, X.shape[1]),
                                               asarray=False))
    assert _same(dense, csr)


def test_binarize_applies_on_the_blocks():
    X = _binary()
    a = BayesianSBN(**SBN, binarize=0.5).fit(_dask(0.2 + 0.6 * X, 80))
    assert _same(a, BayesianSBN(**SBN).fit(_dask(X, 80)))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad, message", [(0.5, "binary"), (np.nan, "NaN")])
@pytest.mark.parametrize("with_client", [False, True])
def test_a_bad_entry_in_one_block_raises_and_changes_nothing(bad, message, with_client,
                                                             thread_cluster):
    X = _binary()
    est = BayesianSBN(**SBN).fit(X)
    before = [p.copy() for p in _params(est)]
    n_iter, history = est.n_iter_, len(est.history_["batch_bound"])
    X_bad = X.copy()
    X_bad[300, 7] = bad                    # in the last of four blocks
    for call in (est.fit, est.partial_fit, BayesianSBN(**SBN).fit):
        with pytest.raises(ValueError, match=message):
            call(X_bad)                    # the in-memory message ...
    assert_every_call_raises((est.fit, est.partial_fit, BayesianSBN(**SBN).fit),
                             _dask(X_bad, 80), message,         # ... where the block lives
                             thread_cluster if with_client else None)
    assert all(np.array_equal(a, b) for a, b in zip(before, _params(est)))
    assert est.n_iter_ == n_iter and len(est.history_["batch_bound"]) == history


@pytest.mark.filterwarnings("ignore:.*has no effect:UserWarning")
@pytest.mark.parametrize("params, message", [
    (dict(SBN, inference="gibbs"), "inference='online_vb'"),
    (dict(SBN, inference="vb"), "inference='online_vb'"),
    (dict(SBN, autoregressive=True), "autoregressive=False"),
    (dict(SBN, n_components=(5, 3)), "pretrain=False"),
])
def test_what_does_not_train_on_a_dask_array_says_so_and_changes_nothing(params, message):
    X = _binary()
    est = BayesianSBN(**params)
    with pytest.raises(ValueError, match=message):
        est.fit(_dask(X, 80))
    assert not hasattr(est, "params_") and not hasattr(est, "n_features_in_")
    fitted = BayesianSBN(**SBN).fit(X)
    before = [p.copy() for p in _params(fitted)]
    fitted.set_params(**{k: v for k, v in params.items() if k != "n_components"})
    if not hasattr(fitted, "partial_fit") or (fitted.inference == "online_vb"
                                               and not fitted.autoregressive):
        return      # batch inference has no partial_fit; a fitted model pre-trains nothing
    with pytest.raises(ValueError, match=message):
        fitted.partial_fit(_dask(X, 80))
    assert all(np.array_equal(a, b) for a, b in zip(before, _params(fitted)))


def test_client_side_checks_name_the_problem():
    X = _binary()
    with pytest.raises(ValueError, match="rechunk"):
        BayesianSBN(**SBN).fit(da.from_array(X, chunks=(100, 6)))
    est = BayesianSBN(**SBN).fit(X)
    with pytest.raises(ValueError, match="12 features"):
        est.partial_fit(_dask(X[:, :10], 100))


# ------------------------------------------------------------------ quality
def test_quality_matches_the_in_memory_fit():
    # Exact log-likelihoods (5 hidden units are enumerated): over several seeds,
    # the 4-block fit's held-out score equals the in-memory one's to rounding
    X_all = _binary(n=400)
    X, X_test = X_all[:320], X_all[320:]
    for seed in range(3):
        params = dict(SBN, n_iter=10, random_state=seed)
        mem = BayesianSBN(**params).fit(X).score(X_test)
        dsk = BayesianSBN(**params).fit(_dask(X, 80)).score(X_test)
        assert abs(dsk - mem) < 1e-8, (seed, mem, dsk)


@pytest.mark.parametrize("params", [GIBBS, NAIS], ids=["dsghmc_gibbs", "dsghmc_nais"])
def test_dsghmc_quality_matches_the_in_memory_fit(params):
    # another chain of the same sampler: per seed within the 1 nat, and
    # the mean over seeds within 4 standard errors of the in-memory mean
    X_all = _binary(n=400)
    X, X_test = X_all[:320], X_all[320:]
    Xd = _dask(X, 80)
    assert_quality_matches(lambda s, on_dask: BayesianSBN(**dict(params, n_iter=6,
                                                                 random_state=s)).fit(
        Xd if on_dask else X).score(X_test), range(4))


# ------------------------------------------------------------------- memory
def _make_binary_block(block_id, n_rows, d):
    return (np.random.default_rng(block_id[0]).random((n_rows, d)) < 0.2).astype(np.float64)


@pytest.mark.slow
def test_the_client_never_holds_the_data(remote_cluster):
    # 96 MB made on the workers; the client holds the global factors, one
    # minibatch's q(H) (400 x 8), its visible-layer E[gamma] (400 x 750) and the
    # sums. The scheduler runs in its own process (remote_cluster), and the
    # client's log of sent messages keeps none of the parameters (forget_sent).
    d, rows, n = 750, 1_000, 16_000
    Xd = da.map_blocks(_make_binary_block, n_rows=rows, d=d,
                       chunks=((rows,) * (n // rows), (d,)), dtype=np.float64)
    est = BayesianSBN(n_components=8, inference="online_vb", n_iter=1, batch_size=400,
                      random_state=0)
    assert_the_client_never_holds(lambda: est.fit(Xd), Xd, remote_cluster)
    assert len(est.history_["batch_bound"]) == 1


# --------------------------------------------------------- fault tolerance
def test_a_worker_killed_mid_fit_changes_nothing(process_cluster, monkeypatch):
    Xd = _dask(_binary(n=640), 80)
    params = dict(SBN, n_iter=2)
    reference = BayesianSBN(**params).fit(Xd)          # no client: blocks computed locally
    est, calls = fit_killing_a_worker(lambda: BayesianSBN(**params).fit(Xd),
                                      process_cluster, monkeypatch, 5)
    assert calls == 32                                  # 16 minibatches per pass
    assert _same(reference, est)


def test_a_worker_killed_mid_minibatch_keeps_the_gibbs_chains(process_cluster, monkeypatch):
    # DSGHMC-Gibbs carries each block's chains between the SGHMC steps of a
    # minibatch; the worker dies between two steps (after the 5th of 3 x 16 per
    # pass), and the chains it held are recomputed from their tasks' lineage
    Xd = _dask(_binary(n=640), 80)
    params = GIBBS
    reference = BayesianSBN(**params).fit(Xd)
    est, calls = fit_killing_a_worker(lambda: BayesianSBN(**params).fit(Xd),
                                      process_cluster, monkeypatch, 5, method="map_rows_carry")
    assert calls == 48
    assert _same(reference, est)

"""GaussianBernoulliRBM and DBMCAST on dask arrays, the rows staying where they live (issue 28).

The positive phase (GRBM: the sums of Eqs. 14-17 or 33-36; DBM: the mean-field
means' sums) runs block by block where a block lives; the negative phase and the
update stay on the client. What "the same" means here:

* the same blocks give the same fit bit for bit, with no client, one worker or
  two (the block results are summed by a tree whose shape follows the block
  order, on the workers with a client: one total per update reaches it);
* one block holding every row is the in-memory fit bit for bit when the positive
  phase draws nothing (DBMCAST always; GRBM with ``objective="marginal"``) in
  float64: the minibatches are the same rows in the same order and the sums the
  same products. GRBM's default ``objective="joint"`` samples the hidden units
  from one stream per block, so its dask fit is another chain of the same
  algorithm, and several blocks sum in another order (rounding): there the test
  is the quality, the held-out log-likelihood within the issue's 1 nat of the
  in-memory fit and within the spread of in-memory fits over seeds.
"""

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from _dask_fits import (assert_blocks_decide_the_answer,  # noqa: E402
                        assert_every_call_raises, assert_one_total_per_update,
                        assert_quality_matches, assert_the_client_never_holds,
                        client_peak,
                        fit_killing_a_worker, fits_without_and_with_workers,
                        record_gathers, spy_on_rows,
                        process_cluster,  # noqa: F401
                        remote_cluster,  # noqa: F401
                        thread_cluster)  # noqa: F401 - fixtures
from skdgm import DBMCAST, GaussianBernoulliRBM  # noqa: E402
from skdgm._core import blocks as blocks_mod  # noqa: E402
from skdgm._core.blocks import RowBlocks, float_blocks, float_summary  # noqa: E402
from skdgm.dbm._train import pretrain_recon_error, pretrain_stack  # noqa: E402

GRBM = dict(n_components=6, n_iter=3, batch_size=40, cd_steps=5, random_state=1)
DBM = dict(n_components=(6, 4), n_iter=3, batch_size=40, n_chains=20, pretrain=False,
           random_state=1)
PRETRAIN = dict(DBM, pretrain=True, pretrain_n_iter=2, n_iter=1)


def _gaussian(n=320, d=12, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, 3))
    return Z @ rng.standard_normal((3, d)) + 0.5 * rng.standard_normal((n, d))


def _binary(n=320, d=12, seed=0):
    rng = np.random.default_rng(seed)
    proto = rng.random((3, d)) < 0.5
    X = proto[rng.integers(0, 3, n)] ^ (rng.random((n, d)) < 0.1)
    return X.astype(np.float64)


def _params(est):
    if isinstance(est, DBMCAST):
        return list(est.coefs_) + list(est.intercepts_)
    return [est.components_, est.intercept_hidden_, est.mean_, est.log_variance_]


def _same(a, b):
    return all(np.array_equal(x, y) for x, y in zip(_params(a), _params(b)))


def _dask(X, rows):
    return da.from_array(X, chunks=(rows, X.shape[1]))


CASES = [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, objective="marginal"), _gaussian, id="grbm"),
    pytest.param(GaussianBernoulliRBM, dict(GRBM, objective="marginal", n_iter=2), lambda:
                 _gaussian(d=4), id="grbm-annealed"),     # <= 10 features: annealed phase
    pytest.param(DBMCAST, DBM, _binary, id="dbm"),
]


# --------------------------------------------------------------- same answer
@pytest.mark.parametrize("cls, params, data", CASES)
def test_one_block_is_the_in_memory_fit_bit_for_bit(cls, params, data):
    X = data()
    a = cls(**params).fit(X)
    b = cls(**params).fit(_dask(X, X.shape[0]))
    assert _same(a, b)
    assert a.n_updates_ == b.n_updates_ == params["n_iter"] * 8
    # and a partial_fit continues both the same way
    assert _same(a.partial_fit(X[:80]), b.partial_fit(_dask(X[:80], 80)))


def test_the_reconstruction_error_history_is_the_same_on_both_paths():
    # history only (no stopping rule reads it), but one figure on both paths: the
    # last minibatch's mean-field reconstruction under the parameters after its
    # update (in memory it read p(h | v) from before the update)
    X = _gaussian()
    a = GaussianBernoulliRBM(**dict(GRBM, objective="marginal")).fit(X)
    b = GaussianBernoulliRBM(**dict(GRBM, objective="marginal")).fit(_dask(X, 80))
    c = GaussianBernoulliRBM(**dict(GRBM, objective="marginal")).fit(_dask(X, X.shape[0]))
    assert _same(a, c)
    # float32 models: the blocks sum the squares in float64, memory in float32
    np.testing.assert_allclose(a.history_["recon_error"], c.history_["recon_error"],
                               rtol=1e-6)
    assert len(b.history_["recon_error"]) == GRBM["n_iter"]


def test_the_joint_objective_samples_per_block_so_it_is_another_chain():
    # the control of the test above: with sampled hidden units the one-block dask
    # fit draws from other streams, so it must differ (else the streams were shared)
    X = _gaussian()
    assert not _same(GaussianBernoulliRBM(**GRBM).fit(X),
                     GaussianBernoulliRBM(**GRBM).fit(_dask(X, X.shape[0])))


@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, GRBM, _gaussian, id="grbm"),
    pytest.param(DBMCAST, DBM, _binary, id="dbm"),
])
def test_the_client_receives_one_positive_phase_per_update(cls, params, data, thread_cluster,
                                                          monkeypatch):
    # the blocks' positive-phase sums are added by a tree on the workers: every
    # update's gather brings back one total, not one part per block
    Xd = _dask(data(), 50)                 # 7 blocks; shuffled minibatches of 40 span several
    monkeypatch.setattr(blocks_mod, "TREE_ON_WORKERS_ABOVE", 1)
    gathered = record_gathers(monkeypatch)
    with distributed.Client(thread_cluster):
        est = cls(**dict(params, n_iter=1)).fit(Xd)
    assert est.n_updates_ == 8
    assert_one_total_per_update(gathered, "positive_block", "add_parts", 8)


@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, GRBM, _gaussian, id="grbm-joint"),
    pytest.param(DBMCAST, DBM, _binary, id="dbm"),
    # the greedy stack's CD-1 sums and its sampled hidden layer are taken where the
    # blocks live, from one seed per block
    pytest.param(DBMCAST, PRETRAIN, _binary, id="dbm-pretrained"),
])
def test_blocks_decide_the_answer_not_workers_or_client(cls, params, data, thread_cluster):
    X = data()
    Xd = _dask(X, 50)                      # 7 blocks; minibatches span several
    assert_blocks_decide_the_answer(
        thread_cluster, _same, lambda: cls(**params).fit(Xd),
        lambda: cls(**params).fit(Xd[:160]).partial_fit(Xd[160:]),
        lambda: cls(**params).fit(_dask(X, 90)))


def test_dbm_sparse_blocks_train_as_dense_ones():
    X = _binary()
    dense = DBMCAST(**DBM).fit(_dask(X, 100))
    csr = DBMCAST(**DBM).fit(da.from_array(sp.csr_matrix(X), chunks=(100, X.shape[1]),
                                           asarray=False))
    # the same rows and products; only the base rate's column sums run in another
    # order (a rounding of 1e-16), which the short fit carries along
    for x, y in zip(_params(dense), _params(csr)):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ quality
@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, n_iter=15), _gaussian, id="grbm-joint"),
    pytest.param(DBMCAST, dict(DBM, n_iter=15), _binary, id="dbm"),
    pytest.param(DBMCAST, dict(PRETRAIN, n_iter=10), _binary, id="dbm-pretrained"),
])
def test_quality_matches_the_in_memory_fit(cls, params, data):
    # Exact log-likelihoods (<= 16 hidden units in the enumerated layer). The dask
    # fit over 4 blocks is another chain of the same algorithm; its held-out score
    # must sit within the 1 nat of the in-memory fit of the same seed, and
    # its mean over seeds within 4 standard errors of the in-memory mean.
    X_all = data(n=400)
    X, X_test = X_all[:320], X_all[320:]
    Xd = _dask(X, 80)
    assert_quality_matches(lambda s, on_dask: cls(**dict(params, random_state=s)).fit(
        Xd if on_dask else X).score(X_test), range(4))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("cls, params, data, bad, message", [
    pytest.param(GaussianBernoulliRBM, GRBM, _gaussian, np.nan, "NaN", id="grbm-nan"),
    pytest.param(GaussianBernoulliRBM, GRBM, _gaussian, np.inf, "infinity", id="grbm-inf"),
    pytest.param(DBMCAST, DBM, _binary, 0.5, "binary", id="dbm-binary"),
    pytest.param(DBMCAST, DBM, _binary, np.nan, "NaN", id="dbm-nan"),
])
@pytest.mark.parametrize("with_client", [False, True])
def test_a_bad_entry_in_one_block_raises_and_changes_nothing(cls, params, data, bad, message,
                                                             with_client, thread_cluster):
    X = data()
    est = cls(**params).fit(X)
    before = [p.copy() for p in _params(est)]
    n_updates = est.n_updates_
    X_bad = X.copy()
    X_bad[300, 7] = bad                    # in the last of four blocks
    Xd = _dask(X_bad, 80)
    assert_every_call_raises((est.fit, est.partial_fit, cls(**params).fit), Xd, message,
                             thread_cluster if with_client else None)
    assert all(np.array_equal(a, b) for a, b in zip(before, _params(est)))
    assert est.n_updates_ == n_updates


def test_binarize_applies_on_the_blocks():
    X = _binary()
    est = DBMCAST(**DBM, binarize=0.5)
    a = est.fit(_dask(0.2 + 0.6 * X, 80))      # 0.2 / 0.8 thresholded to 0 / 1
    assert _same(a, DBMCAST(**DBM).fit(_dask(X, 80)))


@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, GRBM, _gaussian, id="grbm"),
    pytest.param(DBMCAST, DBM, _binary, id="dbm"),
])
def test_client_side_checks_name_the_problem(cls, params, data):
    X = data()
    with pytest.raises(ValueError, match="rechunk"):
        cls(**params).fit(da.from_array(X, chunks=(100, 6)))
    est = cls(**params).fit(X)
    with pytest.raises(ValueError, match="12 features"):
        est.partial_fit(_dask(X[:, :10], 100))
    with pytest.raises(ValueError, match="leaves 0 for training"):
        cls(**dict(params, early_stopping=True, validation_fraction=0.999)).fit(_dask(X, 100))


def test_dbm_pretraining_on_blocks_trains_the_stack():
    # pre-training did something on the blocks: the stack is not the random start
    Xd = _dask(_binary(), 50)
    assert not _same(DBMCAST(**PRETRAIN).fit(Xd), DBMCAST(**dict(DBM, n_iter=1)).fit(Xd))


def test_dbm_pretraining_gathers_no_rows(monkeypatch):
    # the only rows a dask fit gathers are the chains' few starting rows, after
    # pre-training (RowBlocks.take): pre-training itself gathers none
    taken = []
    take = RowBlocks.take
    monkeypatch.setattr(RowBlocks, "take", lambda self, rows: taken.append(
        (self.shape, len(rows))) or take(self, rows))
    pretrain_stack(float_blocks(DBMCAST(**PRETRAIN), _dask(_binary(), 80), reset=True,
                                binary=True), [6, 4], n_epochs=2, learning_rate=0.05,
                   batch_size=40, rng=np.random.default_rng(0))
    assert taken == []


def test_dbm_pretraining_receives_one_sum_per_cd1_update(thread_cluster, monkeypatch):
    # the greedy stack's CD-1 sums are combined by the blocks' tree too: with the
    # tree on the workers every update's gather brings back its total only
    monkeypatch.setattr(blocks_mod, "TREE_ON_WORKERS_ABOVE", 1)
    gathered = record_gathers(monkeypatch)
    with distributed.Client(thread_cluster):
        pretrain_stack(float_blocks(DBMCAST(**PRETRAIN), _dask(_binary(), 80), reset=True,
                                    binary=True), [6, 4], n_epochs=2, learning_rate=0.05,
                       batch_size=40, rng=np.random.default_rng(0))
    # 320 rows in minibatches of 40, two epochs, two RBMs
    assert_one_total_per_update(gathered, "_cd1_block", "add_parts", 32)


def test_the_blocks_reconstruction_error_is_the_in_memory_one():
    # the verbose figure of a greedy-stack RBM, summed block by block
    X = _binary()
    rng = np.random.default_rng(0)
    W, bv, bh = rng.normal(size=(12, 6)), rng.normal(size=12), rng.normal(size=6)
    blocks = float_blocks(DBMCAST(**DBM), _dask(X, 70), reset=True, binary=True)
    np.testing.assert_allclose(pretrain_recon_error(blocks, W, bv, bh, 2.0, 1.0),
                               pretrain_recon_error(X, W, bv, bh, 2.0, 1.0), rtol=1e-12)


# ------------------------------------------------------------ early stopping
# A dask array's fit holds out the in-memory rows (the seeded split of the same
# row count), gathers them to the client once and scores them there after every
# pass; the other rows stay in their blocks (RowBlocks.subset) and are the only
# ones trained on. The threshold of early_stopping="auto" is lowered from 5,000
# rows so that tiny models and data run the n_iter="auto" route (Trend, auto_cap).
ES_CASES = [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, objective="marginal", n_iter="auto",
                                            n_iter_no_change=2), _gaussian, id="grbm-auto"),
    pytest.param(GaussianBernoulliRBM, dict(GRBM, objective="marginal", n_iter=15,
                                            early_stopping=True, n_iter_no_change=2,
                                            tol=0.003), _gaussian, id="grbm-plateau"),
    pytest.param(DBMCAST, dict(DBM, n_iter="auto", n_iter_no_change=2), _binary,
                 id="dbm-auto"),
]


@pytest.fixture
def auto_from_100_rows(monkeypatch):
    from skdgm._core import stopping

    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)


def _stop_lines(out):
    return [line for line in out.splitlines()
            if "validation_score" in line or "stopped:" in line]


def _same_stop(a, b):
    return (_same(a, b) and a.validation_scores_ == b.validation_scores_
            and (a.n_iter_, a.best_iter_, a.stopping_reason_)
            == (b.n_iter_, b.best_iter_, b.stopping_reason_))


@pytest.mark.parametrize("cls, params, data", ES_CASES)
def test_early_stopping_on_one_block_is_the_in_memory_fit_bit_for_bit(
        cls, params, data, auto_from_100_rows, capsys):
    # the same held-out rows scored by the same code, the same training rows in the
    # same minibatches: the same figures, stop pass, verbose lines and restored best
    X = data()
    a = cls(**params, verbose=1).fit(X)
    out_a = _stop_lines(capsys.readouterr().out)
    b = cls(**params, verbose=1).fit(_dask(X, X.shape[0]))
    out_b = _stop_lines(capsys.readouterr().out)
    assert _same_stop(a, b)
    assert out_b == out_a and out_b[-1].startswith(f"[{cls.__name__}] stopped: ")
    # stopped by the rule (not the cap); under "auto" the best pass (of the smoothed
    # figure) came before the last, so its parameters were restored (in the plateau
    # case the figure still crept up by less than tol: the last pass is the best)
    assert b.n_iter_ == len(b.validation_scores_)
    auto = params["n_iter"] == "auto"
    assert b.stopping_reason_.startswith("converged: trend" if auto else "no improvement")
    assert (b.best_iter_ < b.n_iter_) if auto else (b.best_iter_ == b.n_iter_ < 15)
    # 320 rows hold out 32: 288 are trained on, 8 minibatches of 40 a pass (the
    # update count is the restored best pass's, as in memory)
    assert b.n_updates_ == a.n_updates_ == 8 * b.best_iter_


@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, n_iter=6, early_stopping=True,
                                            n_iter_no_change=2, tol=0.003), _gaussian,
                 id="grbm-joint"),
    pytest.param(DBMCAST, dict(DBM, n_iter="auto", n_iter_no_change=2), _binary,
                 id="dbm-auto"),
    pytest.param(DBMCAST, dict(PRETRAIN, n_iter=6, early_stopping=True, n_iter_no_change=2),
                 _binary, id="dbm-pretrained"),
])
def test_early_stopping_is_the_same_for_any_workers(cls, params, data, thread_cluster,
                                                    auto_from_100_rows):
    Xd = _dask(data(), 50)                 # 7 blocks, the slice's rows in several
    local, two, one = fits_without_and_with_workers(thread_cluster,
                                                    lambda: cls(**params).fit(Xd))
    assert _same_stop(local[0], two[0]) and _same_stop(local[0], one[0])
    assert local[0].validation_scores_ and local[0].best_iter_ >= 1


@pytest.mark.parametrize("cls, params, data, tasks", [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, n_iter=3, early_stopping=True), _gaussian,
                 {"positive_block"}, id="grbm"),
    pytest.param(DBMCAST, dict(PRETRAIN, n_iter=3, early_stopping=True), _binary,
                 {"positive_block", "_cd1_block"}, id="dbm-pretrained"),
])
def test_early_stopping_never_trains_on_the_held_out_rows(cls, params, data, tasks,
                                                          monkeypatch):
    from skdgm._core.stopping import held_out_split

    trained, taken = spy_on_rows(monkeypatch, tasks)     # the training tasks' rows
    est = cls(**params).fit(_dask(data(), 50))      # 7 blocks
    val, train = held_out_split(320, 32, params["random_state"])
    assert len(est.validation_scores_) == est.n_iter_ == 3
    assert trained == set(train.tolist())
    # gathered: the slice once; then only the DBM's chains' start, training rows
    assert taken[0] == set(val.tolist())
    assert len(taken) == (1 if cls is GaussianBernoulliRBM else 2)
    assert all(t <= set(train.tolist()) for t in taken[1:])


def _scaled_plus_block(block, scale, b):
    return np.asarray(block) * scale + b


@pytest.mark.parametrize("with_client", [False, True])
def test_derived_rows_of_a_subset_are_those_of_its_whole_blocks(with_client, thread_cluster):
    # DBMCAST's pre-training on an early-stopped fit's training rows: the sampled
    # layer is derived from the whole blocks (one seed each) and the subset keeps its rows
    X = _binary()
    keep = np.flatnonzero(np.arange(320) % 3 != 1)
    extras = lambda parts: [float(b) for b, _ in parts]      # noqa: E731 - the block number
    kwargs = dict(n_features=12, dtype=np.float64, summarize=float_summary)
    client = distributed.Client(thread_cluster) if with_client else None
    try:
        blocks = float_blocks(DBMCAST(**DBM), _dask(X, 50), reset=True, binary=True)
        whole = blocks.derive(_scaled_plus_block, 2.0, extras, **kwargs)
        expected = 2 * X + np.repeat(np.arange(7), 50)[:320, None]
        np.testing.assert_array_equal(whole[:].toarray(), expected)
        sub = blocks.subset(keep).derive(_scaled_plus_block, 2.0, extras, **kwargs)
        assert sub.shape == (keep.size, 12)
        np.testing.assert_array_equal(sub[:].toarray(), expected[keep])
        np.testing.assert_allclose(sub.summaries[0]["col_sum"],
                                   expected[keep[keep < 50]].sum(axis=0))
    finally:
        if client is not None:
            client.close()


@pytest.mark.parametrize("with_client", [False, True])
def test_whole_of_a_subset_is_the_array_it_was_taken_from(with_client, thread_cluster):
    X = _binary()
    keep = np.flatnonzero(np.arange(320) % 3 != 1)
    client = distributed.Client(thread_cluster) if with_client else None
    try:
        blocks = float_blocks(DBMCAST(**DBM), _dask(X, 50), reset=True, binary=True)
        assert blocks.whole() is blocks
        sub = blocks.subset(keep)
        for whole in (sub.whole(), sub.subset(np.arange(0, keep.size, 2)).whole()):
            assert whole.shape == blocks.shape == (320, 12)
            assert whole.nnz == blocks.nnz == np.count_nonzero(X)
            for got, want in zip(whole.summaries, blocks.summaries, strict=True):
                np.testing.assert_array_equal(got["col_sum"], want["col_sum"])
            np.testing.assert_array_equal(whole[:].toarray(), X)
        assert sub.shape == (keep.size, 12)         # the subset itself is left as it was
        np.testing.assert_array_equal(sub[:].toarray(), X[keep])
    finally:
        if client is not None:
            client.close()


def test_float32_blocks_train_a_float32_model():
    X = _gaussian().astype(np.float32)
    est = GaussianBernoulliRBM(**GRBM).fit(_dask(X, 80))
    assert est.components_.dtype == np.float32
    dbm = DBMCAST(**DBM).fit(_dask(_binary().astype(np.float32), 80))
    assert dbm.coefs_[0].dtype == np.float32


# ------------------------------------------------------------------- memory
def _make_gaussian_block(block_id, n_rows, d):
    return np.random.default_rng(block_id[0]).standard_normal((n_rows, d))


def _make_binary_block(block_id, n_rows, d):
    return (np.random.default_rng(block_id[0]).random((n_rows, d)) < 0.2).astype(np.float64)


@pytest.mark.parametrize("cls, params, make, n", [
    # The GRBM's negative chains are batch_size rows, and its sampler's temporaries
    # several times that (about 8 MB at 500 x 750): twice the rows, so that the
    # chains stay small next to the data.
    pytest.param(GaussianBernoulliRBM, dict(n_components=8, n_iter=1, batch_size=500,
                                            cd_steps=1, random_state=0),
                 _make_gaussian_block, 16_000, id="grbm"),
    pytest.param(DBMCAST, dict(n_components=(8, 4), n_iter=1, batch_size=1000, n_chains=50,
                               pretrain=False, random_state=0),
                 _make_binary_block, 8_000, id="dbm"),
    pytest.param(DBMCAST, dict(n_components=(8, 4), n_iter=1, batch_size=1000, n_chains=50,
                               pretrain=True, pretrain_n_iter=1, random_state=0),
                 _make_binary_block, 8_000, id="dbm-pretrained"),
])
def test_the_client_never_holds_the_data(remote_cluster, cls, params, make, n):
    # 48 or 96 MB made on the workers (never on the client); the client holds the
    # parameters, the negative chains and the sums. The scheduler runs in its own
    # process (remote_cluster: in a LocalCluster it shares the client's), and the
    # client's log of sent messages keeps none of the parameters (forget_sent).
    d, rows = 750, 1_000
    Xd = da.map_blocks(make, n_rows=rows, d=d, chunks=((rows,) * (n // rows), (d,)),
                       dtype=np.float64)
    est = cls(**params)
    assert_the_client_never_holds(lambda: est.fit(Xd), Xd, remote_cluster)
    assert est.n_updates_ == n // params["batch_size"]


@pytest.mark.parametrize("cls, params, make, n", [
    pytest.param(GaussianBernoulliRBM, dict(n_components=8, n_iter=2, batch_size=500,
                                            cd_steps=1, early_stopping=True, random_state=0),
                 _make_gaussian_block, 16_000, id="grbm"),
    pytest.param(DBMCAST, dict(n_components=(8, 4), n_iter=2, batch_size=1000, n_chains=50,
                               pretrain=False, early_stopping=True, random_state=0),
                 _make_binary_block, 16_000, id="dbm"),
])
def test_with_early_stopping_the_client_holds_the_held_out_slice(remote_cluster, cls, params,
                                                                 make, n):
    # Early stopping gathers its held-out slice (validation_fraction, 10 % of the
    # rows) to the client once and scores it there after every pass. Over the same
    # fit without it, the client's peak may grow by the slice and what scoring it
    # holds at once (the float64 temporaries of the GRBM's free energy, of the DBM's
    # mean-field bound and its AIS runs): at most 3 slices in float64 (the DBM's
    # bound works on the slice in float64). Gathering the data brings
    # 10 slices: the measurement of Xd.compute() through the same client must break
    # the bound. 96 MB of data: the quarter holds with the slice too.
    d, rows = 750, 1_000
    Xd = da.map_blocks(make, n_rows=rows, d=d, chunks=((rows,) * (n // rows), (d,)),
                       dtype=np.float64)
    plain = client_peak(lambda: cls(**dict(params, early_stopping=False)).fit(Xd),
                        remote_cluster)
    est = cls(**params)
    peak = client_peak(lambda: est.fit(Xd), remote_cluster)
    held = int(np.ceil(0.1 * n)) * d * 8
    gathered = client_peak(Xd.compute, remote_cluster)
    print(f"client peak {plain / 1e6:.1f} MB without early stopping, {peak / 1e6:.1f} MB "
          f"with; held-out slice {held / 1e6:.1f} MB in float64; the data gathered "
          f"{gathered / 1e6:.1f} MB")
    assert len(est.validation_scores_) == est.n_iter_ == 2
    assert peak - plain <= 3 * held, (peak, plain, held)
    assert gathered > 3 * held, (gathered, held)
    assert peak < Xd.nbytes / 4, (peak, Xd.nbytes)


# --------------------------------------------------------- fault tolerance
@pytest.mark.parametrize("cls, params, data", [
    pytest.param(GaussianBernoulliRBM, dict(GRBM, n_iter=2), _gaussian, id="grbm"),
    pytest.param(DBMCAST, dict(DBM, n_iter=2), _binary, id="dbm"),
])
def test_a_worker_killed_mid_fit_changes_nothing(process_cluster, monkeypatch, cls, params,
                                                 data):
    # SIGKILL to a worker process between two updates; its blocks are recomputed
    # from their lineage and its tasks re-run with the seeds they carry
    Xd = _dask(data(n=640), 80)
    reference = cls(**params).fit(Xd)            # no client: blocks computed locally
    est, calls = fit_killing_a_worker(lambda: cls(**params).fit(Xd), process_cluster,
                                      monkeypatch, 5)
    assert est.n_updates_ == 32 and calls >= 32     # (+1 per pass: the GRBM's recon figure)
    assert _same(reference, est)


# ------------------------------------------- one update's positive statistics
def _one_minibatch(dtype=np.float64):
    from skdgm.grbm._train import init_params
    X = _gaussian(n=200)
    est = GaussianBernoulliRBM(**dict(GRBM, dtype=np.dtype(dtype).name))
    blocks = float_blocks(est, _dask(X, 50), reset=True)      # 4 blocks
    params = init_params(X.shape[1], 6, 0.3, dtype, np.random.default_rng(5))
    rows = np.sort(np.random.default_rng(6).permutation(200)[:60])   # rows of 3 blocks
    return params, X[rows].astype(dtype), blocks[rows]


@pytest.mark.parametrize("dtype, rtol", [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_four_blocks_give_the_in_memory_positive_statistics(dtype, rtol):
    # Issue 28's diagnosis: the sums of Eqs. (33)-(36) over blocks, scaled by the
    # minibatch size, are the in-memory means up to the summation order's rounding
    from skdgm.grbm._train import positive_phase
    params, V, sel = _one_minibatch(dtype)
    mem, _, fe_mem = positive_phase(params, V, np.random.default_rng(0), "marginal", True)
    dsk, _, fe_dsk = positive_phase(params, sel, np.random.default_rng(0), "marginal", True)
    for a, b in zip(mem, dsk):
        assert a.dtype == b.dtype == dtype
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol * np.max(np.abs(a)))
    assert fe_dsk() == pytest.approx(fe_mem(), rel=rtol)


def test_sampled_block_statistics_are_unbiased_like_the_in_memory_ones():
    # Issue 28's diagnosis, objective="joint": each block samples h from its own
    # stream, so one update differs from the in-memory one, but over streams both
    # average to the mean-field statistics (Eqs. 33-36) with the same spread; a
    # bias here (a wrong scaling, p where h belongs) would train another model.
    from skdgm.grbm._train import positive_phase
    params, V, sel = _one_minibatch()
    exact, _, _ = positive_phase(params, V, None, "marginal", False)
    R = 200
    draws = {"memory": [], "blocks": []}
    for r in range(R):
        draws["memory"].append(positive_phase(params, V, np.random.default_rng(r),
                                              "joint", False)[0])
        draws["blocks"].append(positive_phase(params, sel, np.random.default_rng(r),
                                              "joint", False)[0])
    spread = {}
    for where, runs in draws.items():
        for field in ("W", "b", "log_var"):
            x = np.array([getattr(run, field) for run in runs])
            se = x.std(axis=0, ddof=1) / np.sqrt(R)
            assert np.all(se > 0)
            # about 90 entries: |z| > 4.5 by chance has probability < 1e-3
            z = (x.mean(axis=0) - getattr(exact, field)) / se
            assert np.max(np.abs(z)) < 4.5, (where, field, np.max(np.abs(z)))
            spread[where, field] = np.sum(x.var(axis=0, ddof=1))
        # mu's statistic does not involve h: the same on every stream
        np.testing.assert_allclose(np.array([run.mu for run in runs]),
                                   np.broadcast_to(exact.mu, (R,) + exact.mu.shape),
                                   rtol=1e-12, atol=1e-12)
    for field in ("W", "b", "log_var"):
        # independent Bernoulli draws per row either way: the summed variances
        # agree within ~3 standard errors of a variance from R draws, sqrt(2 / R)
        ratio = spread["blocks", field] / spread["memory", field]
        assert abs(np.log(ratio)) < 3 * np.sqrt(2 / (R - 1)) * np.sqrt(2), (field, ratio)

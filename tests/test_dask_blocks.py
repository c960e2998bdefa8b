"""Training on dask arrays where the rows live (skdgm._core.blocks, issue 28).

DeepLDA's per-row work runs block by block: with a distributed client on the
workers holding the blocks, without one locally, one block at a time. The tests
check that the answer depends on the blocks only (not on the workers or on the
presence of a client), that one block reproduces the in-memory fit bit for bit,
that bad entries are caught where they live with the in-memory messages, that the
client never holds the data, and that a worker lost mid-fit changes nothing.
"""

import asyncio
from collections import deque
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

from _dask_fits import (assert_every_call_raises,  # noqa: E402
                        assert_one_total_per_update, assert_the_client_never_holds,
                        fit_killing_a_worker, keys_in_memory, record_gathers,
                        record_submits, spy_on_rows,
                        fits_without_and_with_workers, process_cluster,  # noqa: F401
                        remote_cluster,  # noqa: F401
                        thread_cluster)  # noqa: F401 - fixtures
from skdgm import DeepLDA, GaussianBernoulliRBM  # noqa: E402
from skdgm._core import blocks as blocks_mod  # noqa: E402
from skdgm.deep_lda import _train  # noqa: E402
from skdgm._core.blocks import (_TAG, RowBlocks, float_blocks,  # noqa: E402
                                forget_sent, sum_parts, tree_reduce)

CHEAP = dict(n_components=(6, 3), n_iter=2, batch_size=60, local_burn_in=2,
             local_samples=2, n_posterior_samples=2, random_state=3)


def _counts(n=360, V=40, seed=0):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(V, 0.2), size=4)
    weights = rng.dirichlet(np.full(4, 0.5), size=n)
    return sp.csr_matrix(rng.poisson(25 * weights @ topics).astype(np.float64))


def _same(a, b):
    return (all(np.array_equal(x, y) for x, y in zip(a.topics_, b.topics_))
            and np.array_equal(a.r_, b.r_)
            and a.history_["train_perplexity"] == b.history_["train_perplexity"])


def _dask(X, rows, sparse=True):
    if sparse:
        return da.from_array(X, chunks=(rows, X.shape[1]), asarray=False)
    return da.from_array(X.toarray(), chunks=(rows, X.shape[1]))


# --------------------------------------------------------------- same answer
def test_one_block_is_the_in_memory_fit_bit_for_bit():
    X = _counts()
    a = DeepLDA(**CHEAP).fit(X)
    b = DeepLDA(**CHEAP).fit(_dask(X, X.shape[0]))
    assert _same(a, b)
    assert b.n_updates_ == a.n_updates_ == 12
    np.testing.assert_array_equal(a._length_values, b._length_values)
    np.testing.assert_array_equal(a._length_counts, b._length_counts)


def test_partial_fit_with_blocks_aligned_to_minibatches_is_the_in_memory_stream():
    # stream order: each minibatch of 60 documents is exactly one block of 60
    X = _counts()
    a = DeepLDA(**CHEAP).partial_fit(X[:180]).partial_fit(X[180:])
    Xd = _dask(X, 60, sparse=False)
    b = DeepLDA(**CHEAP).partial_fit(Xd[:180]).partial_fit(Xd[180:])
    assert _same(a, b)


def test_blocks_decide_the_answer_not_workers_or_client(thread_cluster):
    X = _counts()
    Xd = _dask(X, 50)                      # 8 blocks, minibatches span several
    local, two, one = fits_without_and_with_workers(
        thread_cluster, lambda: DeepLDA(**CHEAP).fit(Xd),
        lambda: DeepLDA(**CHEAP).fit(Xd[:180]).partial_fit(Xd[180:]))
    assert all(_same(local[0], f[0]) and _same(local[1], f[1]) for f in (two, one))
    # three workers, and two of two threads each (four slots): each slot's task
    # sums its own blocks first, the tree above them the rest, in the same order
    for n_workers, threads in ((3, 1), (2, 2)):
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                      processes=False, dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            assert _same(local[0], DeepLDA(**CHEAP).fit(Xd))
    # and a fit over other blocks is another (valid) chain
    other = DeepLDA(**CHEAP).fit(_dask(X, 90))
    assert not _same(local[0], other)


def test_the_client_receives_one_statistics_array_per_update(thread_cluster, monkeypatch):
    # the blocks' statistics are summed by a tree on the workers: every update's
    # gather brings back one total, not one part per block of the minibatch
    Xd = _dask(_counts(), 50)              # 8 blocks; minibatches of 60 span 2-8
    monkeypatch.setattr(blocks_mod, "TREE_ON_WORKERS_ABOVE", 1)
    gathered = record_gathers(monkeypatch)
    with distributed.Client(thread_cluster):
        est = DeepLDA(**CHEAP).fit(Xd)
    assert est.n_updates_ == 12
    assert_one_total_per_update(gathered, "block_stats", "add_block_stats", 12)


def test_the_tree_on_the_workers_or_on_the_client_gives_the_same_fit(thread_cluster,
                                                                      monkeypatch):
    # few parts are gathered and combined by the same tree on the client, many by a
    # tree on the workers: the shape, hence every rounding, is the same
    Xd = _dask(_counts(), 50)
    fits = []
    for above in (1, 1_000):
        monkeypatch.setattr(blocks_mod, "TREE_ON_WORKERS_ABOVE", above)
        gathered = record_gathers(monkeypatch)
        with distributed.Client(thread_cluster):
            fits.append(DeepLDA(**CHEAP).fit(Xd))
        totals = [keys for keys in gathered if any(k.startswith("add_block_stats") for k in keys)]
        if above == 1:
            assert totals and all(len(keys) == 1 for keys in totals)
        else:
            # the workers' parts come back one by one, each as the client's tree
            # reaches it (a minibatch on both workers: two, one a worker)
            assert not totals
            parts = [keys for keys in gathered if any(k.startswith("block_stats") for k in keys)]
            assert len(parts) > 12 and all(len(keys) == 1 for keys in parts)
    assert _same(fits[0], fits[1])


def test_the_blocks_tree_sum_is_their_flat_sum():
    # a minibatch over 5 blocks whose word sets differ: the tree's total has the
    # union of the words and equals the flat sum in block order to rounding
    # (exactly where a word's row comes from one block only: copied, not added)
    X = _counts(n=200, V=40, seed=2).tolil()
    X[:40, :10] = 0                        # block 0 lacks words 0-9, block 4 words 30-39
    X[160:, 30:] = 0
    X[40:, 39] = 0                         # word 39 in block 0 alone
    X[:40, 39] = 3
    X = X.tocsr()
    est = DeepLDA(n_components=(6, 3), random_state=0).fit(X[:20])
    priors = dict(est._local_priors(), chunk_docs=25)
    shared = {"chunk_docs": priors.pop("chunk_docs"), "kwargs": _train.local_kwargs(
        est.topics_, est.r_, n_burn=2, n_collect=3, collect_topics=True, keep_theta=False,
        **priors)}
    seeds = np.random.SeedSequence(1).spawn(10)
    parts = [_train.block_stats(X[40 * b:40 * b + 40], shared, seeds[2 * b:2 * b + 2])
             for b in range(5)]
    flat = _train.combine_block_stats(parts, 40, 6)
    total = tree_reduce(parts, _train.add_block_stats)
    every = np.unique(np.concatenate([p["words"] for p in parts]))
    assert all(p["words"].size < every.size for p in (parts[0], parts[4]))
    np.testing.assert_array_equal(total["words"], every)
    tree = _train.combine_block_stats([total], 40, 6)
    for a, b in zip(tree["topic_counts"], flat["topic_counts"]):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)
    only_first = np.setdiff1d(parts[0]["words"], np.concatenate([p["words"] for p in parts[1:]]))
    assert only_first.size
    np.testing.assert_array_equal(tree["topic_counts"][0][only_first],
                                  flat["topic_counts"][0][only_first])
    np.testing.assert_allclose(tree["top_tables"], flat["top_tables"], rtol=1e-13)
    for key in ("q_top", "loglik", "n_words"):
        assert tree[key] == pytest.approx(flat[key], rel=1e-13)


def _n_rows(block):
    return block.shape[0]


def test_blocks_are_spread_over_the_workers(thread_cluster):
    Xd = _dask(_counts(), 45)              # 8 blocks
    with distributed.Client(thread_cluster) as client:
        blocks = RowBlocks(Xd, sp.csr_matrix, _n_rows, client=client)
        holders = client.who_has(blocks._futures)
        per_worker = {}
        for f in blocks._futures:
            (w,) = holders[f.key]
            per_worker[w] = per_worker.get(w, 0) + 1
        blocks.release()
    assert sorted(per_worker.values()) == [4, 4]


def test_dense_and_sparse_blocks_agree(thread_cluster):
    X = _counts()
    with distributed.Client(thread_cluster):
        a = DeepLDA(**CHEAP).fit(_dask(X, 75))
        b = DeepLDA(**CHEAP).fit(_dask(X, 75, sparse=False).astype(np.int32))
    assert _same(a, b)


def test_blocks_split_rows_in_order():
    Xd = da.zeros((10, 2), chunks=((3, 3, 4), (2,)))
    blocks = RowBlocks(Xd, np.asarray, len)
    assert blocks.summaries == [3, 3, 4]
    parts = blocks.split(np.array([0, 2, 3, 9]))
    assert [(b, r.tolist()) for b, r in parts] == [(0, [0, 2]), (1, [0]), (2, [3])]
    assert blocks.split(slice(2, 7)) == [(0, slice(2, 3)), (1, slice(0, 3)), (2, slice(0, 1))]


@pytest.mark.parametrize("with_client", [False, True])
def test_a_subset_reads_only_its_rows(with_client, thread_cluster):
    X = np.arange(20.0).reshape(10, 2)
    Xd = da.from_array(X, chunks=((3, 3, 4), (2,)))
    keep = np.array([0, 2, 4, 5, 9])

    def run():
        blocks = RowBlocks(Xd, np.asarray, len, client=blocks_mod.active_client())
        sub = blocks.subset(keep)
        # row i of the subset is row keep[i]; block 1 holds rows 4 and 5 (local 1, 2)
        parts = sub.split(np.array([1, 2, 3]))
        assert [(b, r.tolist()) for b, r in parts] == [(0, [2]), (1, [1, 2])]
        assert sub.shape == (5, 2) and sub.summaries == [2, 2, 1]
        assert sub.nnz == np.count_nonzero(X[keep])
        np.testing.assert_array_equal(sub[np.array([4, 0])].toarray(), X[[9, 0]])
        sums = sub.map_rows(_rows_sum, slice(1, 5), (np.zeros(2),),
                            lambda parts: [None] * len(parts), combine=np.add)
        np.testing.assert_array_equal(sums[0], X[keep[1:5]].sum(axis=0))
        # a subset of a subset is a subset of the whole
        np.testing.assert_array_equal(sub.subset([1, 4])[:].toarray(), X[[2, 9]])

    if with_client:
        with distributed.Client(thread_cluster):
            run()
    else:
        run()
    with pytest.raises(ValueError, match="increasing row indices"):
        RowBlocks(Xd, np.asarray, len).subset([3, 1])


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad, message", [
    (np.nan, "NaN"),
    (-1.0, "non-negative"),
    (0.5, "non-integer"),
])
@pytest.mark.parametrize("with_client", [False, True])
def test_a_bad_entry_in_one_block_raises_and_changes_nothing(bad, message, with_client,
                                                             thread_cluster):
    X = _counts().toarray()
    est = DeepLDA(**CHEAP).fit(X)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v)
              for k, v in est.__dict__.items()}
    topics = [t.copy() for t in est.topics_]
    X_bad = X.copy()
    X_bad[300, 7] = bad                    # in the last of four blocks
    Xd = da.from_array(X_bad, chunks=(90, X.shape[1]))
    assert_every_call_raises((est.fit, est.partial_fit, DeepLDA(**CHEAP).fit), Xd, message,
                             thread_cluster if with_client else None)
    assert all(np.array_equal(a, b) for a, b in zip(topics, est.topics_))
    assert est.n_updates_ == before["n_updates_"] and est.n_iter_ == before["n_iter_"]


def test_binary_link_checks_every_block():
    X = (_counts().toarray() > 0).astype(float)
    X[5, 3] = 2.0
    with pytest.raises(ValueError, match="binary"):
        DeepLDA(**CHEAP, link="bernoulli").fit(da.from_array(X, chunks=(100, X.shape[1])))


def test_client_side_checks_name_the_problem():
    X = _counts().toarray()
    with pytest.raises(ValueError, match="rechunk"):
        DeepLDA(**CHEAP).fit(da.from_array(X, chunks=(100, 20)))
    unknown = da.from_array(X, chunks=(100, X.shape[1]))
    unknown = unknown[unknown[:, 0] >= 0]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        DeepLDA(**CHEAP).fit(unknown)
    with pytest.raises(ValueError, match="gibbs"):
        DeepLDA(**{**CHEAP, "sampler": "gibbs", "batch_size": 200}).fit(
            da.from_array(X, chunks=(100, 40)))
    est = DeepLDA(**CHEAP).fit(X)
    with pytest.raises(ValueError, match="40 features"):
        est.partial_fit(da.from_array(X[:, :30], chunks=(100, 30)))


# ------------------------------------------------------------------- memory
def _make_block(block_id, n_rows, V):
    rng = np.random.default_rng(block_id[0])
    return rng.poisson(0.05, (n_rows, V)).astype(np.float64)


def test_the_client_never_holds_the_data(remote_cluster):
    # 48 MB of counts made on the workers (never on the client)
    n, V, rows = 8_000, 750, 1_000
    Xd = da.map_blocks(_make_block, n_rows=rows, V=V, chunks=((rows,) * (n // rows), (V,)),
                       dtype=np.float64)
    est = DeepLDA(n_components=(5,), n_iter=1, batch_size=2_000, local_burn_in=1,
                  local_samples=1, random_state=0)
    assert_the_client_never_holds(lambda: est.fit(Xd), Xd, remote_cluster)
    assert est.n_updates_ == 4


def _logged_graphs(client):
    """The keys of every update-graph message in the client's log of sent batches."""
    return [key for batch in client.scheduler_comm.recent_message_log
            if isinstance(batch, list) for m in batch if m.get("op") == "update-graph"
            for key in m["keys"]]


def _rows_sum(rows, shared, extra):
    return rows.sum(axis=0) + shared[0][:rows.shape[1]]


def test_the_client_logs_no_parameters_of_a_fit(thread_cluster):
    # distributed logs the last 1,000 batches the client sent (developer
    # debugging), each message holding its tasks' arguments: every update's
    # parameters would stay on the client. RowBlocks drops its own messages
    # (prepare, summaries, updates, gathered rows) and leaves the others.
    X = np.arange(600.0).reshape(100, 6)
    big = np.ones(20_000)
    with distributed.Client(thread_cluster) as client:
        mine = client.submit(np.sum, np.ones(10), key="users-own-task")
        assert mine.result() == 10
        blocks = float_blocks(GaussianBernoulliRBM(), da.from_array(X, chunks=(30, 6)),
                              reset=True)
        for _ in range(3):          # rows 10-94 lie in 4 blocks of 30
            sums = blocks[10:95].map(_rows_sum, (big,), lambda parts: [None] * len(parts))
        np.testing.assert_array_equal(sum(sums), X[10:95].sum(axis=0) + 4)
        np.testing.assert_array_equal(blocks[[50, 3]].toarray(), X[[50, 3]])
        logged = _logged_graphs(client)
        assert "users-own-task" in logged
        assert not [k for k in logged if "skdgm-rows" in str(k)], logged
        blocks.release()


def test_the_parameters_go_out_once_per_update_and_reach_every_worker_by_copies(
        thread_cluster, monkeypatch):
    # a spy on the client: each update sends its parameters once (one task holds
    # them, placed with the first block), one copy task (fed by that task's
    # future) is placed on the other worker, and one task per worker runs all of
    # its blocks, reading the copy on its worker and never holding the arrays;
    # all are released after
    X = np.arange(600.0).reshape(100, 6)
    big = np.ones(20_000)
    with distributed.Client(thread_cluster) as client:
        blocks = float_blocks(GaussianBernoulliRBM(), da.from_array(X, chunks=(30, 6)),
                              reset=True)
        homes = blocks._homes
        assert len(set(homes)) == 2 and homes[0] == homes[1] != homes[2] == homes[3]
        submitted = record_submits(monkeypatch)
        keys = []
        for update in range(3):     # rows 10-94 lie in 4 blocks of 30
            shared = (big + update,)
            sums = blocks[10:95].map(_rows_sum, shared, lambda parts: [None] * len(parts))
            np.testing.assert_array_equal(sum(sums), X[10:95].sum(axis=0) + 4 * (1 + update))
            mine = submitted[-4:]           # this update's root, copy and 2 worker tasks
            assert len(submitted) == 4 * (update + 1)
            (_, root_args, root_kw, root), (_, copy_args, copy_kw, copy) = mine[:2]
            assert root_args == (shared,) and root_kw["workers"] == [homes[0]]
            assert copy_args[0].key == root.key and copy_kw["workers"] == [homes[2]]
            for first, (func, args, kw, _) in zip((0, 2), mine[2:]):
                assert func is blocks_mod._on_slot and args[0] is _rows_sum
                assert kw["workers"] == [homes[first]]
                assert [leaf[0].key for leaf in args[2]] == [
                    blocks._futures[b].key for b in (first, first + 1)]
                assert not any(a is shared or a is shared[0] for a in args)
                assert args[3].key == (root if first == 0 else copy).key
            keys += [root.key, copy.key]
        carrying = [args for _, args, _, _ in submitted
                    if any(isinstance(a, tuple) and a and a[0] is not big
                           and getattr(a[0], "shape", None) == big.shape for a in args)]
        assert len(carrying) == 3       # the arrays left the client once per update
        monkeypatch.undo()
        assert keys_in_memory(client, keys) == []
        blocks.release()


def _one_task_for_all(self, shared, parts):
    """The route before the copies: one task, fetched by every worker from its holder."""
    return [self._submit(blocks_mod._identity, shared)] * len(parts)


def test_the_copies_and_one_task_for_all_give_the_same_fit(process_cluster, monkeypatch):
    # worker processes (the parameters serialised on every hop): the tree of
    # copies and the single task fetched by every worker fit the same
    Xd = _dask(_counts(), 50)       # a minibatch of 60 spans 2 blocks, one per worker
    fits = []
    for copies in (True, False):
        if not copies:
            monkeypatch.setattr(RowBlocks, "_share", _one_task_for_all)
        submitted = record_submits(monkeypatch)
        with distributed.Client(process_cluster) as client:
            client.wait_for_workers(2, timeout=60)
            fits.append(DeepLDA(**CHEAP).fit(Xd))
        monkeypatch.undo()
        sends = sum(f is blocks_mod._identity for f, *_ in submitted)
        assert sends == (2 if copies else 1) * fits[-1].n_updates_, sends
    assert _same(fits[0], fits[1])
    assert not _same(fits[0], DeepLDA(**dict(CHEAP, random_state=4)).fit(Xd))


class _Batch(list):
    """A logged batch that counts how often :func:`forget_sent` rewrote it."""

    def __setitem__(self, index, value):
        self.scrubs = getattr(self, "scrubs", 0) + 1
        super().__setitem__(index, value)


class _LogOnlyClient:
    """What :func:`forget_sent` reads of a client: the log of sent batches, and ``sync``."""

    def __init__(self, maxlen):
        self.scheduler_comm = SimpleNamespace(recent_message_log=deque(maxlen=maxlen))

    def sync(self, func):
        return asyncio.run(func())


def _graph(key):
    return {"op": "update-graph", "keys": [key]}


def test_forget_sent_scans_only_the_batches_logged_since_its_last_call():
    # after every update the log holds up to 1,000 batches, all scrubbed before:
    # only the ones appended since the last call are visited
    client = _LogOnlyClient(maxlen=6)
    log = client.scheduler_comm.recent_message_log
    other = {"op": "heartbeat"}
    old = [_Batch([_graph(f"a{_TAG}{i}"), other]) for i in range(3)]
    log.extend(old)
    forget_sent(client)
    assert [b.scrubs for b in old] == [1, 1, 1]
    assert all(list(b) == [other] for b in old)
    new = [_Batch([_graph(f"b{_TAG}0"), _graph("users-own")]),
           _Batch([_graph("raw-key"), _graph("users-own")])]
    log.extend(new)
    log.append("large-message")           # distributed's stand-in for a batch not kept
    forget_sent(client, keys=["raw-key"])
    assert [b.scrubs for b in old] == [1, 1, 1]        # not visited again
    assert [b.scrubs for b in new] == [1, 1]
    assert all(list(b) == [_graph("users-own")] for b in new)
    forget_sent(client)                   # nothing new: nothing visited
    assert [b.scrubs for b in old + new] == [1] * 5
    # more batches than the log keeps since the last call: its mark has left the
    # log, and every batch still in it is scanned, once
    later = [_Batch([_graph(f"c{_TAG}{i}"), other]) for i in range(7)]
    log.extend(later)
    forget_sent(client)
    assert [getattr(b, "scrubs", 0) for b in later] == [0] + [1] * 6
    assert all(list(b) == [other] for b in log)


def _rows_sum_noisy(rows, shared, extra):
    return rows.sum(axis=0) * np.pi


@pytest.mark.parametrize("n_blocks", [1, 2, 5, 8])
def test_a_tree_reduction_is_the_flat_sum(thread_cluster, n_blocks):
    # integer-valued sums are exact in any order: the tree's total equals the flat
    # sum in block order bit for bit; with rounding (times pi) the tree is its own
    # order, the same with or without a client, and within rounding of the flat sum
    X = np.arange(1200.0).reshape(200, 6)
    none = lambda parts: [None] * len(parts)      # noqa: E731
    Xd = da.from_array(X, chunks=(-(-200 // n_blocks), 6))
    est = GaussianBernoulliRBM()
    local = float_blocks(est, Xd, reset=True, dtype=np.float64)
    with distributed.Client(thread_cluster):
        remote = float_blocks(est, Xd, reset=True, dtype=np.float64)
        for func in (_rows_sum, _rows_sum_noisy):
            flat = sum_parts(remote[3:190].map(func, (np.zeros(6),) if func is _rows_sum
                                               else None, none))
            tree = remote[3:190].map(func, (np.zeros(6),) if func is _rows_sum else None,
                                     none, combine=np.add)
            assert len(tree) == 1                 # only the total came back
            here = local[3:190].map(func, (np.zeros(6),) if func is _rows_sum else None,
                                    none, combine=np.add)
            np.testing.assert_array_equal(tree[0], here[0])
            if func is _rows_sum:
                np.testing.assert_array_equal(tree[0], flat)
                np.testing.assert_array_equal(tree[0], X[3:190].sum(axis=0))
            else:
                np.testing.assert_allclose(tree[0], flat, rtol=1e-14)
        remote.release()


@pytest.mark.parametrize("owners", [[0], [0, 0, 1, 1], [0, 0, 0, 1, 1], [0, 1, 0, 1, 0],
                                    [0, 0, 0, 1, 1, 1, 2, 2], [2, 0, 1, 1, 0, 0, 2]])
def test_a_tree_split_over_slots_combines_what_the_whole_tree_combines(owners):
    # every slot sums its own subtrees and the rest of the tree sums theirs: the
    # same operands, in the same order, as the tree over all the blocks
    combine = lambda a, b: f"({a}{b})"      # noqa: E731 - records the order
    plans, top = blocks_mod.split_tree(owners)
    assert all(owners[i] == slot for slot, plan in plans.items()
               for expr in plan for i in blocks_mod._expr_leaves(expr))
    values = {slot: [blocks_mod._evaluate(e, str, combine) for e in plan]
              for slot, plan in plans.items()}
    total = blocks_mod._evaluate(top, lambda e: values[e.source][e.index], combine)
    assert total == tree_reduce([str(i) for i in range(len(owners))], combine)
    # contiguous runs: one value a slot, whatever is left of the tree above them
    if owners == [0, 0, 1, 1]:
        assert plans == {0: [(0, 1)], 1: [(2, 3)]}


def test_blocks_go_to_thread_slots_in_contiguous_runs():
    workers = {"tcp://b": {"nthreads": 1}, "tcp://a": {"nthreads": 2}}
    slots, homes = blocks_mod.spread_blocks(workers, 7)
    assert slots == [0, 0, 0, 1, 1, 2, 2]
    assert homes == ["tcp://a"] * 5 + ["tcp://b"] * 2
    assert blocks_mod.spread_blocks({}, 3) == ([0, 0, 0], [None] * 3)


def test_tree_reduce_pairs_in_a_fixed_shape():
    assert tree_reduce(list("abcde"), lambda a, b: f"({a}{b})") == "(((ab)(cd))e)"
    assert tree_reduce(["a"], lambda a, b: a + b) == "a"
    with pytest.raises(ValueError, match="at least one"):
        tree_reduce([], lambda a, b: a + b)


# --------------------------------------------------------- fault tolerance
@pytest.mark.parametrize("after_update", [3, 20])
def test_a_worker_killed_mid_fit_changes_nothing(process_cluster, monkeypatch, after_update):
    # SIGKILL to a worker process between two updates, the harshest moment for the
    # fit (the next update's parameters and tasks go out while the scheduler has not
    # noticed yet); its blocks are recomputed from their lineage
    X = _counts(n=1200, V=60, seed=5)
    Xd = _dask(X, 150)
    params = dict(CHEAP, n_iter=3, batch_size=100, local_burn_in=4, local_samples=4)
    reference = DeepLDA(**params).fit(Xd)            # no client: blocks computed locally
    est, calls = fit_killing_a_worker(lambda: DeepLDA(**params).fit(Xd), process_cluster,
                                      monkeypatch, after_update)
    assert calls == est.n_updates_ == 36
    assert _same(reference, est)


def _auto_counts(monkeypatch, patience=None):
    # 400 documents hold out 20 (5 %) once the threshold is lowered from 5,000;
    # a shorter patience, a shorter run
    from skdgm._core import stopping
    from skdgm.deep_lda import _defaults

    monkeypatch.setattr(stopping, "AUTO_VALIDATION_MIN_ROWS", 100)
    if patience is not None:
        monkeypatch.setattr(_defaults, "AUTO_PATIENCE", patience)
    return _counts(400), dict(CHEAP, n_iter="auto")


def _stop_lines(out):
    return [line for line in out.splitlines()
            if "validation_score" in line or "burn-in ended" in line or "stopped:" in line]


def test_auto_n_iter_on_one_block_stops_where_the_in_memory_fit_does(monkeypatch, capsys):
    # the held-out slice is gathered and scored as in memory, and one block trains
    # on the same rows with the same streams: the same figures, the same stop pass
    X, params = _auto_counts(monkeypatch)
    a = DeepLDA(**params, verbose=1).fit(X)
    out_a = _stop_lines(capsys.readouterr().out)
    b = DeepLDA(**params, verbose=1).fit(_dask(X, X.shape[0]))
    out_b = _stop_lines(capsys.readouterr().out)
    assert "(no improvement > tol=0.0001 (relative) for 10 passes)" in a.stopping_reason_
    assert b.stopping_reason_ == a.stopping_reason_
    assert b.validation_scores_ == a.validation_scores_
    assert out_b == out_a and any("] stopped: burn-in ended" in line for line in out_b)
    assert _same(a, b)
    # the lengths histogram (for sample) is the training rows' only, as in memory
    np.testing.assert_array_equal(a._length_counts, b._length_counts)
    np.testing.assert_array_equal(a._length_values, b._length_values)
    # n_iter_ counts burn-in and collection passes; 380 training documents in
    # minibatches of 60 are 7 updates a pass
    assert b.n_iter_ == len(b.validation_scores_) + 1
    assert b.n_updates_ == 7 * b.n_iter_


def test_auto_n_iter_on_a_dask_array_is_the_same_for_any_workers(thread_cluster, monkeypatch):
    X, params = _auto_counts(monkeypatch, patience=3)
    Xd = _dask(X, 50)
    local, two, one = fits_without_and_with_workers(
        thread_cluster, lambda: DeepLDA(**params).fit(Xd))
    for fit in (two[0], one[0]):
        assert _same(local[0], fit)
        assert fit.validation_scores_ == local[0].validation_scores_
        assert (fit.n_iter_, fit.stopping_reason_) == (local[0].n_iter_,
                                                      local[0].stopping_reason_)
    assert "for 3 passes" in local[0].stopping_reason_


def test_auto_n_iter_never_trains_on_the_held_out_rows(monkeypatch):
    from skdgm._core.stopping import held_out_split

    X, params = _auto_counts(monkeypatch, patience=3)
    trained, taken = spy_on_rows(monkeypatch, {_train.block_stats.__name__})
    est = DeepLDA(**params).fit(_dask(X, 50))      # 8 blocks
    val, train = held_out_split(400, 20, params["random_state"])
    assert est.n_iter_ == len(est.validation_scores_) + 1 > 1
    assert trained == set(train.tolist())
    # gathered: the slice once, then the documents the layer-1 topics start from
    assert len(taken) == 2 and taken[0] == set(val.tolist())
    assert taken[1] <= set(train.tolist())


def test_auto_n_iter_on_a_dask_array_holds_out_from_5000_documents():
    # the in-memory threshold and slice: 250 of 5,000 documents held out, burn-in
    # ended by their plateau, not the fixed rule's passes
    from skdgm.deep_lda._defaults import resolve_n_iter

    X = np.random.default_rng(0).poisson(0.3, (5000, 10))
    X[X.sum(axis=1) == 0, 0] = 1
    params = dict(n_components=(3,), batch_size=1000, local_burn_in=1, local_samples=1,
                  random_state=0)
    est = DeepLDA(**params).fit(da.from_array(X, chunks=(2500, 10)))
    burn = len(est.validation_scores_)
    assert resolve_n_iter("auto", "tlasgr", 4750, 1000) <= burn < 4 * 10
    assert est.stopping_reason_.startswith(f"burn-in ended after {burn} passes (no improvement")
    assert est.n_iter_ == burn + 1 and est.n_updates_ == 5 * est.n_iter_


def _rows_history(rows, shared, extra, state):
    """A block's state: the extras it saw, in order; its result names them all."""
    state = (state or ()) + (extra,)
    return (float(rows.sum()), state), state


@pytest.mark.parametrize("n_workers, threads", [(1, 1), (2, 1), (3, 1), (2, 2)])
def test_carried_states_stay_per_block_in_one_task_per_slot(n_workers, threads, monkeypatch):
    # map_rows_carry runs map_rows' tasks (one per thread slot and call), yet every
    # block reads back its own state, whatever the slots: the results of three
    # calls are those of the blocks computed one by one without a client
    X = np.arange(120.0).reshape(40, 3)
    Xd = da.from_array(X, chunks=(5, 3))            # 8 blocks, rows 3-37 in all
    rows = slice(3, 38)

    def run(blocks):
        carry, out = None, []
        for call in range(3):
            res, carry = blocks.map_rows_carry(
                _rows_history, rows, None,
                lambda parts, call=call: [10 * b + call for b, _ in parts], carry)
            out.append(res)
        return out

    local = run(RowBlocks(Xd, np.asarray, len))
    assert local[2][5] == (float(X[25:30].sum()), (50, 51, 52))
    with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                  processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        blocks = RowBlocks(Xd, np.asarray, len, client=blocks_mod.active_client())
        submitted = record_submits(monkeypatch)
        assert run(blocks) == local
        slots = sum(f is blocks_mod._on_slot for f, *_ in submitted)
        assert slots == 3 * n_workers * threads, slots
        monkeypatch.undo()
        blocks.release()


def test_sharing_parameters_with_no_rows_says_so(thread_cluster):
    Xd = da.from_array(np.ones((10, 2)), chunks=(5, 2))
    with distributed.Client(thread_cluster) as client:
        blocks = RowBlocks(Xd, np.asarray, len, client=client)
        with pytest.raises(ValueError, match="no rows to share"):
            blocks._share((np.ones(3),), [])
        with pytest.raises(ValueError, match="no rows to share"):
            blocks.map_rows(_rows_sum, np.array([], dtype=np.int64), (np.ones(3),),
                            lambda parts: [None] * len(parts))
        blocks.release()


# ------------------------------------------- malloc on dask's workers (roomy_malloc)
_T, _M = blocks_mod._M_TRIM_THRESHOLD, blocks_mod._M_MMAP_THRESHOLD
_GLIBC = 128 * 1024


def _no_malloc_env(monkeypatch):
    for key in ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                "MALLOC_MMAP_MAX_", "GLIBC_TUNABLES"):
        monkeypatch.delenv(key, raising=False)


def test_fixed_malloc_thresholds_are_read_from_the_environment():
    fixed = blocks_mod._fixed_malloc_thresholds
    assert fixed({}) is None
    assert fixed({"MALLOC_TRIM_THRESHOLD_": "65536"}) == {_T: 65536, _M: _GLIBC}
    assert fixed({"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=4096:glibc.rtld.x=1"}) \
        == {_T: _GLIBC, _M: 4096}
    # any of them switches glibc's dynamic threshold off: its defaults are then fixed
    assert fixed({"MALLOC_TOP_PAD_": "0"}) == {_T: _GLIBC, _M: _GLIBC}
    assert fixed({"GLIBC_TUNABLES": "glibc.rtld.x=1"}) is None


def test_roomy_malloc_sets_the_thresholds_once_and_restores_the_started_ones(monkeypatch):
    calls = []
    monkeypatch.setattr(blocks_mod, "_mallopt", lambda: lambda p, v: calls.append((p, v)))
    _no_malloc_env(monkeypatch)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    roomy = blocks_mod.ROOMY_MALLOC_BYTES
    with blocks_mod.roomy_malloc():
        with blocks_mod.roomy_malloc():     # another task of the process: no change
            pass
        assert calls == [(_T, roomy), (_M, roomy)]
    assert calls[2:] == [(_T, 65536), (_M, _GLIBC)]
    calls.clear()
    with pytest.raises(RuntimeError):       # restored when a task fails too
        with blocks_mod.roomy_malloc():
            raise RuntimeError
    assert calls[2:] == [(_T, 65536), (_M, _GLIBC)]
    calls.clear()
    monkeypatch.setattr(blocks_mod, "ROOMY_MALLOC_BYTES", None)
    with blocks_mod.roomy_malloc():
        pass
    monkeypatch.setattr(blocks_mod, "ROOMY_MALLOC_BYTES", roomy)
    _no_malloc_env(monkeypatch)             # glibc's dynamic threshold: left alone
    with blocks_mod.roomy_malloc():
        pass
    assert calls == []


_FAULTS = """
import resource
import numpy as np
from skdgm._core.blocks import _on_slot

def work(rows, shared, extra):
    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(40):
        a = np.ones(200_000)    # 1.6 MB, as a block task's parameter-sized temporaries
        a += 1
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start

print(work(None, None, None), _on_slot(work, None, [(np.zeros(2), slice(None), None)],
                                       None, [0])[0])
"""


@pytest.mark.skipif(blocks_mod._mallopt() is None, reason="glibc's mallopt only")
def test_a_slot_task_reuses_freed_memory_under_dask_workers_malloc_settings():
    # a fresh process started as dask's nanny starts its workers: every large
    # temporary is a fresh mmap whose pages fault in, except inside a slot's task
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop("GLIBC_TUNABLES", None)
    env["MALLOC_TRIM_THRESHOLD_"] = "65536"
    out = subprocess.run([sys.executable, "-c", _FAULTS], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    outside, inside = map(int, out)
    assert outside > 40 * 300, outside      # about 390 pages a temporary
    assert inside < 40 * 30, inside

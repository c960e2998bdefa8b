"""The training procedure of ``DeepLDA``: local runs in fixed chunks, Alg. 1's update, passes.

Cong et al. (2017), Alg. 1: every minibatch of documents gets its local variables
by upward-downward Gibbs sampling under the current global parameters
(:func:`run_local`, the chunks run through :func:`skdgm._core.chains.run_chains`),
then every layer's topics and the top-layer weights ``r`` take one stochastic
gradient step (TLASGR-MCMC, Eq. 10-13; TLFSGR; SGRLD, Eq. 5) or, with
``sampler="gibbs"``, one batch Gibbs sweep (:func:`global_update`). A pass is a
step per minibatch (:func:`minibatches`). The functions take arrays,
hyper-parameters and explicit seeds or generators, never the estimator.
"""

import math
import threading
from collections import deque
from functools import partial

import numpy as np

import scipy.sparse as sp
from sklearn.utils.validation import check_array, check_non_negative

from .._core.base import (DIVERGENCE_BOUND, check_binary, check_counts, check_finite_params,
                          iter_minibatches)
from .._core.blocks import RowBlocks, active_client
from .._core.chains import even_chunks, run_chains, thread_workers
from .._core.random import as_generator, seed_for
from . import _global
from ._generate import merge_histograms, merge_lengths
from ._local import (MAX_TOTAL_COUNT, RowSlice, StandardNormals, _Layout, local_task,
                     merge_chunks, round_counts, samples_task)

#: How the count-limit messages name ``MAX_TOTAL_COUNT``.
COUNT_LIMIT = "2**63 - 1, the largest int64, the type its samplers count in"

__all__ = ["KeptSample", "add_lengths", "block_stats", "block_summary", "blocks_local_stats",
           "add_block_stats", "chain_mapper", "check_count_rows", "chunk_costs",
           "chunk_layout",
           "combine_block_stats",
           "count_blocks", "divergence_parts", "global_update", "initial_state", "keep_sample",
           "lay_out_chunks", "local_cost", "local_kwargs", "look_ahead", "Minibatch",
           "MinibatchPipeline", "minibatches", "pass_metrics", "prepare_block",
           "run_local", "run_over_samples"]

# Multiplicative EM steps that start each document's local chain near its
# words' topics (see _local.upward_downward): a few sweeps of burn-in then suffice.
EM_STEPS = 5
# CPU seconds per token-sweep and per document-topic-sweep of the local sampler,
# rounded up from the throughput benchmark (about 1e7 token-sweeps per CPU-s at
# K = 128), for run_chains' estimate of whether a second process pays
_SECONDS_PER_TOKEN_SWEEP = 1e-7
_SECONDS_PER_UNIT_SWEEP = 2e-9
#: ``run_chains``' hint for the training's local runs (``fit``, ``partial_fit``,
#: batch Gibbs): the samplers spend their time in Cython kernels that release the
#: GIL, and the topics change at every update, so process workers would receive
#: them pickled on every call while threads read them in place; threads also
#: start in microseconds, so a minibatch of 2,000 documents already pays
#: (``bench_parallel.py``, issue 26). A configured joblib backend still wins.
TRAIN_PREFER = "threads"
#: The hint for the evaluation runs over the kept samples (``transform``, scores,
#: ``impute``): joblib's default, processes. They read the kept samples from files
#: written once per model (:func:`skdgm._core.chains.shared_array`) and send back
#: little, and on this project's 2-core host they gained 1.72-1.74x where threads
#: gained 0.96-1.70x from row to row (``parallel_loky.txt``, ``parallel_threads.txt``).
EVAL_PREFER = None
#: At least this many chunks from ``SPLIT_CHUNKS * SPLIT_MIN_DOCS`` documents on:
#: five chunks of 400 (2,000 documents) cap two workers at 5/3 = 1.67x, eight
#: chunks of 250 balance them. Larger chunks run faster (fewer NumPy calls per
#: document), so smaller calls (in-process anyway) and larger ones keep
#: ``chunk_docs``.
SPLIT_CHUNKS = 8
SPLIT_MIN_DOCS = 200


def local_cost(X, Ks, n_sweeps):
    """The local sampler's CPU seconds on ``X`` for ``n_sweeps`` sweeps, roughly.

    Counts the tokens of ``X`` (one partition step each per sweep) and the
    documents' hidden units (gamma draws and CRTs); the EM start counts as
    ``EM_STEPS`` sweeps. Only the decision to stay in-process reads it
    (:func:`skdgm._core.chains.run_chains`), never a stream.
    """
    sweeps = n_sweeps + EM_STEPS
    return sweeps * (float(X.sum()) * _SECONDS_PER_TOKEN_SWEEP
                     + X.shape[0] * sum(Ks) * _SECONDS_PER_UNIT_SWEEP)


def chunk_costs(X, chunks, Ks, n_sweeps):
    """:func:`local_cost` of every chunk ``X[sl]``, from one running sum of the counts.

    Summing each chunk on its own cost the calling thread about 1 ms an update of
    2,000 documents, serial time that two workers cannot share; one estimate per
    chunk lets :func:`skdgm._core.chains.run_chains` balance the workers by cost
    (``bench_parallel.py --profile``, issue 26).
    """
    if sp.issparse(X) and X.format == "csr":
        tokens = np.concatenate([[0.0], np.cumsum(X.data, dtype=np.float64)])[X.indptr]
    else:
        tokens = np.concatenate([[0.0], np.cumsum(np.asarray(X.sum(axis=1)).ravel())])
    sweeps = n_sweeps + EM_STEPS
    return [sweeps * ((tokens[sl.stop] - tokens[sl.start]) * _SECONDS_PER_TOKEN_SWEEP
                      + (sl.stop - sl.start) * sum(Ks) * _SECONDS_PER_UNIT_SWEEP)
            for sl in chunks]


def run_local(X, seed_seq, phis, r, *, n_burn, n_collect, collect_topics, a0, b0, e0, f0,
              link, chunk_docs, n_jobs=None, thetas=None, keep_theta=True, side=None):
    """Upward-downward sampling of every document of ``X`` (Alg. 1's local step).

    The documents are cut into chunks of about ``chunk_docs`` (a layout that
    depends only on their number, never on ``n_jobs``), each with its own child of
    ``seed_seq``, and run through :func:`skdgm._core.chains.run_chains` on
    ``n_jobs`` workers: the same results for every ``n_jobs`` and backend.

    Parameters
    ----------
    X : CSR matrix of shape (n_docs, V) or Minibatch
        The documents, or a training :class:`Minibatch` (whose chunks may be laid
        out already, and whose ``after_local`` runs once the local step is done).
    seed_seq : numpy.random.SeedSequence
    phis : list of ndarray
        The topics ``Phi^(l)`` of every layer.
    r : ndarray of shape (K_L,)
        The top-layer weights.
    n_burn, n_collect : int
        Local sweeps discarded, then collected.
    collect_topics : bool
        Also accumulate the topic counts a global update needs.
    a0, b0, e0, f0 : float
        The hyper-parameters of ``p^(2)`` and ``c^(l)`` (Eq. 1).
    link : {"poisson", "bernoulli"}
    chunk_docs : int
        Documents per task.
    n_jobs : int, optional
    thetas : list of list of ndarray, optional
        Each chunk's ``theta`` from an earlier call, to continue its chains.
    keep_theta : bool, default=True
        Return each chunk's final ``theta`` (``False`` for a training update,
        whose chains end with the minibatch).
    side : skdgm.deep_lda._local.StandardNormals, optional
        The global step's normals, drawn as one more task beside the chunks (no
        child of ``seed_seq``: the chunks' streams are unchanged) and handed to
        ``side.receive``.

    Returns
    -------
    results : list of dict
        One :func:`skdgm.deep_lda._local.upward_downward` result per chunk.
    """
    batch = X if isinstance(X, Minibatch) else Minibatch(X)
    X = batch.X
    chunks = chunk_layout(X.shape[0], chunk_docs)
    if batch.parts is not None and len(batch.parts) == len(chunks):
        parts, cost = batch.parts, batch.cost
    else:
        parts = [RowSlice(X, sl) for sl in chunks]
        cost = chunk_costs(X, chunks, [p.shape[1] for p in phis], n_burn + n_collect)
    tasks = parts if thetas is None else list(zip(parts, thetas))
    seeds = seed_seq.spawn(len(tasks))
    if side is not None:
        # no stream of its own (it draws from the global generator): a spare seed
        tasks, seeds, cost = tasks + [side], seeds + [seeds[-1]], cost + [side.cost]
    results = run_chains(
        local_task, tasks, seeds=seeds, n_jobs=n_jobs, prefer=TRAIN_PREFER, cost=cost,
        **local_kwargs(phis, r, n_burn=n_burn, n_collect=n_collect,
                       collect_topics=collect_topics, keep_theta=keep_theta,
                       a0=a0, b0=b0, e0=e0, f0=f0, link=link))
    if side is not None:
        side.receive(results.pop())
    if batch.after_local is not None:
        batch.after_local()
    return results


def chunk_layout(n_docs, chunk_docs):
    """The local sampler's tasks over ``n_docs`` documents: near-equal slices of
    about ``chunk_docs``, but at least ``SPLIT_CHUNKS`` of them from
    ``SPLIT_CHUNKS * SPLIT_MIN_DOCS`` documents on: a layout that depends on
    nothing else (never on ``n_jobs``), so neither do the streams."""
    n_chunks = math.ceil(n_docs / chunk_docs)
    if n_docs >= SPLIT_CHUNKS * SPLIT_MIN_DOCS:
        n_chunks = max(n_chunks, SPLIT_CHUNKS)
    return even_chunks(n_docs, n_chunks)


def local_kwargs(phis, r, *, n_burn, n_collect, collect_topics, a0, b0, e0, f0, link,
                 keep_theta=True):
    """The keyword arguments of every :func:`~._local.local_task` of a local run."""
    return dict(phis=phis, r=r, a0=a0, b0=b0, e0=e0, f0=f0, n_burn=n_burn,
                n_collect=n_collect, link=link, collect_topics=collect_topics,
                compact_words=True, em_steps=EM_STEPS, keep_theta=keep_theta)


# ----------------------------------------------------------------- dask blocks
# A dask array's minibatch is sampled where its rows live (skdgm._core.blocks):
# every block holding some of the minibatch's rows runs the local sampler on them
# in the chunks run_local would cut, with seeds spawned in block order, and
# returns only the sums the global update reads.

def check_count_rows(X, *, link, round_, what):
    """Validated counts (after scikit-learn's array checks) as float64 CSR.

    ``round_`` rounds first (``round_counts=True``); then the counts must be
    non-negative integers (0/1 for ``link="bernoulli"``), with a clear
    ``ValueError`` naming the problem otherwise.
    """
    if round_:
        X = round_counts(X)
    check_non_negative(X, f"{what} (counts must be non-negative integers)")
    if link == "bernoulli":
        check_binary(X, what=f"{what}(link='bernoulli')")
    else:
        check_counts(X, what=what, max_total=MAX_TOTAL_COUNT, limit_name=COUNT_LIMIT)
    return sp.csr_matrix(X, dtype=np.float64)


def prepare_block(X, *, link, round_, what):
    """One block of a dask array, checked where it lives: :func:`check_count_rows`
    after the array checks ``fit`` makes on in-memory input (finite, numeric)."""
    X = check_array(X, accept_sparse="csr", dtype=(np.float64, np.float32),
                    ensure_min_samples=0)
    return check_count_rows(X, link=link, round_=round_, what=what)


def count_blocks(X, *, sampler, link, round_, what):
    """A dask array of counts as :class:`~skdgm._core.blocks.RowBlocks`: every block
    checked (:func:`prepare_block`) and summarised (:func:`block_summary`) where it
    lives, on the active ``dask.distributed`` client's workers if there is one."""
    if sampler == "gibbs":
        raise ValueError(
            f"{what}(sampler='gibbs') keeps every document's hidden units between "
            f"sweeps and cannot train on a dask array; use a stochastic-gradient "
            f"sampler ('tlasgr', 'tlfsgr', 'sgrld') or compute the array first")
    blocks = RowBlocks(X, partial(prepare_block, link=link, round_=round_, what=what),
                       block_summary, client=active_client())
    total = sum(t for _, _, t in blocks.summaries)
    if link == "poisson" and total > MAX_TOTAL_COUNT:
        raise ValueError(
            f"{what} can only represent counts summing to at most {MAX_TOTAL_COUNT} "
            f"({COUNT_LIMIT}); they sum to {total:.0f}. Larger counts would wrap around "
            f"in the sampler's integers.")
    return blocks


def add_lengths(values, counts, X):
    """The histogram of document lengths ``(values, counts)`` with ``X``'s documents added
    (a :class:`~skdgm._core.blocks.RowBlocks`' from its blocks' histograms)."""
    if not isinstance(X, RowBlocks):
        return merge_lengths(values, counts, np.asarray(X.sum(axis=1)).ravel())
    for v, c, _ in X.summaries:
        values, counts = merge_histograms(values, counts, v, c)
    return values, counts


def block_summary(X):
    """What the client keeps of a prepared block: its documents' lengths as a
    histogram ``(values, counts)``, and its total count."""
    lengths = np.asarray(X.sum(axis=1), dtype=np.int64).ravel()
    values, counts = np.unique(lengths, return_counts=True)
    return values, counts.astype(np.int64), float(X.sum())


def block_stats(X, shared, seeds):
    """The local step on one block's rows of a minibatch, reduced to the update's sums.

    ``X`` is cut as :func:`run_local` cuts a minibatch (:func:`chunk_layout`),
    one seed per chunk; the result holds the layer-1 topic counts of the words
    present only (``words``, ``first``), the upper layers' counts, the top
    tables, ``q`` and the own-words log-likelihood: O(parameters) bytes.
    """
    kwargs = shared["kwargs"]
    chunks = chunk_layout(X.shape[0], shared["chunk_docs"])
    results = [local_task(X[sl], as_generator(seed), **kwargs)
               for sl, seed in zip(chunks, seeds)]
    merged = merge_chunks(results, X.shape[1], stack_theta=False)
    first = merged["topic_counts"][0]
    words = np.flatnonzero(first.any(axis=1))
    return {"words": words, "first": first[words], "upper": merged["topic_counts"][1:],
            "top_tables": merged["top_tables"], "q_top": merged["q_top"],
            "loglik": merged["loglik"], "n_words": merged["n_words"]}


def add_block_stats(a, b):
    """Two blocks' :func:`block_stats` (or two subtrees' sums) as one, in the same form.

    The layer-1 rows are kept for the union of the two word sets (a row present in
    one part only is copied, not added to a zero), the other sums added. The
    combining step of the tree reduction over a minibatch's blocks
    (:meth:`skdgm._core.blocks.RowBlocks.map_rows` with ``combine``): it runs where
    the parts are, so the client receives one statistics array per update,
    whatever the number of blocks. Pairwise sums round differently from the flat
    sum in block order, in a way fixed by the block order alone.
    """
    words = np.union1d(a["words"], b["words"])
    first = np.zeros((words.size, a["first"].shape[1]))
    first[np.searchsorted(words, a["words"])] = a["first"]
    first[np.searchsorted(words, b["words"])] += b["first"]
    return {"words": words, "first": first,
            "upper": [x + y for x, y in zip(a["upper"], b["upper"])],
            **{k: a[k] + b[k] for k in ("top_tables", "q_top", "loglik", "n_words")}}


def combine_block_stats(parts, n_features, n_first):
    """The minibatch's statistics (as :func:`~._local.merge_chunks` gives them for
    the global update) from its blocks' :func:`block_stats`, summed in block order
    (or from the one total of :func:`add_block_stats`' tree)."""
    first = np.zeros((n_features, n_first))
    for p in parts:
        first[p["words"]] += p["first"]
    L = 1 + len(parts[0]["upper"])
    return {
        "topic_counts": [first] + [sum(p["upper"][l - 1] for p in parts) for l in range(1, L)],
        "top_tables": sum(p["top_tables"] for p in parts),
        "q_top": float(sum(p["q_top"] for p in parts)),
        "loglik": float(sum(p["loglik"] for p in parts)),
        "n_words": float(sum(p["n_words"] for p in parts)),
    }


def blocks_local_stats(selection, seed_seq, phis, r, *, chunk_docs, combine=add_block_stats,
                       **kwargs):
    """The merged local statistics of a minibatch of a dask array (a
    :class:`skdgm._core.blocks.RowSelection`), computed block by block.

    One seed per chunk, spawned from ``seed_seq`` in block order: a minibatch held
    by one block gets exactly the chunks and streams of :func:`run_local`. The
    blocks' statistics are summed by a tree of ``combine`` (:func:`add_block_stats`)
    where they live, Spark MLlib's ``treeAggregate``; ``combine=None`` brings every
    block's back and sums them in block order on the client (the layout before
    the tree, kept for ``benchmarks/bench_dask_tree.py``'s comparison).
    """
    def seeds_per_block(parts):
        sizes = [len(chunk_layout(_n_rows(rows), chunk_docs)) for _, rows in parts]
        seeds = seed_seq.spawn(sum(sizes))
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        return [seeds[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    shared = {"kwargs": local_kwargs(phis, r, collect_topics=True, keep_theta=False, **kwargs),
              "chunk_docs": chunk_docs}
    parts = selection.map(block_stats, shared, seeds_per_block, combine=combine)
    return combine_block_stats(parts, phis[0].shape[0], phis[0].shape[1])


def _n_rows(rows):
    return rows.stop - rows.start if isinstance(rows, slice) else len(rows)


def run_over_samples(X, seed_seq, samples, *, n_burn, n_collect, what, a0, b0, e0, f0, link,
                     chunk_docs, n_jobs=None, held=None):
    """Every chunk's local chain carried over the kept global ``samples``, one task per chunk.

    The chunks (as :func:`run_local` cuts them) each run
    :func:`skdgm.deep_lda._local.samples_task` with their own child of ``seed_seq``:
    ``n_burn`` sweeps under the first sample, ``n_collect`` collected under each.
    One dispatch per chunk for the whole protocol, rather than one per sample or
    per sweep, so that ``n_jobs`` pays and the layout and start are built once.

    ``held`` (a CSR matrix of ``X``'s shape, with ``what="heldout"``) travels
    with each chunk as its rows.

    Returns
    -------
    results : list
        One :func:`~skdgm.deep_lda._local.samples_task` result per chunk.
    """
    layout = chunk_layout(X.shape[0], chunk_docs)
    tasks = [RowSlice(X, sl) if held is None else (RowSlice(X, sl), RowSlice(held, sl))
             for sl in layout]
    Ks = [p.shape[1] for p in samples[0][0]]
    return run_chains(
        samples_task, tasks, seeds=seed_seq.spawn(len(tasks)), n_jobs=n_jobs,
        prefer=EVAL_PREFER,
        samples=samples, n_burn=n_burn, n_collect=n_collect, what=what, a0=a0, b0=b0,
        e0=e0, f0=f0, link=link, compact_words=True, em_steps=EM_STEPS,
        cost=chunk_costs(X, layout, Ks, n_burn + n_collect * len(samples)),
    )


def chain_mapper(seed_seq, n_jobs=None):
    """``map_chunks(func, tasks, **kwargs)`` for :func:`skdgm.deep_lda._gibbs.gibbs_update`.

    Every call spawns one child of ``seed_seq`` per task and runs the tasks
    through :func:`skdgm._core.chains.run_chains`.
    """
    def map_chunks(func, tasks, **kwargs):
        return run_chains(func, tasks, seeds=seed_seq.spawn(len(tasks)), n_jobs=n_jobs,
                          prefer=TRAIN_PREFER,
                          **kwargs)

    return map_chunks


def minibatches(X, batch_size, rng=None, look_ahead=None):
    """The minibatches of one pass over the documents of ``X``.

    With ``rng`` (``fit``) the documents are shuffled first, one permutation per
    pass; without (``partial_fit``) they come in stream order. Either way the
    minibatches are near-equal, at most ``batch_size`` documents
    (:func:`~skdgm._core.base.iter_minibatches`). With ``look_ahead`` (see
    :func:`look_ahead`) and a CSR ``X``, they come as :class:`Minibatch` es of a
    :class:`MinibatchPipeline`, the same rows.
    """
    if look_ahead is not None and sp.issparse(X) and X.format == "csr":
        yield from MinibatchPipeline(X, batch_size, rng, look_ahead)
        return
    for idx in iter_minibatches(X.shape[0], batch_size, rng):
        yield X[idx]


class Minibatch:
    """One training minibatch: its rows ``X`` and, when laid out ahead, its
    chunks' tasks ``parts`` (:meth:`skdgm.deep_lda._local._Layout.of_rows`) and
    their ``cost``; ``after_local``, if set, is called by :func:`run_local` once
    the local step has returned."""

    __slots__ = ("X", "parts", "cost", "after_local")

    def __init__(self, X, parts=None, cost=None):
        self.X, self.parts, self.cost, self.after_local = X, parts, cost, None

    @property
    def shape(self):
        return self.X.shape


def lay_out_chunks(X, *, chunk_docs, link, Ks, n_sweeps):
    """A minibatch's chunks (as :func:`run_local` cuts them) laid out for their
    upward-downward sampling before the topics are known, and their costs."""
    chunks = chunk_layout(X.shape[0], chunk_docs)
    return ([_Layout.of_rows(X[sl], X.shape[1], link) for sl in chunks],
            chunk_costs(X, chunks, Ks, n_sweeps))


def look_ahead(n_jobs, **kwargs):
    """:func:`lay_out_chunks` with ``kwargs`` for :func:`minibatches`, when a training
    update's local step runs on thread workers (``n_jobs`` and the active
    ``joblib.parallel_config``, as :func:`run_local` would); ``None`` otherwise:
    with one worker there is no idle core to lay out on, and process workers
    would receive the layouts pickled, several times the rows."""
    if thread_workers(n_jobs, TRAIN_PREFER) < 2:
        return None
    return partial(lay_out_chunks, **kwargs)


class MinibatchPipeline:
    """The minibatches of a pass, each laid out while the update before it finishes.

    An update's global step (``sg_update``, the join of the chunks' counts, the
    checks) runs on the calling thread alone after its local step: the second
    core idles. The next minibatch's rows, chunks and chunk layouts depend on the
    documents only, so a helper thread cuts and lays them out
    (:func:`lay_out_chunks`) from the moment the local step returns
    (:attr:`Minibatch.after_local`), and the next update's workers start from
    them (issue 26). The minibatches' indices are still drawn here, on the
    calling thread, one at a time in pass order (the order stream is read in the
    same order as by :func:`minibatches`), and the layouts are those the workers
    would build: the same results. The first minibatch of a pass is not laid out
    ahead (nothing runs beside it), nor is one whose update never signals.
    """

    def __init__(self, X, batch_size, rng, lay_out):
        self.X, self.batch_size, self.rng, self.lay_out = X, batch_size, rng, lay_out

    def _prepare(self, idx, box):
        try:
            rows = self.X[idx]
            box["batch"] = Minibatch(rows, *self.lay_out(rows))
        except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
            box["error"] = exc

    def __iter__(self):
        items = iter_minibatches(self.X.shape[0], self.batch_size, self.rng)
        idx = next(items, None)
        batch = None if idx is None else Minibatch(self.X[idx])
        while batch is not None:
            nxt = next(items, None)
            box, helper = {}, []

            def start(nxt=nxt, box=box, helper=helper):
                if not helper:
                    helper.append(threading.Thread(target=self._prepare, args=(nxt, box),
                                                   daemon=True))
                    helper[0].start()

            if nxt is not None:
                batch.after_local = start
            try:
                yield batch
            finally:
                for t in helper:
                    t.join()
            if nxt is None:
                return
            if "error" in box:
                raise box["error"]
            batch = box.get("batch") or Minibatch(self.X[nxt])


def global_update(X, total, phis, r, sg_state, gibbs_state, *, sampler, eps, etas, gamma0,
                  c0, rng, local_stats, gibbs_step):
    """Alg. 1 on one minibatch: local sampling, then every global update.

    Parameters
    ----------
    X : CSR matrix of shape (n_docs, V)
    total : int
        The corpus size the minibatch statistics are scaled to (``rho = total /
        n_docs``, Eq. 10).
    phis, r : list of ndarray, ndarray
        The current global parameters.
    sg_state : dict
        The stochastic-gradient state (``M``, ``M_top``, ``t``, ``phihat``).
    gibbs_state : tuple or None
        The batch Gibbs sampler's documents' hidden units.
    sampler : {"tlasgr", "tlfsgr", "sgrld", "gibbs"}
    eps : float
        The step size of this update.
    etas : list of float
        The topics' Dirichlet parameters per layer.
    gamma0, c0 : float
    rng : numpy.random.Generator
        The global step's noise.
    local_stats : callable
        ``local_stats(X, phis, r, side=side)``: the minibatch's merged local
        statistics; ``side``, a :class:`~._local.StandardNormals`, asks for the
        global step's normals to be drawn beside the local step (a local step
        that cannot leaves ``side.noise`` at ``None``, and the global step draws
        them itself: the same numbers).
    gibbs_step : callable
        ``gibbs_step(X, phis, r)``: one batch Gibbs sweep (``sampler="gibbs"``),
        returning ``(phis, r, gibbs_state, loglik, n_words)``.

    Returns
    -------
    phis, r, sg_state, gibbs_state, rates, loglik, n_words

    Raises
    ------
    skdgm.exceptions.DivergenceError
        If a new parameter is not finite.
    """
    rho = total / X.shape[0]
    if sampler == "gibbs":
        new_phis, new_r, gibbs_state, ll, nw = gibbs_step(X, phis, r)
        sg_state, rates = dict(sg_state, t=sg_state["t"] + 1), []
    else:
        side = StandardNormals(rng, _global.noise_size(phis, r))
        stats = local_stats(X, phis, r, side=side)
        new_phis, new_r, sg_state, rates = _global.sg_update(
            phis, r, sg_state, stats, sampler=sampler, eps=eps, rho=rho,
            etas=etas, gamma0=gamma0, c0=c0, rng=rng, noise=side.noise)
        ll, nw = stats["loglik"], stats["n_words"]
    check_finite_params({"topics": new_phis, "r": new_r, "expanded mean":
                         sg_state["phihat"]}, "DeepLDA.partial_fit")
    return new_phis, new_r, sg_state, gibbs_state, rates, ll, nw


class KeptSample(tuple):
    """A kept global sample ``(topics, r)`` whose arrays are read-only copies.

    Nothing can change it in place, so the snapshot that the training contract
    takes before every ``partial_fit`` shares it instead of copying it (five
    kept samples of a 2,000-word, 128-topic model are 10 MB per call).
    """

    __slots__ = ()

    def __new__(cls, phis, r):
        phis = [np.array(p) for p in phis]
        r = np.array(r)
        for a in phis + [r]:
            a.flags.writeable = False
        return super().__new__(cls, (phis, r))

    def __getnewargs__(self):
        return tuple(self)

    def __deepcopy__(self, memo):
        return self


def keep_sample(posterior, n_keep, thin, t, phis, r, *, pass_end=False):
    """The kept global samples after update ``t``: every ``thin``-th, the latest ``n_keep``.

    Called after every update (``pass_end=False``) and once more when a pass (a
    ``fit`` pass, a ``partial_fit`` call) has ended (``pass_end=True``, with that
    pass's last sample). An integer ``thin`` keeps updates ``1, 1 + thin, ...`` and
    ignores the pass's end; ``thin="pass"`` keeps only the sample that ends each
    pass. ``posterior`` is rebuilt when ``n_keep`` changed (``set_params`` between
    calls); with an integer ``thin`` the first update is always kept.
    """
    if posterior.maxlen != n_keep:
        posterior = deque(posterior, maxlen=n_keep)
    if thin == "pass":
        keep = pass_end
    else:
        keep = not pass_end and ((t - 1) % thin == 0 or not posterior)
    if keep:
        posterior.append(KeptSample(phis, r))
    return posterior


def pass_metrics(log, n_updates, passes, done, elapsed):
    """The ``history_`` entry of a pass: perplexity, step size, rates, time left.

    ``log`` is the pass's :class:`skdgm.deep_lda._evaluate.PassLog`; ``passes`` the
    passes of this fit (0 for ``partial_fit``, whose end is unknown), ``done`` the
    passes made including this one, ``elapsed`` the seconds since the call began.
    """
    metrics = {"train_perplexity": log.perplexity(), "step_size": log.eps}
    for l, rt in enumerate(log.rates):
        metrics[f"rate_layer{l + 1}"] = float(np.mean(rt))
    metrics["n_updates"] = n_updates
    metrics["time_left"] = (float(elapsed / done * (passes - done))
                            if passes and done < passes else 0.0)
    return metrics


def divergence_parts(topics, r, phihat, length_values):
    """The arrays the skeleton's divergence check watches, and their bound.

    Topics live on the simplex; ``r`` scales like the documents' counts, and
    SGRLD's expanded mean like the corpus', so the bound grows with the longest
    document trained on.
    """
    longest = float(length_values.max()) if length_values.size else 1.0
    return ({"topics_": topics, "r_": r, "expanded mean": phihat},
            DIVERGENCE_BOUND * max(1.0, longest))


def initial_state(n_features, Ks, X, random_state, *, eta, gamma0, c0):
    """The streams and global parameters a fit starts from.

    ``random_state``'s sequence spawns three children: the local samplers' seeds,
    the global steps' generator (which also draws the initial topics, from ``X``'s
    words when given, :func:`skdgm.deep_lda._global.initial_topics`) and the
    minibatch order. ``r`` starts at its prior mean ``gamma0 / (K_L c0)``.

    Returns
    -------
    train_seed, order_seed : numpy.random.SeedSequence
    rng : numpy.random.Generator
    etas : list of float
    topics : list of ndarray
    r : ndarray of shape (K_L,)
    sg_state : dict
        The stochastic-gradient state: zero metrics, ``t = 0``, the expanded
        mean of SGRLD.
    """
    train_seed, global_seed, order_seed = seed_for(random_state).spawn(3)
    rng = as_generator(global_seed)
    etas = _global.layer_etas(eta, Ks)
    topics = _global.initial_topics(n_features, Ks, X, rng)
    r = np.full(Ks[-1], gamma0 / (Ks[-1] * c0))
    sg_state = {"M": [np.zeros(K) for K in Ks], "M_top": 0.0, "t": 0,
                "phihat": [t * t.shape[0] for t in topics]}
    return train_seed, order_seed, rng, etas, topics, r, sg_state

"""Rows as blocks: training on a ``dask.array.Array`` whose data stays where it lives.

A minibatch step splits into a per-row part (a pure function of rows, the global
parameters and a random stream, returning sums) and a global part (sums -> new
parameters). :class:`RowBlocks` runs the per-row part block by block:

* with an active ``dask.distributed`` client, the blocks are prepared (validated,
  converted) once on the workers and persisted there, in contiguous runs, one a
  worker thread; every minibatch submits one task per thread whose blocks hold
  some of its rows, on those blocks' futures, with the global parameters sent
  once per update and copied to the blocks' workers by a tree of tasks; each task
  sums its own blocks' share of the tree and only those sums come back
  (the shape of Spark MLlib's online LDA: a local step per partition, the
  statistics aggregated, one global update on the driver);
* without a client, each block's rows of the minibatch are computed locally with
  the synchronous scheduler, one block at a time, and the same function runs on
  them: memory stays bounded by a block's share of one minibatch.

Both paths run the same tasks on the same rows with the same seeds, and the results
are reduced in block order (by the caller) or by a tree whose shape follows the
block order alone (:func:`tree_reduce`, on the workers with a client: one total
comes back), so a fit does not depend on the number of workers, on where a task
ran or on the order in which results arrived. A lost
worker's blocks are recomputed by Dask from their lineage, and its tasks re-run
with the seeds they carry.

Dask is an optional dependency: nothing here imports it until a dask array is given.
"""

import os
import sys
import threading
import uuid
import weakref
from contextlib import contextmanager
from functools import partial

import numpy as np
import scipy.sparse as sp

__all__ = ["BLOCKWISE_METHODS", "RowBlocks", "RowSelection", "RowView", "active_client",
           "add_parts", "block_seeds",
           "blockwise", "check_dask_rows", "column_means", "dask_method", "float_blocks",
           "forget_sent", "gather_rows", "is_dask_array", "max_abs", "prepare_float_block",
           "sum_parts", "tree_reduce"]


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (without importing dask)."""
    mod = sys.modules.get("dask.array")
    return mod is not None and isinstance(X, mod.Array)


def active_client():
    """The default ``dask.distributed`` client, or ``None`` (also without distributed)."""
    if "distributed" not in sys.modules:
        return None
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        return None


def check_dask_rows(estimator, X, *, reset):
    """Client-side checks of a dask array, from its metadata alone (nothing is computed).

    Two dimensions, a numeric dtype, known row-chunk sizes and one chunk across
    the columns (each block holds whole rows); ``reset=True`` records
    ``n_features_in_``, otherwise the column count must match it. The entries are
    checked block by block where the blocks live (:class:`RowBlocks`).
    """
    name = type(estimator).__name__
    if X.ndim != 2:
        raise ValueError(f"{name} expects a 2-D dask array; got {X.ndim} dimension(s)")
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{name} expects a numeric dask array; got dtype {X.dtype}")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            f"{name} needs the dask array's row-chunk sizes; they are unknown (nan). "
            f"Call X.compute_chunk_sizes() first.")
    if len(X.chunks[1]) != 1:
        raise ValueError(
            f"{name} needs a dask array chunked by rows only (each block holding whole "
            f"rows); got {len(X.chunks[1])} column chunks. Use X.rechunk({{1: -1}}).")
    if X.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a "
                         f"minimum of 1 is required by {name}.")
    if reset:
        estimator.__dict__.pop("feature_names_in_", None)
        estimator.n_features_in_ = int(X.shape[1])
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting "
            f"{estimator.n_features_in_} features as input")


def _nnz(block):
    return int(block.nnz) if sp.issparse(block) else int(np.count_nonzero(block))


def _summary(summarize, block):
    return _nnz(block), summarize(block)


def _summary_of_rows(block_rows, summarize, _):
    return _summary(summarize, block_rows)


def _identity(x):
    return x


def _select(block, rows):
    return block[rows]


def _derive_block(func, block, shared, extra):
    return func(block, shared, extra)


def _near(worker):
    """Placement hints for a task meant to run on ``worker`` (a hint only: a lost
    worker's tasks run elsewhere), none for ``None``."""
    return {} if worker is None else dict(workers=[worker], allow_other_workers=True)


def _total(results, combine):
    return results if combine is None else [tree_reduce(results, combine)]


def spread_blocks(workers, n_blocks):
    """Where ``n_blocks`` blocks live: ``(slots, homes)``, each block's thread slot
    and worker.

    ``workers`` is the scheduler's ``{address: info}`` (``info["nthreads"]``);
    every thread of every worker (in address order) is a slot, and the blocks
    are cut into contiguous runs of about equal length, one run per slot
    (``slots[b] = b * S // n_blocks``). With no worker yet every block gets slot
    0 and home ``None`` (the scheduler places them).
    """
    threads = [w for w in sorted(workers)
               for _ in range(max(1, int(workers[w].get("nthreads") or 1)))]
    if not threads:
        return [0] * n_blocks, [None] * n_blocks
    slots = [b * len(threads) // n_blocks for b in range(n_blocks)]
    return slots, [threads[s] for s in slots]


class _Export:
    """A value the tree above the slots' tasks reads: item ``index`` of the result
    list of ``source`` (a slot in :func:`split_tree`'s answer, then its task's
    future; ``index=None``: the result itself)."""

    __slots__ = ("source", "index")

    def __init__(self, source, index):
        self.source, self.index = source, index


def split_tree(owners):
    """:func:`tree_reduce`'s tree over ``len(owners)`` leaves, cut where owners differ.

    ``owners[i]`` is the thread slot that holds leaf ``i``. Every largest subtree
    whose leaves all share a slot is evaluated there, by that slot's one task;
    the rest of the tree, above them, combines their values. Returns
    ``(plans, top)``: ``plans[slot]`` the slot's subtrees in leaf order, each an
    expression of leaf indices (an int, or a pair of expressions combined left
    to right); ``top`` the tree above, nested pairs whose leaves are
    :class:`_Export` ``(slot, k)``, the ``k``-th subtree of ``slot``'s plan. The operands of every
    combine and their order are those of ``tree_reduce`` over the leaves, so the
    total is bit for bit the same wherever each part of the tree runs.
    """
    mixed = object()

    def join(x, y):
        if x[0] is not mixed and x[0] == y[0]:
            return (x[0], (x[1], y[1]))
        return (mixed, (x, y))

    plans = {}

    def cut(node):
        owner, body = node
        if owner is mixed:
            return (cut(body[0]), cut(body[1]))
        plans.setdefault(owner, []).append(body)
        return _Export(owner, len(plans[owner]) - 1)

    top = cut(tree_reduce([(o, i) for i, o in enumerate(owners)], join))
    return plans, top


def _evaluate(expr, leaf, combine):
    """An expression of :func:`split_tree` (leaf indices and pairs): ``leaf(i)`` at
    the leaves, ``combine(left, right)`` at every pair, depth first."""
    if isinstance(expr, tuple):
        return combine(_evaluate(expr[0], leaf, combine), _evaluate(expr[1], leaf, combine))
    return leaf(expr)


#: glibc's ``mallopt`` parameters (``malloc.h``) and its defaults for them.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_GLIBC_DEFAULT = {_M_TRIM_THRESHOLD: 128 * 1024, _M_MMAP_THRESHOLD: 128 * 1024}

#: Both thresholds during a block task (:func:`roomy_malloc`): glibc's own ceiling
#: for the dynamic mmap threshold on 64-bit systems. ``None`` (set in the worker
#: processes) leaves their malloc settings alone.
ROOMY_MALLOC_BYTES = 32 * 2 ** 20

_roomy = {"lock": threading.Lock(), "depth": 0, "restore": None}


def _fixed_malloc_thresholds(environ):
    """``{mallopt parameter: value}`` this process's glibc was started with, or
    ``None`` if it runs with its dynamic mmap threshold (no threshold was set)."""
    names = {"MALLOC_TRIM_THRESHOLD_": _M_TRIM_THRESHOLD,
             "MALLOC_MMAP_THRESHOLD_": _M_MMAP_THRESHOLD, "MALLOC_TOP_PAD_": None,
             "MALLOC_MMAP_MAX_": None}
    tunables = {f"glibc.malloc.{k}": v for k, v in
                (("trim_threshold", _M_TRIM_THRESHOLD), ("mmap_threshold", _M_MMAP_THRESHOLD),
                 ("top_pad", None), ("mmap_max", None))}
    found, fixed = dict(_GLIBC_DEFAULT), False
    settings = [(k, environ[k]) for k in names if k in environ]
    settings += [tuple(item.split("=", 1)) for item in environ.get("GLIBC_TUNABLES", "").split(":")
                 if item.split("=", 1)[0] in tunables and "=" in item]
    for key, value in settings:
        fixed = True
        param = names.get(key, tunables.get(key))
        if param is not None:
            try:
                found[param] = int(value)
            except ValueError:
                return None
    return found if fixed else None


def _mallopt():
    """glibc's ``mallopt`` (``None`` elsewhere)."""
    import platform

    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return None
    try:
        import ctypes

        return ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None


@contextmanager
def roomy_malloc():
    """Let glibc keep and reuse the memory of a block task's temporaries, then
    put the process's malloc settings back.

    ``dask.distributed``'s nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_``
    set (``distributed.nanny.pre-spawn-environ``: 64 kB), so that they hand freed
    memory back to the system. A threshold set at start also switches off
    glibc's dynamic mmap threshold: every allocation of 128 kB or more is then a
    fresh ``mmap`` whose pages the kernel faults in and zeroes, and the heap's
    top is handed back at every free. The models' block work allocates
    parameter-sized temporaries (an SBN gradient of 784 x 200 is 1.25 MB) and
    ran twice as slowly there as in the client
    (``benchmarks/results/dask_sbn_fit_profile.txt``). Inside this context both
    thresholds are :data:`ROOMY_MALLOC_BYTES`; when the last task of the
    process leaves it (threads share the allocator), the values the process
    was started with are set again, so the worker trims as its configuration
    asks between tasks. Nothing happens where glibc runs with its dynamic
    threshold (no threshold was set: setting one would switch it off for
    good), nor off glibc. Results do not depend on it: only where memory comes
    from changes.
    """
    roomy = ROOMY_MALLOC_BYTES
    restore = _fixed_malloc_thresholds(os.environ) if roomy else None
    mallopt = _mallopt() if restore is not None else None
    if mallopt is None:
        yield
        return
    with _roomy["lock"]:
        if _roomy["depth"] == 0:
            for param in restore:
                mallopt(param, int(roomy))
        _roomy["depth"] += 1
    try:
        yield
    finally:
        with _roomy["lock"]:
            _roomy["depth"] -= 1
            if _roomy["depth"] == 0:
                for param, value in restore.items():
                    mallopt(param, value)


def _on_slot(func, combine, leaves, shared, plan, carried=False):
    """One thread slot's share of a minibatch, as one task: ``func`` on each of its
    blocks' rows (``leaves``: ``(block, rows, extra)``, by the local indices of
    ``plan``), combined by ``plan``'s subtrees. The list of their values.

    ``carried``: each leaf is ``(block, rows, extra, prev)`` and ``func`` also
    takes and returns the block's state (:meth:`RowBlocks.map_rows_carry`);
    ``prev`` is ``None`` or ``(result, k)``, the result of the slot's task of
    the previous call and the block's local index in it. The states, by local
    index, are then appended to the list as its last item. Runs under
    :func:`roomy_malloc`.
    """
    states = [None] * len(leaves)

    def leaf(i):
        if not carried:
            block, rows, extra = leaves[i]
            return func(block[rows], shared, extra)
        block, rows, extra, prev = leaves[i]
        value, states[i] = func(block[rows], shared, extra,
                                None if prev is None else prev[0][-1][prev[1]])
        return value

    with roomy_malloc():
        values = [_evaluate(expr, leaf, combine) for expr in plan]
    return values + [states] if carried else values


def _leaves(node):
    """The :class:`_Export` leaves of a tree of pairs, left to right."""
    if isinstance(node, _Export):
        yield node
    else:
        for child in node:
            yield from _leaves(child)


def _expr_leaves(expr):
    """The leaf indices of an expression of :func:`split_tree`, left to right."""
    if isinstance(expr, tuple):
        yield from _expr_leaves(expr[0])
        yield from _expr_leaves(expr[1])
    else:
        yield expr


def _name(func):
    """A task's name: its function's (a ``partial``'s function's)."""
    return (getattr(func, "__name__", None)
            or getattr(getattr(func, "func", None), "__name__", "task"))


def _relabel(expr, local):
    """An expression of :func:`split_tree` with its leaf indices mapped by ``local``."""
    if isinstance(expr, tuple):
        return (_relabel(expr[0], local), _relabel(expr[1], local))
    return local[expr]


def _pick(value, index):
    return value if index is None else value[index]


def _combine_picked(combine, a, ia, b, ib):
    return combine(_pick(a, ia), _pick(b, ib))


#: In the key of every task :class:`RowBlocks` submits, so its messages can be told apart.
_TAG = "-skdgm-rows-"

#: Up to this many parts a minibatch's results are gathered and combined by the
#: same tree on the client; above it the tree runs on the workers. Each level of a
#: tree on the workers costs a round of tasks (about 80 ms an update at 4 blocks on
#: 2 workers, ``dask_fit_speed_idle3.txt``), which pays only when the parts' bytes
#: on the client's link dominate, i.e. with many workers (``dask_fit_napkin.txt``).
#: The tree's shape is the same either way, so the total is bit for bit the same.
TREE_ON_WORKERS_ABOVE = 8


def _ours(msg, keys):
    if not (isinstance(msg, dict) and msg.get("op") == "update-graph"):
        return False
    sent = msg.get("keys") or ()
    return bool(sent) and all(_TAG in str(k) or k in keys for k in sent)


#: The newest logged batch :func:`forget_sent` has scrubbed, by client log (``id``
#: and a weak reference: the log, a deque, cannot be a weak key), so that the next
#: call scans only the batches appended after it; a log's entry goes with the log.
_SCRUBBED = {}


def _remember(log, batch):
    key = id(log)
    _SCRUBBED[key] = (weakref.ref(log, lambda _, key=key: _SCRUBBED.pop(key, None)), batch)


def _unscanned(log):
    """The batches of ``log`` appended since :func:`forget_sent` last scrubbed it,
    newest first: all of them if that batch has left the log (or there was none)."""
    ref, mark = _SCRUBBED.get(id(log), (None, None))
    if ref is None or ref() is not log:
        mark = None
    new = []
    for batch in reversed(log):
        if mark is not None and batch is mark:
            break
        new.append(batch)
    return new


def forget_sent(client, keys=()):
    """Drop the graphs :class:`RowBlocks` sent from ``client``'s log of recent messages.

    ``distributed`` keeps the last batches a client sent to the scheduler (up to
    ``distributed.admin.low-level-log-length``, 1,000 by default, of those under
    1 MB), for developers' debugging. A fit sends the global parameters with every
    update, so that log would keep up to 1,000 copies of them on the client (and,
    through the arrays' buffers, the parameter arrays themselves): the client's
    memory grew with every update. The update-graph messages
    of our tasks (their keys carry ``_TAG``; ``keys`` adds others) are removed from
    the logged batches; the other messages stay. It runs on the client's event loop,
    the thread that appends to the log, and returns once done. Called after the
    tasks' results came back, when their graphs have been sent (and logged).

    Only the batches appended since the last call are scanned (the log only grows
    at its end, and the newest batch scrubbed is remembered by identity: batches
    are lists made afresh for every send), not the whole log after every update.
    So ``keys`` reach the batches logged since the last call only: a caller names
    the keys it sent since then.
    """
    log = getattr(getattr(client, "scheduler_comm", None), "recent_message_log", None)
    if log is None:
        return
    keys = frozenset(keys)

    async def scrub():
        newest = None
        for batch in _unscanned(log):
            # "large-message" strings stand for batches not kept: nothing to drop, and
            # (interned) not a mark that tells one log entry from another
            if isinstance(batch, list):
                newest = batch if newest is None else newest
                batch[:] = [m for m in batch if not _ours(m, keys)]
        if newest is not None:
            _remember(log, newest)

    client.sync(scrub)


class RowBlocks:
    """A row-chunked dask array, prepared and summarised block by block.

    Parameters
    ----------
    X : dask.array.Array
        Chunked by rows only (:func:`check_dask_rows`).
    prepare : callable
        ``prepare(block) -> block``: validates a block (raising ``ValueError`` that
        names the problem) and converts it (e.g. to float64 CSR). It must work
        row by row: ``prepare(B)[rows]`` equals ``prepare(B[rows])``.
    summarize : callable
        ``summarize(prepared_block) -> object``: what the caller needs to know of
        each block once (lengths, totals); kept in ``summaries`` in block order.
    client : distributed.Client or None
    dtype : numpy.dtype, optional
        The prepared blocks' dtype, for callers that size parameters from it.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype or None
    offsets : ndarray of int
        First row of every block, and the row count at the end.
    summaries : list
    nnz : int
        Non-zero entries of the prepared blocks.
    """

    def __init__(self, X, prepare, summarize, *, client=None, dtype=None):
        self.shape = tuple(int(s) for s in X.shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)
        self.client = client
        self._prepare, self._summarize = prepare, summarize
        self._parent = self._rows = None
        if client is not None:
            # Spread the blocks over the workers' threads present now, in contiguous
            # runs of about equal length: every update's tasks follow the blocks, so
            # an even spread is what puts every thread to work on every update,
            # whatever the scheduler's placement of root tasks would have made of the
            # workers' load at this moment; contiguous, so that neighbouring blocks,
            # the ones the tree of sums pairs first, are summed where they live (one
            # task and one result per thread and update, :meth:`map_rows`). A hint
            # only: a block whose worker is gone is recomputed elsewhere.
            self._slots, self._homes = spread_blocks(
                client.scheduler_info()["workers"], self.n_blocks)
            self._futures, raw_keys = [], []
            for b, block in enumerate(X.to_delayed().ravel()):
                where = _near(self._homes[b])   # no worker yet: the scheduler waits for one
                raw = client.compute(block, **where)
                raw_keys.append(raw.key)
                # a fresh key: every fit gets its own, released with this object;
                # the prepared block's lineage reaches the source through ``raw``
                self._futures.append(self._submit(prepare, raw, **where))
            both = client.gather([self._submit(partial(_summary, summarize), f)
                                  for f in self._futures])
            forget_sent(client, raw_keys)
        else:
            self._X = X
            both = [_summary(summarize, self._local_rows(b, slice(None)))
                    for b in range(self.n_blocks)]
        self.nnz = sum(n for n, _ in both)
        self.summaries = [s for _, s in both]

    def _share(self, shared, parts):
        """``shared`` (an update's parameters) on the workers of ``parts``' blocks:
        one future per part, for its block's task.

        The client sends the parameters once, as a task of its own placed with
        the first part's block; copies of its result (tasks too, one per other
        worker holding some of the parts' blocks, each placed there) are made
        by a tree: every level, each worker holding a copy hands one to a
        worker without, so a copy reaches ``W`` workers in ``log2(W)`` levels,
        not ``W`` fetches from one worker's link. Each block task reads the
        copy on its block's worker. ``Client.scatter(..., broadcast=True)`` is
        not used: its replication loops for ever when a worker dies during it
        (the scheduler keeps waiting for the dead worker's copy), and scattered
        data is not recomputed from a lineage. Tasks are: a lost worker's copies
        are made again, and every route hands the tasks the same object, so the
        results do not depend on it.
        """
        if not parts:
            raise ValueError("no rows to share the parameters with: the selection "
                             "holds no block's rows")
        homes = getattr(self, "_homes", None) or [None] * self.n_blocks
        order = list(dict.fromkeys(homes[b] for b, _ in parts))
        copies = {order[0]: self._submit(_identity, shared, **_near(order[0]))}
        pending = order[1:]
        while pending:
            level = list(copies.values())
            for source, home in zip(level, pending):
                copies[home] = self._submit(_identity, source, **_near(home))
            pending = pending[len(level):]
        return [copies[homes[b]] for b, _ in parts]

    def _gather(self, top, combine):
        """The values of ``top`` on the client: with ``combine``, the total of the
        tree ``top`` (nested pairs of :class:`_Export` of task futures, combined
        left to right), otherwise the list ``top`` of exports itself.

        The tree runs on the workers (one task a pair, only the total comes back)
        when it reads more than :data:`TREE_ON_WORKERS_ABOVE` exports, on the
        client otherwise: the same operands in the same order either way. On the
        client a task's results are fetched as the tree first reaches them
        (depth first, i.e. block order), not all at once when the last task is
        done: the first tasks' values are fetched and combined while the later
        ones still run. Results come straight from the workers that hold them
        (``direct``), not through the scheduler.
        """
        exports = list(_leaves(top)) if combine is not None else list(top)
        if combine is not None and len(exports) > TREE_ON_WORKERS_ABOVE:
            top = self._tree_on_workers(top, combine)
            exports = [top]
        fetched = {}

        def value(export):
            key = export.source.key
            if key not in fetched:
                if combine is None:     # nothing to overlap with: all in one gather
                    futs = {e.source.key: e.source for e in exports}
                    fetched.update(zip(futs, self.client.gather(list(futs.values()),
                                                                direct=True)))
                else:
                    fetched[key] = self.client.gather([export.source], direct=True)[0]
            return _pick(fetched[key], export.index)

        if combine is None:
            results = [value(e) for e in exports]
        elif isinstance(top, _Export):
            results = [value(top)]
        else:
            results = [_evaluate(top, value, combine)]
        forget_sent(self.client)
        return results

    def _tree_on_workers(self, node, combine):
        """The tree ``node`` above the exports as tasks (one a pair, each placed by
        the scheduler next to its operands): the :class:`_Export` of its total."""
        if isinstance(node, _Export):
            return node
        a = self._tree_on_workers(node[0], combine)
        b = self._tree_on_workers(node[1], combine)
        return _Export(self._submit(_combine_picked, combine, a.source, a.index,
                                    b.source, b.index, name=_name(combine)), None)

    def _submit(self, func, *args, name=None, **kwargs):
        """``client.submit`` under a fresh key that :func:`forget_sent` recognises,
        named after ``func`` (or ``name``)."""
        return self.client.submit(func, *args,
                                  key=f"{name or _name(func)}{_TAG}{uuid.uuid4().hex}",
                                  **kwargs)

    @property
    def size(self):
        return self.shape[0] * self.shape[1]

    @property
    def n_blocks(self):
        return len(self.offsets) - 1

    def _local_rows(self, b, rows):
        if self._parent is not None:     # derived: the parent's whole block, mapped
            func, shared, extra = self._derived
            return func(self._parent._local_rows(b, slice(None)), shared, extra[b])[rows]
        part = self._X.blocks[b][rows].compute(scheduler="sync")
        return self._prepare(part)

    def derive(self, func, shared, extras, *, n_features, dtype, summarize):
        """Another :class:`RowBlocks`: ``func(block, shared, extra)`` of every block.

        For data made from the rows, row by row, that later steps read as rows
        (the greedy stack's sampled hidden layer): ``func`` maps a prepared block
        to a block of as many rows and ``n_features`` columns of ``dtype``.
        ``extras(parts)`` gives every block's argument (e.g. its seed), as in
        :meth:`map_rows`, over the whole blocks. With a client the mapped blocks
        are computed once where the blocks live and kept there (their lineage
        reaches the source, so a lost worker's are recomputed); without one a
        block's rows are mapped whenever they are read (the whole block each
        time: memory stays a block's). ``summarize`` as in the constructor.

        Of a :meth:`subset` (the training rows of a fit that holds out a slice),
        the subset's rows of its :meth:`whole` array's derived blocks: the other
        rows are mapped too (a block maps as one, from its ``extra``) but no later
        task reads them, and ``extras`` gives every whole block its argument, so
        the result depends on the blocks and the subset, not on the workers.
        """
        if self._rows is not None:
            # a subset shares its parent's blocks, which map as one (one extra each):
            # the whole blocks' results, of which the subset keeps its rows
            return self.whole().derive(func, shared, extras, n_features=n_features,
                                       dtype=dtype, summarize=summarize).subset(self._rows)
        new = object.__new__(RowBlocks)
        new.shape = (self.shape[0], int(n_features))
        new.dtype = np.dtype(dtype)
        new.offsets, new.client, new._prepare = self.offsets, self.client, _identity
        new._homes = getattr(self, "_homes", None)
        new._rows, new._summarize = None, summarize
        extra = extras([(b, slice(None)) for b in range(self.n_blocks)])
        if self.client is None:
            new._parent, new._derived, new._X = self, (func, shared, extra), None
            both = [_summary(summarize, new._local_rows(b, slice(None)))
                    for b in range(new.n_blocks)]
        else:
            new._parent = None
            shared_f = self._share(shared, [(b, slice(None)) for b in range(self.n_blocks)])
            new._futures = [self._submit(_derive_block, func, f, sf, e)
                            for f, e, sf in zip(self._futures, extra, shared_f)]
            both = self.client.gather([self._submit(partial(_summary, summarize), f)
                                       for f in new._futures])
            forget_sent(self.client)
        new.nnz = sum(n for n, _ in both)
        new.summaries = [s for _, s in both]
        return new

    def split(self, rows):
        """``[(block, local rows), ...]`` of the blocks holding some of ``rows``, in block order.

        ``rows`` is a slice (step 1) or an increasing array of row indices (of
        the subset's rows, for a :meth:`subset`).
        """
        out = []
        if self._rows is not None:      # a subset's rows are its parent's rows
            rows = self._rows[rows]
        if isinstance(rows, slice):
            start, stop, _ = rows.indices(self.shape[0])
            for b in range(self.n_blocks):
                lo, hi = max(start, self.offsets[b]), min(stop, self.offsets[b + 1])
                if lo < hi:
                    out.append((b, slice(int(lo - self.offsets[b]),
                                         int(hi - self.offsets[b]))))
            return out
        rows = np.asarray(rows, dtype=np.int64)
        cuts = np.searchsorted(rows, self.offsets)
        for b in range(self.n_blocks):
            if cuts[b] < cuts[b + 1]:
                out.append((b, rows[cuts[b]:cuts[b + 1]] - self.offsets[b]))
        return out

    def map_rows(self, func, rows, shared, extras, combine=None):
        """``func(block_rows, shared, extra)`` on every block's share of ``rows``.

        Parameters
        ----------
        func : callable
            A picklable (module-level) function of the block's selected rows
            (prepared), the ``shared`` object and the block's ``extra``.
        rows : slice or ndarray
            The rows (increasing), as :meth:`split` takes them.
        shared : object
            Read-only arguments of every task (the global parameters): with a
            client, sent once per call and copied by a tree to the workers of
            the blocks (:meth:`_share`), each task reading its worker's copy;
            released when the results are in.
        extras : callable
            ``extras(parts) -> list``: one argument per block of
            ``parts = split(rows)`` (e.g. its random seeds), in the same order.
        combine : callable, optional
            ``combine(a, b)`` of two results (a picklable sum): the results are
            then reduced by :func:`tree_reduce`, whose shape follows the block
            order alone, so the total depends neither on the workers nor on
            where the tree ran. With a client its subtrees held by one thread
            slot are summed there (:func:`split_tree`), and the tree above them
            runs on the client, or with more than :data:`TREE_ON_WORKERS_ABOVE`
            values to combine on the workers, so that only the total comes back
            (Spark MLlib's ``treeAggregate``).

        Returns
        -------
        results : list
            ``func``'s results in block order (never in arrival order); with
            ``combine``, a list holding their total.

        Notes
        -----
        With a client, one task per thread slot (:func:`spread_blocks`) runs
        ``func`` on all of the slot's blocks of the minibatch, one after the
        other, and returns their subtrees' values: a minibatch costs the client
        one task and one result per slot, not per block (the per-update round
        trips were most of what a second worker did not halve,
        ``dask_fit_profile_after.txt``).
        """
        return self._map(func, rows, shared, extras, combine)

    def _map(self, func, rows, shared, extras, combine, carried=False, carry=None):
        """:meth:`map_rows` (``carried=False``) and :meth:`map_rows_carry`
        (``carried=True``; ``carry`` a list, one state per block of
        ``split(rows)``, or ``None`` for fresh states): ``(results, states)``
        for the latter, ``results`` for the former."""
        parts = self.split(rows)
        extra = extras(parts)
        if carried and carry is None:
            # sized from this split, so a fit's first step splits its rows once
            carry = [None] * len(parts)
        if self.client is None:
            if not carried:
                return _total([func(self._local_rows(b, r), shared, e)
                               for (b, r), e in zip(parts, extra)], combine)
            outs = [func(self._local_rows(b, r), shared, e, c)
                    for (b, r), e, c in zip(parts, extra, carry)]
            return _total([o[0] for o in outs], combine), [o[1] for o in outs]
        shared_f = self._share(shared, parts)
        slots = getattr(self, "_slots", None) or [0] * self.n_blocks
        owners = [slots[b] for b, _ in parts]
        if combine is None:
            plans = {}
            for i, o in enumerate(owners):
                plans.setdefault(o, []).append(i)
            top = [_Export(o, plans[o].index(i)) for i, o in enumerate(owners)]
        else:
            plans, top = split_tree(owners)
        tasks, states = {}, [None] * len(parts)
        for o, plan in plans.items():
            mine = [i for expr in plan for i in _expr_leaves(expr)]
            local = {i: k for k, i in enumerate(mine)}
            leaves = [(self._futures[parts[i][0]], parts[i][1], extra[i])
                      + ((carry[i],) if carried else ()) for i in mine]
            tasks[o] = self._submit(_on_slot, func, combine, leaves, shared_f[mine[0]],
                                    [_relabel(e, local) for e in plan], carried,
                                    name=_name(func),
                                    **_near(self._homes[parts[mine[0]][0]]
                                            if getattr(self, "_homes", None) else None))
            for k, i in enumerate(mine):
                # the state stays in the slot's result, where its block lives: the
                # next call's task for the block reads it there (a future in a
                # tuple is resolved for the task), by its local index
                states[i] = (tasks[o], k)
        for e in (top if combine is None else _leaves(top)):
            e.source = tasks[e.source]
        results = self._gather(top, combine)
        # nothing the caller keeps depends on this update's parameters: the workers'
        # copies go now, not when the garbage collector finds the futures
        for f in {f.key: f for f in shared_f}.values():
            f.release()
        return (results, states) if carried else results

    def map_rows_carry(self, func, rows, shared, extras, carry=None, combine=None):
        """:meth:`map_rows` for per-row work whose state stays with the block.

        ``func(block_rows, shared, extra, state) -> (result, state)``: the
        ``result`` comes back (in block order, or with ``combine`` their total,
        as in :meth:`map_rows`); the ``state`` (e.g. Markov chains of the rows)
        stays where the block lives and is handed to the next call through
        ``carry`` (the second return value; ``None`` at first). With a client
        the tasks are :meth:`map_rows`' (one per thread slot and call), each
        block's state kept in its slot's result, which the next call's task
        for the block reads on the same worker: the states stay per block, so
        the results do not depend on the number of slots. Without a client it
        stays in memory. A lost worker's states
        are recomputed from their lineage (the earlier calls' tasks, which carry
        their seeds, and the tasks of the parameters they read), so they do not
        depend on where the tasks ran.

        Returns
        -------
        results : list
        carry : list
            One state per block of ``split(rows)``, for the next call on the same rows.
        """
        return self._map(func, rows, shared, extras, combine, True, carry)

    def take(self, rows):
        """The rows ``rows`` (any order, repeats allowed) gathered as one matrix.

        Increasing rows (an early-stopping slice) are the stacked pieces
        themselves, and the pieces are let go before any reordering copy: the
        client holds at most two copies of the rows at once, not three.
        """
        rows = np.asarray(rows, dtype=np.int64)
        uniq = np.unique(rows)
        parts = self.split(uniq)
        if self.client is None:
            pieces = [self._local_rows(b, r) for b, r in parts]
        else:
            pieces = self.client.gather([self._submit(_select, self._futures[b], r)
                                         for b, r in parts])
            forget_sent(self.client)
        stack = sp.vstack(pieces, format="csr") if sp.issparse(pieces[0]) else np.vstack(pieces)
        del pieces
        if np.array_equal(rows, uniq):
            return stack
        return stack[np.searchsorted(uniq, rows)]

    def subset(self, rows):
        """The rows ``rows`` (increasing) as a :class:`RowBlocks` of their own, not gathered.

        Row ``i`` of the subset is row ``rows[i]`` of this one; its tasks run on the
        same blocks where they live (nothing is copied or persisted again), and rows
        outside ``rows`` are never read by them: the training rows of a fit that
        holds out a slice. ``summaries`` and ``nnz`` are those of the subset's rows
        (one task per block holding some, only their summaries come back).
        """
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows[0] < 0 or rows[-1] >= self.shape[0]
                          or np.any(np.diff(rows) <= 0)):
            raise ValueError("a subset's rows must be increasing row indices")
        new = self._view(rows if self._rows is None else self._rows[rows], rows.size)
        new._whole_summaries = (self._whole_summaries if self._rows is not None
                                else (self.nnz, self.summaries))
        both = new.map_rows(_summary_of_rows, slice(None), self._summarize,
                            lambda parts: [None] * len(parts))
        new.nnz = sum(n for n, _ in both)
        new.summaries = [s for _, s in both]
        return new

    def whole(self):
        """The whole array a :meth:`subset` was taken from (itself when not a subset).

        The same blocks where they live (nothing is read, copied or recomputed),
        with the whole array's shape, ``nnz`` and ``summaries``.
        """
        if self._rows is None:
            return self
        new = self._view(None, self.offsets[-1])
        new.nnz, new.summaries = self._whole_summaries
        return new

    def _view(self, rows, n_rows):
        """This object's blocks (shared, not copied) seen through ``rows`` of them
        (``None``: all), ``n_rows`` long: the one constructor of subsets and wholes."""
        new = object.__new__(RowBlocks)
        new.__dict__.update(self.__dict__)
        new.shape, new._rows = (int(n_rows), self.shape[1]), rows
        return new

    def __getitem__(self, rows):
        return RowSelection(self, rows)

    def release(self):
        """Let the workers drop the persisted blocks (the object is unusable after)."""
        self._futures = []
        self._X = self._parent = None


class RowSelection:
    """Some rows of a :class:`RowBlocks`, not gathered: a minibatch handle.

    ``shape`` is known; :meth:`toarray` gathers the rows (for the few rows an
    initialisation needs); :meth:`map` runs per-row work where the blocks live.
    """

    def __init__(self, blocks, rows):
        if not isinstance(rows, slice):
            rows = np.asarray(rows, dtype=np.int64)
            n = rows.size
        else:
            start, stop, step = rows.indices(blocks.shape[0])
            if step != 1:
                rows = np.arange(start, stop, step)
                n = rows.size
            else:
                n = max(0, stop - start)
        self.blocks, self.rows = blocks, rows
        self.shape = (n, blocks.shape[1])

    def _sorted(self):
        return isinstance(self.rows, slice) or bool(np.all(np.diff(self.rows) > 0))

    def toarray(self):
        rows = (np.arange(*self.rows.indices(self.blocks.shape[0]))
                if isinstance(self.rows, slice) else self.rows)
        out = self.blocks.take(rows)
        return out.toarray() if sp.issparse(out) else np.asarray(out)

    def map(self, func, shared, extras, combine=None):
        """:meth:`RowBlocks.map_rows` over these rows (which must be increasing)."""
        if not self._sorted():
            raise ValueError("a minibatch's rows must be increasing")
        return self.blocks.map_rows(func, self.rows, shared, extras, combine)

    def map_carry(self, func, shared, extras, carry=None, combine=None):
        """:meth:`RowBlocks.map_rows_carry` over these rows (which must be increasing)."""
        if not self._sorted():
            raise ValueError("a minibatch's rows must be increasing")
        return self.blocks.map_rows_carry(func, self.rows, shared, extras, carry, combine)


# ------------------------------------------------- real and binary rows (GRBM, DBM)
# The binary and Gaussian models train on dense minibatches of real (or 0/1) rows:
# their blocks are checked as ``validate_data`` checks in-memory input, summarised
# by what the models read of the whole data (the largest magnitude, the column
# sums), and densified one task's rows at a time.

def prepare_float_block(X, *, dtype, what, binary=False, binarize=None, hint=None):
    """One block checked where it lives, with the in-memory ``ValueError``s.

    Finite and numeric (scikit-learn's ``check_array``, naming ``what``), then
    with ``binary`` thresholded at ``binarize`` (when not ``None``) and checked
    for 0/1 entries; CSR stays CSR. Returned in ``dtype``.
    """
    from sklearn.utils.validation import check_array

    from .base import binarize_input, check_binary

    X = check_array(X, accept_sparse="csr", dtype=(np.float64, np.float32),
                    ensure_min_samples=0, estimator=what)
    if binary:
        if binarize is not None:
            X = binarize_input(X, binarize)
        check_binary(X, what=what, hint=hint)
    return X.astype(dtype, copy=False)


def float_summary(X):
    """What the client keeps of a prepared real block: rows, column sums (in the
    block's dtype, as ``X.mean(axis=0)`` sums) and the largest magnitude."""
    if sp.issparse(X):
        col = np.asarray(X.sum(axis=0)).ravel()
        big = float(abs(X).max()) if X.nnz else 0.0
    else:
        col = X.sum(axis=0)
        big = float(np.max(np.abs(X))) if X.size else 0.0
    return {"n": X.shape[0], "col_sum": col, "max_abs": big}


def float_blocks(estimator, X, *, reset, model_dtype=None, binary=False, dtype=None):
    """A row-chunked dask array of real (``binary``: 0/1) rows as :class:`RowBlocks`.

    The client-side checks of :func:`check_dask_rows`, then every block checked
    (:func:`prepare_float_block`, the estimator's ``binarize`` applied) and
    summarised (:func:`float_summary`) where it lives. The dtype follows
    in-memory validation: a new model trains in the estimator's ``dtype``
    (:func:`skdgm._core.base.training_dtype`), a fitted model's ``model_dtype``
    wins when ``reset`` is false; ``dtype`` fixes it (an estimator that always
    trains in float64).
    """
    from .base import binary_hint, working_dtype

    check_dask_rows(estimator, X, reset=reset)
    if dtype is None:
        dtype = working_dtype(getattr(estimator, "dtype", None), X,
                              None if reset else model_dtype, training=True)
    name = type(estimator).__name__
    prepare = partial(prepare_float_block, dtype=dtype, what=name, binary=binary,
                      binarize=getattr(estimator, "binarize", None) if binary else None,
                      hint=binary_hint(estimator) if binary else None)
    return RowBlocks(X, prepare, float_summary, client=active_client(), dtype=dtype)


def tree_reduce(items, combine):
    """``items`` combined pairwise, level by level: ``(0 1) (2 3) ...``, an odd last
    item carried up, until one is left (``log2(n)`` levels instead of ``n - 1`` steps).

    ``combine(a, b)`` may return a future (``client.submit``), so the tree is
    built from futures on the workers; its shape depends on ``len(items)`` only.
    """
    level = list(items)
    if not level:
        raise ValueError("tree_reduce needs at least one item")
    while len(level) > 1:
        pairs = [combine(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        level = pairs + level[len(pairs) * 2:]
    return level[0]


def add_parts(a, b):
    """Two blocks' results added entry by entry: arrays and numbers, nested alike in
    tuples (named or not) and lists. The ``combine`` of :meth:`RowBlocks.map_rows`
    for results that are sums throughout (the binary models' positive phases)."""
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(add_parts(x, y) for x, y in zip(a, b)))
    if isinstance(a, (tuple, list)):
        return type(a)(add_parts(x, y) for x, y in zip(a, b))
    return a + b


def sum_parts(parts):
    """The sum of equally shaped per-block results, in block order (the first one
    itself when there is one block, so one block reproduces the in-memory sums)."""
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


class RowView:
    """The rows ``rows`` of an in-memory array, read where they are (not copied).

    What a fit that holds out a slice trains on in memory (the counterpart of
    :meth:`RowBlocks.subset`): row ``i`` is row ``rows[i]`` of ``base``, and
    ``view[key]`` (a slice or an index array over the view's rows) is
    ``base[rows[key]]``, the same values the copy ``base[rows][key]`` would give.
    Copying the training rows held the data a second time (3.1 GB for a million
    MNIST rows in float32). The consumers read it through ``shape``, ``dtype``,
    ``size``, row selection, :func:`column_means`, :func:`max_abs` and
    :func:`gather_rows`; a minibatch is a fancy-indexed copy of its rows, as it
    was of the copy.
    """

    def __init__(self, base, rows):
        self.base, self.rows = base, np.asarray(rows, dtype=np.intp)
        self.shape = (self.rows.size, base.shape[1])
        self.dtype = base.dtype

    @property
    def size(self):
        return self.shape[0] * self.shape[1]

    def __getitem__(self, key):
        return self.base[self.rows[key]]

    def chunks(self, n_rows=4096):
        """The view's rows, ``n_rows`` at a time, in order (bounded temporaries)."""
        for a in range(0, self.shape[0], n_rows):
            yield self[a:a + n_rows]


def max_abs(X):
    """The largest magnitude of ``X``'s entries (of a :class:`RowBlocks`' from its summaries)."""
    if isinstance(X, RowBlocks):
        return max(s["max_abs"] for s in X.summaries)
    if isinstance(X, RowView):
        return float(np.max([max_abs(c) for c in X.chunks()] or [0.0]))   # NaN propagates
    if sp.issparse(X):
        return float(abs(X).max())
    # two reductions instead of np.abs(X): no temporary the size of the data (a
    # GRBM pass read it every pass, 2.6 GB at a million MNIST rows); NaN propagates
    return float(np.maximum(np.max(X), -np.min(X)))


def column_means(X):
    """``X.mean(axis=0)`` as a 1-D array (a :class:`RowBlocks`' from its column sums)."""
    if isinstance(X, RowBlocks):
        return sum_parts([s["col_sum"] for s in X.summaries]) / X.shape[0]
    if isinstance(X, RowView):
        total = sum(np.asarray(c.sum(axis=0, dtype=np.float64)).ravel() for c in X.chunks())
        return (total / X.shape[0]).astype(np.result_type(X.dtype, np.float32))
    return np.asarray(X.mean(axis=0)).ravel()


def gather_rows(X, rows):
    """The rows ``rows`` (any order, repeats allowed) of ``X`` as a dense array:
    gathered from a :class:`RowBlocks` (for the few rows a start needs)."""
    if isinstance(X, RowBlocks):
        out = X.take(rows)
    else:
        out = X[rows]
    return out.toarray() if sp.issparse(out) else out


def block_seeds(rng):
    """``extras`` for :meth:`RowSelection.map`: one ``SeedSequence`` per block, in
    block order, spawned from entropy drawn from ``rng`` (one draw per minibatch)."""
    root = np.random.SeedSequence([int(x) for x in rng.integers(0, 2**63, size=2)])
    return lambda parts: root.spawn(len(parts))


# ------------------------------------- inference on a dask array, block by block
# transform / score_samples / score of every estimator take a row-chunked dask
# array: the estimator (a snapshot, one key of the graph) runs its in-memory
# method on every block where the block lives (``map_blocks``); transform and
# score_samples return a dask array, score a float from per-block sums.

#: The methods :func:`blockwise` wraps (by :class:`skdgm._core.base.BaseGenerativeModel`).
BLOCKWISE_METHODS = ("transform", "score_samples", "score")


def blockwise(method):
    """``method(self, X, ...)`` that, given a ``dask.array.Array``, runs block by block.

    An in-memory ``X`` goes to ``method`` unchanged. A row-chunked dask array
    (:func:`check_dask_rows`) is never gathered: see :func:`dask_method`.
    """
    import functools

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if is_dask_array(X):
            return dask_method(self, method, X, args, kwargs)
        return method(self, X, *args, **kwargs)

    wrapper._skdgm_blockwise = True
    return wrapper


def _on_block(block, est, name, args, kwargs, width):
    out = getattr(est, name)(block, *args, **kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    return np.concatenate([np.asarray(o).reshape(block.shape[0], -1) for o in outs],
                          axis=1) if width else np.asarray(out)


def _score_on_block(block, est, args, kwargs):
    return np.asarray(est._score_block(block, **kwargs), dtype=np.float64)


def dask_method(est, method, X, args, kwargs):
    """``method`` of a fitted ``est`` on a row-chunked dask array ``X``, block by block.

    The estimator is checked fitted and ``X``'s shape (:func:`check_dask_rows`)
    on the client; then one row is computed and passed to ``method`` in
    memory: it gives the output's columns and dtype, and fills the caches
    every block would otherwise fill again (a ``log Z`` estimate), so that the
    snapshot sent to the workers carries them. Every block runs the in-memory
    ``method`` on its rows: ``transform`` and ``score_samples`` return dask
    arrays (tuples of them with ``return_std=True``) chunked as ``X``'s rows,
    lazily; a block's rows get the values ``method`` gives that block in
    memory (the per-call random streams are seeded per call, so values that
    involve randomness depend on the chunking, as they depend on how an
    in-memory input is split into calls). ``score`` is computed now and
    returned as a float: the estimator's ``_score_block`` sums (a numerator
    and a denominator) added over blocks. Entries that fail validation raise
    the in-memory ``ValueError`` when their block is computed.
    """
    import copy
    import uuid

    import dask
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est)
    check_dask_rows(est, X, reset=False)
    name = method.__name__
    if name == "score" and kwargs.get("return_std"):
        raise ValueError(
            f"{type(est).__name__}.score(return_std=True) is not available on a dask "
            f"array (the standard error does not add over blocks); use "
            f"score_samples(X, return_std=True) block by block, or an in-memory array")
    snap = copy.deepcopy(est)
    first = X[:1].compute()
    probe = (snap._score_block(first, **kwargs) if name == "score"
             else method(snap, first, *args, **kwargs))
    # a fresh key: the snapshot is this call's model, whatever happens to ``est`` next
    handle = dask.delayed(snap, name=f"{type(est).__name__}-{uuid.uuid4().hex}")
    if name == "score":
        kwargs = {k: v for k, v in kwargs.items() if k != "return_std"}
        sums = X.map_blocks(_score_on_block, handle, args, kwargs, dtype=np.float64,
                            drop_axis=1, chunks=((2,) * X.numblocks[0],),
                            meta=np.empty((0,)))
        num, den = sums.compute().reshape(-1, 2).sum(axis=0)
        return float(num / max(den, 1))
    outs = probe if isinstance(probe, tuple) else (probe,)
    if not all(isinstance(o, np.ndarray) and o.ndim in (1, 2) for o in outs):
        raise ValueError(
            f"{type(est).__name__}.{name} with these options returns "
            f"{type(probe).__name__}, not arrays: not available on a dask array")
    widths = [1 if o.ndim == 1 else o.shape[1] for o in outs]
    dtype = np.result_type(*outs)
    total = sum(widths)
    joined = X.map_blocks(_on_block, handle, name, args, kwargs, 1, dtype=dtype,
                          chunks=(X.chunks[0], (total,)), meta=np.empty((0, 0), dtype))
    res, start = [], 0
    for o, w in zip(outs, widths):
        part = joined[:, start:start + w]
        res.append((part[:, 0] if o.ndim == 1 else part).astype(o.dtype, copy=False))
        start += w
    return tuple(res) if isinstance(probe, tuple) else res[0]

"""Independent Markov chains through joblib.

:func:`run_chains` is the one place where skdgm fans work out: AIS run groups,
posterior chains, chunks of documents. It calls a module-level function once per
task with that task's own generator, through :class:`joblib.Parallel`, so the
caller's ``n_jobs`` and whatever backend is active (``loky``, ``threading``, or
``dask`` inside ``joblib.parallel_config(backend="dask")``) decide where it runs,
while the streams, and so the results, do not depend on either.

A fit calls it many times (every minibatch of DeepLDA, every AIS estimate); inside
:func:`chain_pool` (which the training contract of ``fit`` / ``partial_fit`` opens)
those calls share one :class:`joblib.Parallel` and so one set of workers, rather than
paying a scheduler start-up per call.

Two rules keep ``n_jobs`` from costing more than it brings. The tasks travel in a
few contiguous batches (:data:`BATCHES_PER_WORKER` per worker), each one pickled
message, so shared arguments (the topics of a DeepLDA model, megabytes) are
serialised, hashed and memory-mapped once per batch rather than once per task; and
a call whose caller-estimated ``cost`` is below :data:`MIN_PARALLEL_COST` CPU
seconds runs in-process, where a dispatch would take longer than the work. The
batches are few, so all of them are handed to joblib at once (``pre_dispatch="all"``):
its feeder thread serialises the later ones while the workers run the first, instead
of after each completion, which left a worker idle between batches. Neither rule
touches a stream: every task keeps its own seed, so results are those of
``n_jobs=1``.

A caller whose tasks spend their time in kernels that release the GIL (DeepLDA's
training) passes ``prefer="threads"``, the soft hint scikit-learn's forests give:
unless the user's ``joblib.parallel_config`` names a backend, the tasks then run
on threads of this process, which read the shared arguments where they are (no
pickling, no memory-mapped files, no results sent back through a pipe) and start
in microseconds. Threads take the tasks one at a time (nothing to amortise over a
batch, and the finest balance between workers), the costliest first when the
caller estimates each task's cost, and a call pays from
:data:`MIN_THREAD_COST` CPU seconds on rather than :data:`MIN_PARALLEL_COST`.
Thread workers are started by :func:`_run_threads`, not by joblib's threading
backend, whose ``Parallel`` waits for results by polling every 10 ms (joblib
1.3-1.6): 0-10 ms lost after the last task of every call, 5-10 % of a DeepLDA
update of 2,000 documents (``bench_parallel.py --updates``, issue 26). The
calling thread waits (see :func:`_run_threads`), and nested calls from a task run
in-process.
"""

import atexit
import contextlib
import contextvars
import os
import shutil
import tempfile
import threading
import uuid
import weakref

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.parallel import get_active_backend

from .random import as_generator, spawn_seeds

__all__ = ["chain_pool", "run_chains", "thread_workers", "map_threads", "cost_batches",
           "even_chunks",
           "shared_array",
           "share_arguments",
           "BATCHES_PER_WORKER", "MIN_PARALLEL_COST", "MIN_THREAD_COST", "SHARE_MIN_BYTES"]

#: Batches of tasks per worker: more than one, so that a worker slowed by other
#: jobs on a shared machine hands its later batch to the others; few, because
#: every batch a worker starts waits for its previous result to be sent and the
#: next message to arrive (``bench_parallel.py --timeline`` compares 2 to 16
#: batches per call, issue 26).
BATCHES_PER_WORKER = 2
#: CPU seconds (the caller's estimate) below which ``run_chains`` stays in-process:
#: on a loaded machine a loky round trip waits for two more processes to be
#: scheduled, and a DeepLDA transform of 2,000 documents (about 0.15 CPU-s) took
#: longer in wall-clock time with two workers than with one (issue 26).
MIN_PARALLEL_COST = 0.5
#: The same threshold when the workers are threads of this process
#: (``prefer="threads"`` and no other backend configured): a thread hand-over
#: costs microseconds and sends nothing, so a DeepLDA ``partial_fit`` of 2,000
#: documents (about 0.2 CPU-s) already pays, while calls of one chunk (one task)
#: always stay in-process (``bench_parallel.py``, issue 26).
MIN_THREAD_COST = 0.1
#: Read-only arrays from this size on travel to process workers as a file mapped in
#: memory (:func:`shared_array`); joblib's own threshold for memory-mapping (1 MB),
#: below which pickling the bytes costs less than opening a file.
SHARE_MIN_BYTES = 1 << 20
# joblib backends whose workers are processes on this machine, reading the same files
_PROCESS_BACKENDS = ("LokyBackend", "MultiprocessingBackend")
_THREAD_BACKENDS = ("ThreadingBackend",)


class _Pool:
    """One ``Parallel`` for a fit, created on first use and entered until the fit ends."""

    def __init__(self, n_jobs, stack):
        self.n_jobs = n_jobs
        self._stack = stack
        self._parallel = {}      # one per ``prefer`` hint asked for
        self.busy = False
        self.n_created = 0

    def get(self, prefer=None):
        if prefer not in self._parallel:
            self._parallel[prefer] = self._stack.enter_context(_parallel(self.n_jobs, prefer))
            self.n_created += 1
        return self._parallel[prefer]


def _parallel(n_jobs, prefer):
    # batch_size=1: run_chains forms its own batches (one per message for
    # processes, single tasks for threads) and every one is dispatched at once
    return Parallel(n_jobs=n_jobs, pre_dispatch="all", batch_size=1, prefer=prefer)


_ACTIVE_POOL = contextvars.ContextVar("skdgm_chain_pool", default=None)


@contextlib.contextmanager
def chain_pool(n_jobs=None):
    """Let every :func:`run_chains` call inside the block with this ``n_jobs`` share workers.

    The :class:`joblib.Parallel` is created on the first call that needs one (a fit
    that never fans out starts no workers) under the ``joblib.parallel_config``
    active at that moment, and shut down when the block ends. Results are those of
    separate calls: each task still gets its own stream.

    Parameters
    ----------
    n_jobs : int, optional
        The ``n_jobs`` of the calls to serve; a call asking for another value
        gets its own ``Parallel`` as outside any pool.

    Yields
    ------
    pool : object
        The pool (its ``n_created`` counts the ``Parallel`` objects made, 0 or 1).

    See Also
    --------
    run_chains

    Examples
    --------
    >>> from skdgm._core.chains import chain_pool, run_chains
    >>> def first_draw(task, rng):
    ...     return task + rng.random()
    >>> with chain_pool(n_jobs=1):
    ...     a = run_chains(first_draw, 3, random_state=0, n_jobs=1)
    >>> a == run_chains(first_draw, 3, random_state=0, n_jobs=1)
    True
    """
    with contextlib.ExitStack() as stack:
        pool = _Pool(n_jobs, stack)
        token = _ACTIVE_POOL.set(pool)
        try:
            yield pool
        finally:
            _ACTIVE_POOL.reset(token)


class _SharedFiles:
    """This process's files behind :func:`shared_array`, one per live read-only array."""

    def __init__(self):
        self.lock = threading.Lock()
        self.views = {}          # id(array) -> (weakref to the array, memmap of its file)
        self.folder = None
        self.pid = os.getpid()   # a forked child must not delete its parent's files

    def folder_path(self):
        if self.folder is None:
            # memory-backed where the system has it, as joblib's own dumps are
            shm = "/dev/shm"
            base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
            self.folder = tempfile.mkdtemp(prefix="skdgm-shared-", dir=base)
            atexit.register(self.remove_all)
        return self.folder

    def forget(self, key, path):
        if os.getpid() != self.pid:
            return
        with self.lock:
            hit = self.views.get(key)
            if hit is not None and hit[1].filename == path:
                del self.views[key]
        with contextlib.suppress(OSError):
            os.unlink(path)

    def remove_all(self):
        if os.getpid() == self.pid and self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


_FILES = _SharedFiles()


def shared_array(a):
    """A read-only memory map of the read-only array ``a``, its file written once.

    The first call for an array writes its bytes to a file in a private temporary
    folder (``/dev/shm`` where available); later calls return the same map. The
    file is deleted when ``a`` is garbage-collected (a refit or a dropped
    estimator releases its kept samples), and the folder when the process exits.
    joblib sends a memory-mapped array to its process workers as the file's name,
    so they map the same pages instead of receiving a copy. Nothing is added to
    the object holding ``a``: pickling it writes its arrays as before.

    Parameters
    ----------
    a : ndarray
        Must be read-only (``a.flags.writeable`` False): the file is a snapshot,
        correct only while the array cannot change.

    Returns
    -------
    view : numpy.memmap
        Equal to ``a`` (C order), read-only.
    """
    if a.flags.writeable:
        raise ValueError("shared_array needs a read-only array: the file is a snapshot")
    key = id(a)
    with _FILES.lock:
        hit = _FILES.views.get(key)
    if hit is not None and hit[0]() is a:
        return hit[1]
    path = os.path.join(_FILES.folder_path(), f"{uuid.uuid4().hex}.bin")
    np.ascontiguousarray(a).tofile(path)
    view = np.memmap(path, dtype=a.dtype, mode="r", shape=a.shape)
    # the array's death (not the caller's) ends the file: every call reuses it
    ref = weakref.ref(a, lambda _, key=key, path=path: _FILES.forget(key, path))
    with _FILES.lock:
        _FILES.views[key] = (ref, view)
    return view


def _share(value):
    if isinstance(value, np.ndarray) and not isinstance(value, np.memmap):
        if (not value.flags.writeable and value.nbytes >= SHARE_MIN_BYTES and value.size
                and value.ndim and not value.dtype.hasobject):
            return shared_array(value)
        return value
    if isinstance(value, (list, tuple)):
        items = [_share(v) for v in value]
        if all(x is y for x, y in zip(items, value)):
            return value
        if isinstance(value, list):
            return items
        if hasattr(value, "_fields"):
            return value._make(items)
        # other tuple subclasses (DeepLDA's KeptSample copies its arrays when built)
        return tuple(items)
    if isinstance(value, dict):
        return {k: _share(v) for k, v in value.items()}
    return value


def share_arguments(kwargs):
    """``kwargs`` with every large read-only array (in lists, tuples, dicts) memory-mapped.

    Used by :func:`run_chains` before it hands work to process workers; the
    arrays' values are unchanged, so the results are too. Writable arrays (which
    could change between calls) and small ones are left to joblib.
    """
    return {k: _share(v) for k, v in kwargs.items()}


def _workers_kind(prefer=None):
    """``"processes"``, ``"threads"`` or ``"other"`` (dask...): what ``Parallel(prefer=prefer)``
    would run on under the active ``joblib.parallel_config``."""
    backend, _ = get_active_backend(prefer=prefer)
    name = type(backend).__name__
    if name in _PROCESS_BACKENDS:
        return "processes"
    return "threads" if name in _THREAD_BACKENDS else "other"


def _call_with_stream(func, task, seed, kwargs):
    return func(task, as_generator(seed), **kwargs)


def _call_batch(func, tasks, seeds, kwargs):
    # one message per batch: kwargs are pickled once for all of its tasks
    return [func(t, as_generator(s), **kwargs) for t, s in zip(tasks, seeds)]


#: ``True`` sends thread workers' tasks through joblib's threading backend, as
#: before :func:`_run_threads` (kept for ``bench_parallel.py --updates``' side-by-side
#: comparison; the results are the same either way).
_JOBLIB_THREADS = False
# set while a thread worker of _run_threads runs a task: the other workers are busy
# with the caller's tasks, so a call the task makes runs in-process (same streams)
_IN_THREAD_TASK = contextvars.ContextVar("skdgm_in_thread_task", default=False)


def _run_threads(func, tasks, seeds, kwargs, n_workers):
    """``func(task, rng, **kwargs)`` for every task on ``n_workers`` threads, in task order.

    ``n_workers`` threads are started for the call (tens of microseconds each);
    each takes the next task not yet taken, in the order given, until none is
    left, and the call returns as soon as the last one ends (``Thread.join`` wakes
    on a lock, where joblib's ``Parallel`` sleeps 10 ms between polls). The
    calling thread only waits: when it worked as one of the workers, the tasks of
    a DeepLDA update cost about 25 % more CPU on an idle host (0.184 against 0.151
    CPU-s; cause not established), which lost more than the polling
    (``bench_parallel.py --updates``, ``parallel_updates_idle.txt``). A failing
    task stops the others from taking new ones; its exception is raised once
    every thread is done.
    """
    results = [None] * len(tasks)
    failed = []
    lock = threading.Lock()
    pending = iter(range(len(tasks)))

    def work():
        token = _IN_THREAD_TASK.set(True)
        try:
            while not failed:
                with lock:
                    i = next(pending, None)
                if i is None:
                    return
                try:
                    rng = None if seeds[i] is None else as_generator(seeds[i])
                    results[i] = func(tasks[i], rng, **kwargs)
                except BaseException as exc:  # noqa: BLE001 - re-raised below
                    failed.append(exc)
        finally:
            _IN_THREAD_TASK.reset(token)

    # each thread runs in its own copy of the caller's context (a copy cannot be
    # entered by two threads), so context variables such as the active pool carry over
    helpers = [threading.Thread(target=contextvars.copy_context().run, args=(work,),
                                daemon=True)
               for _ in range(min(n_workers, len(tasks)))]
    for t in helpers:
        t.start()
    for t in helpers:
        t.join()
    if failed:
        raise failed[0]
    return results


def map_threads(func, items, n_jobs=None):
    """``[func(item) for item in items]`` on up to ``n_jobs`` threads of this process.

    For short work on shared arrays that the caller would otherwise do alone between
    two parallel steps, e.g. adding DeepLDA's chunk counts into disjoint rows of one
    array in place: threads read and write the arrays where they are, whatever
    joblib backend is configured, and nothing is pickled. ``func`` should spend its
    time in code that releases the GIL. In-process, in order, for ``n_jobs=1``, a
    single item, or a call from a thread worker's task; results in item order.
    """
    items = list(items)
    n = 1 if n_jobs == 1 or _IN_THREAD_TASK.get() else _n_workers(n_jobs)
    if n <= 1 or len(items) <= 1:
        return [func(item) for item in items]
    return _run_threads(_call_item, items, [None] * len(items), {"func": func}, n)


def _call_item(item, rng, *, func):
    return func(item)


def _n_workers(n_jobs):
    try:
        n = effective_n_jobs(n_jobs)
    except Exception:  # noqa: BLE001 - a backend without a fixed size: assume two
        n = 2
    return max(1, int(n)) if n and n > 0 else 2


def thread_workers(n_jobs=None, prefer=None):
    """How many thread workers :func:`run_chains` would fan a call's tasks out to under
    ``n_jobs`` and the active ``joblib.parallel_config`` (0 when it would run them
    in-process, or on process or other workers), whatever the tasks' cost."""
    if n_jobs == 1 or _IN_THREAD_TASK.get() or _workers_kind(prefer) != "threads":
        return 0
    n = _n_workers(n_jobs)
    return n if n > 1 else 0


def run_chains(func, tasks, *, random_state=None, seeds=None, n_jobs=None, cost=None,
               prefer=None, **kwargs):
    """Run ``func(task, rng, **kwargs)`` for every task, each with its own stream.

    Parameters
    ----------
    func : callable
        A picklable (module-level) function ``func(task, rng, **kwargs)``.
    tasks : int or sequence
        The tasks, or a count ``n`` for ``tasks = range(n)``.
    random_state : None, int, SeedSequence, Generator or RandomState
        Source of the per-task streams (``SeedSequence.spawn``), ignored when
        ``seeds`` is given.
    seeds : sequence of SeedSequence, optional
        Explicit per-task seeds, e.g. kept from an earlier call to continue chains.
    n_jobs : int, optional
        Passed to :class:`joblib.Parallel`; ``None`` means what the active
        ``joblib.parallel_config`` says (1 outside any such context).
    cost : float or sequence of float, optional
        The caller's estimate of the CPU seconds of all the tasks together, or of
        each task: below :data:`MIN_PARALLEL_COST` in all they run in-process
        whatever ``n_jobs`` says (the same results: the streams are per task).
        ``None``: no estimate, ``n_jobs`` decides. With one estimate per task,
        thread workers take the costliest first (the longest-processing-time
        rule: the last task to finish is a short one), process workers receive
        batches of near-equal cost (:func:`cost_batches`), and the results still
        come back in task order.
    **kwargs
        Shared, read-only arguments (large arrays reach process workers as
        read-only memmaps: kernels take ``const`` memoryviews).

    Returns
    -------
    results : list
        ``func``'s return values, in task order.

    See Also
    --------
    chain_pool : share one set of workers between the calls of a fit.
    """
    if isinstance(tasks, (int, np.integer)):
        tasks = range(int(tasks))
    tasks = list(tasks)
    if seeds is None:
        seeds = spawn_seeds(random_state, len(tasks))
    elif len(seeds) != len(tasks):
        raise ValueError(f"got {len(seeds)} seeds for {len(tasks)} tasks")
    seeds = list(seeds)
    if len(tasks) == 0:
        return []
    per_task = cost is not None and np.ndim(cost) == 1
    if per_task and len(cost) != len(tasks):
        raise ValueError(f"got {len(cost)} costs for {len(tasks)} tasks")
    total = float(np.sum(cost)) if per_task else cost
    fan_out = len(tasks) > 1 and n_jobs != 1 and not _IN_THREAD_TASK.get()
    kind = _workers_kind(prefer) if fan_out else None
    floor = MIN_THREAD_COST if kind == "threads" else MIN_PARALLEL_COST
    if kind is None or (total is not None and total < floor):
        # Same calls, same streams, no scheduler overhead.
        return _call_batch(func, tasks, seeds, kwargs)
    order = None
    if kind == "threads":
        if per_task:
            order = np.argsort(-np.asarray(cost, dtype=float), kind="stable")
            tasks, seeds = [tasks[i] for i in order], [seeds[i] for i in order]
        if not _JOBLIB_THREADS:
            results = _run_threads(func, tasks, seeds, kwargs, _n_workers(n_jobs))
            return results if order is None else [results[i] for i in np.argsort(order)]
        groups = [slice(i, i + 1) for i in range(len(tasks))]
    else:
        n_batches = BATCHES_PER_WORKER * _n_workers(n_jobs)
        groups = (cost_batches(cost, n_batches) if per_task
                  else even_chunks(len(tasks), n_batches))
    pool = _ACTIVE_POOL.get()
    if kind == "processes":
        kwargs = share_arguments(kwargs)
    calls = (delayed(_call_batch)(func, _pick(tasks, g), _pick(seeds, g), kwargs)
             for g in groups)
    # A call made while the pool is running (a task that itself fans out) cannot
    # re-enter the same Parallel: it gets its own.
    if pool is None or pool.busy or pool.n_jobs != n_jobs:
        batches = _parallel(n_jobs, prefer)(calls)
    else:
        pool.busy = True
        try:
            batches = pool.get(prefer)(calls)
        finally:
            pool.busy = False
    if order is not None:
        results = [res for batch in batches for res in batch]
        return [results[i] for i in np.argsort(order)]
    results = [None] * len(tasks)
    for g, batch in zip(groups, batches):
        for i, res in zip(range(len(tasks))[g] if isinstance(g, slice) else g, batch):
            results[i] = res
    return results


def _pick(items, group):
    return items[group] if isinstance(group, slice) else [items[i] for i in group]


def cost_batches(cost, n_batches):
    """The tasks' indices in ``n_batches`` batches of near-equal summed ``cost``,
    the costliest batch first.

    Process workers take the batches in the order given, so the longest-processing-
    time rule (each task, costliest first, to the batch with the least cost so far)
    leaves the workers' last batches ending together, where contiguous batches of
    documents of uneven lengths left one worker 5 % more than the other
    (``bench_parallel.py --profile``, issue 26). Only the grouping of tasks into
    messages depends on it, never a task's stream: the results are the same.

    Parameters
    ----------
    cost : sequence of float
        Each task's estimated cost (any unit).
    n_batches : int
        How many batches to form (at most one per task).

    Returns
    -------
    groups : list of list of int
        Each batch's task indices, ascending, the batches by decreasing summed
        cost; ties go to the lower index, so the grouping depends on ``cost`` and
        ``n_batches`` alone.
    """
    cost = np.asarray(cost, dtype=float)
    n_batches = max(1, min(int(n_batches), len(cost)))
    loads, groups = np.zeros(n_batches), [[] for _ in range(n_batches)]
    for i in np.argsort(-cost, kind="stable"):
        b = int(np.argmin(loads))
        groups[b].append(int(i))
        loads[b] += cost[i]
    return [sorted(groups[b]) for b in np.argsort(-loads, kind="stable")]


def even_chunks(n, n_chunks):
    """Split ``range(n)`` into ``n_chunks`` contiguous slices of near-equal size.

    The split depends only on ``n`` and ``n_chunks`` (never on ``n_jobs``), which
    is what keeps chunked work reproducible across schedulers.
    """
    n_chunks = max(1, min(int(n_chunks), int(n))) if n > 0 else 0
    bounds = np.linspace(0, n, n_chunks + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]

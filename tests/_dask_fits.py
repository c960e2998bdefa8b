"""Shared by the dask-array fit tests of every wing (tests/test_dask_*_blocks.py, issue 28).

Fixtures for a two-worker cluster of threads and one of processes, and the
experiments every wing's dask path must pass: the same fit with no client, one
worker or two; bad blocks rejected with or without a client; the client's peak
memory during a fit; a worker killed mid-fit.
Import the fixtures by name into a test module to use them.
"""

import os
import signal
import tracemalloc

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

from skdgm._core.blocks import RowBlocks  # noqa: E402


@pytest.fixture(scope="module")
def thread_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def remote_cluster():
    """Two worker processes and the scheduler in a third: the client's process alone.

    A ``LocalCluster`` runs its scheduler inside the client's process, so a memory
    measurement there counts the scheduler's task states and its developer logs of
    the messages sent to the workers (the parameters of the last 1,000 batches):
    memory of the scheduler, wherever it runs, not of the client. On a GRBM fit the
    client's traced memory kept growing with the updates with the scheduler
    in-process, and stayed flat with it in its own process.
    """
    # its processes are started afresh: they find the test modules (whose functions
    # make the blocks) through PYTHONPATH; PYTHONSAFEPATH keeps the working directory
    # off their sys.path, or a scheduler started from a source checkout would import
    # its uncompiled skdgm/ instead of the installed package
    here = os.path.dirname(os.path.abspath(__file__))
    before = os.environ.get("PYTHONPATH")
    safe_before = os.environ.get("PYTHONSAFEPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, before) if p)
    os.environ["PYTHONSAFEPATH"] = "1"
    try:
        with distributed.SubprocessCluster(n_workers=2, threads_per_worker=1,
                                           dashboard_address=None) as cluster:
            cluster.wait_for_workers(2, timeout=60)
            yield cluster
    finally:
        for name, value in (("PYTHONPATH", before), ("PYTHONSAFEPATH", safe_before)):
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def process_cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster


def fits_without_and_with_workers(thread_cluster, *fits):
    """Every ``fit()`` run with no client, on ``thread_cluster``'s two workers and on
    a one-worker cluster: ``(local, two, one)``, each a list in the order of ``fits``."""
    local = [fit() for fit in fits]
    with distributed.Client(thread_cluster) as client:
        two = [fit() for fit in fits]
        assert len(client.scheduler_info()["workers"]) == 2
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            one = [fit() for fit in fits]
    return local, two, one


def assert_blocks_decide_the_answer(thread_cluster, same, fit, resumed, other_blocks,
                                    slots=()):
    """``fit()`` and ``resumed()`` (a fit continued by ``partial_fit``) give the same
    estimators, by ``same(a, b)``, with no client, one worker or two, and ``fit()``
    on every ``(n_workers, threads_per_worker)`` of ``slots``; ``other_blocks()``
    (the same fit on other row chunks) gives another one."""
    local, two, one = fits_without_and_with_workers(thread_cluster, fit, resumed)
    assert all(same(local[0], f[0]) and same(local[1], f[1]) for f in (two, one))
    for n_workers, threads in slots:
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=threads,
                                      processes=False, dashboard_address=None) as cluster, \
                distributed.Client(cluster):
            assert same(local[0], fit())
    assert not same(local[0], other_blocks())


def assert_quality_matches(score, seeds):
    """A dask fit that is another chain of the in-memory algorithm scores as it does.

    ``score(seed, on_dask)`` is the held-out score of the fit with ``random_state=seed``
    of the in-memory rows (``on_dask=False``) or of their dask array: per seed within
    the issue's 1 nat, and the mean over seeds within 4 standard errors of the
    in-memory mean.
    """
    mem = np.array([score(s, False) for s in seeds])
    dsk = np.array([score(s, True) for s in seeds])
    assert np.all(np.abs(dsk - mem) < 1.0), (mem, dsk)
    se = np.sqrt((mem.var(ddof=1) + dsk.var(ddof=1)) / len(mem))
    assert abs(dsk.mean() - mem.mean()) <= 4 * se + 1e-9, (mem, dsk)


def assert_every_call_raises(calls, X, message, cluster=None):
    """Every ``call(X)`` raises a ``ValueError`` matching ``message``, with a client of
    ``cluster`` active when one is given (the blocks then are checked on its workers)."""
    client = distributed.Client(cluster) if cluster is not None else None
    try:
        for call in calls:
            with pytest.raises(ValueError, match=message):
                call(X)
    finally:
        if client is not None:
            client.close()


def client_peak(fit, cluster):
    """``fit()`` with a client of ``cluster`` active; the client's peak traced bytes."""
    with distributed.Client(cluster):
        tracemalloc.start()
        try:
            fit()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    return peak


def assert_the_client_never_holds(fit, Xd, cluster):
    """``fit()`` on ``cluster`` (:func:`remote_cluster`) raises the client's peak memory by
    less than a quarter of ``Xd``'s bytes; and the same measurement of ``Xd.compute()``
    (the data gathered) fails that limit: the check sees a gather. The client's peak."""
    peak = client_peak(fit, cluster)
    gathered = client_peak(Xd.compute, cluster)
    print(f"client peak {peak / 1e6:.1f} MB for {Xd.nbytes / 1e6:.0f} MB of data "
          f"(gathered: {gathered / 1e6:.0f} MB)")
    assert gathered >= Xd.nbytes / 4, (gathered, Xd.nbytes)
    assert peak < Xd.nbytes / 4, (peak, Xd.nbytes)
    return peak


def fit_killing_a_worker(fit, cluster, monkeypatch, after_update, method="map_rows"):
    """``fit()`` on ``cluster``, one worker process SIGKILLed after ``after_update``
    calls of :meth:`RowBlocks.map_rows` (or the ``RowBlocks`` ``method`` named), the
    harshest moment (the next update's parameters and tasks go out while the
    scheduler has not noticed yet).

    Returns ``(estimator, map_rows calls)`` once the cluster has its two workers back
    (and the victim is checked gone).
    """
    with distributed.Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        pids = client.run(os.getpid)
        victim = pids[sorted(pids)[-1]]
        calls = []
        map_rows = getattr(RowBlocks, method)

        def map_rows_then_kill(self, *args, **kwargs):
            out = map_rows(self, *args, **kwargs)
            calls.append(1)
            if len(calls) == after_update:
                os.kill(victim, signal.SIGKILL)
            return out

        monkeypatch.setattr(RowBlocks, method, map_rows_then_kill)
        try:
            est = fit()
        finally:
            monkeypatch.undo()
        client.wait_for_workers(2, timeout=60)
        assert victim not in client.run(os.getpid).values()
    return est, len(calls)


def record_gathers(monkeypatch):
    """A list that fills with the keys of every list of futures a client gathers."""
    gathered = []
    real = distributed.Client.gather

    def spy(self, futures, *args, **kwargs):
        if isinstance(futures, list):
            gathered.append([str(f.key) for f in futures])
        return real(self, futures, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "gather", spy)
    return gathered


def assert_one_total_per_update(gathered, task, combine, n_updates):
    """Every gather of ``task``'s results (at least one per update; a monitor may
    sum the same way) brought back one future, the tree's total: ``combine``'s, or
    ``task``'s own when all of a minibatch's blocks live on one thread slot (whose
    one task sums them where they live); never one per block."""
    updates = [keys for keys in gathered if any(task in k or combine in k for k in keys)]
    assert len(updates) >= n_updates, (len(updates), n_updates)
    assert all(len(keys) == 1 for keys in updates), updates
    assert any(keys[0].startswith(combine) for keys in updates), updates



def record_submits(monkeypatch):
    """A list that fills with ``(func, args, kwargs, future)`` of every task a
    client submits."""
    submitted = []
    real = distributed.Client.submit

    def spy(self, func, *args, **kwargs):
        future = real(self, func, *args, **kwargs)
        submitted.append((func, args, kwargs, future))
        return future

    monkeypatch.setattr(distributed.Client, "submit", spy)
    return submitted


def keys_in_memory(client, keys, timeout=10.0):
    """Which of ``keys`` some worker still holds in memory, once releases have had
    up to ``timeout`` seconds to arrive (an empty list as soon as none is left).
    A released key whose dependents are still wanted stays known to the scheduler
    (their lineage), but its data is dropped."""
    import time

    def held(dask_scheduler, keys):
        tasks = dask_scheduler.tasks
        return [k for k in keys if k in tasks and tasks[k].state == "memory"]

    deadline = time.monotonic() + timeout
    while (left := client.run_on_scheduler(held, keys=list(keys))) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def global_rows(blocks, parts):
    """The rows of the whole array that :meth:`RowBlocks.split`'s ``parts`` name
    (a subset's parts name its parent's rows): what a spy on a block task reads."""
    out = []
    for b, r in parts:
        lo, hi = int(blocks.offsets[b]), int(blocks.offsets[b + 1])
        out.extend((lo + np.arange(hi - lo)[r]).tolist())
    return out


def spy_on_rows(monkeypatch, tasks):
    """``(trained, taken)``, filled as a fit runs: the set of rows (of the whole
    array) that the block tasks named in ``tasks`` read, and the list of the row
    sets :meth:`RowBlocks.take` gathered to the client, in call order."""
    trained, taken = set(), []
    map_rows, take = RowBlocks.map_rows, RowBlocks.take

    def spy_map(self, func, rows, *args, **kwargs):
        if getattr(func, "__name__", None) in tasks:
            trained.update(global_rows(self, self.split(rows)))
        return map_rows(self, func, rows, *args, **kwargs)

    def spy_take(self, rows):
        taken.append(set(global_rows(self, self.split(np.unique(rows)))))
        return take(self, rows)

    monkeypatch.setattr(RowBlocks, "map_rows", spy_map)
    monkeypatch.setattr(RowBlocks, "take", spy_take)
    return trained, taken

"""Tests of the per-fit joblib pool (``skdgm._core.chains.chain_pool``) and of the
files that carry read-only arguments to process workers (``shared_array``)."""

import gc
import os

import numpy as np
import pytest
from joblib import parallel_config

from skdgm._core import chains
from skdgm._core.chains import chain_pool, run_chains

from _parallel import count_parallel, count_threads  # noqa: F401 - fixtures


def _draws(task, rng, scale=1.0):
    return scale * rng.random(3) + task


def _nested(task, rng):
    return run_chains(_draws, 2, random_state=int(rng.integers(1000)), n_jobs=2)


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_pool_is_shared_and_results_do_not_change(count_parallel, count_threads, backend):
    # processes: one Parallel per call, one per pool; threads: no Parallel at all,
    # every call starts its own threads (_run_threads)
    threads = backend == "threading"
    with parallel_config(backend=backend):
        alone = [run_chains(_draws, 4, random_state=s, n_jobs=2, scale=2.0) for s in range(3)]
        assert len(count_parallel) == (0 if threads else 3)
        assert len(count_threads) == (3 if threads else 0)
        count_parallel.clear()
        with chain_pool(n_jobs=2) as pool:
            pooled = [run_chains(_draws, 4, random_state=s, n_jobs=2, scale=2.0)
                      for s in range(3)]
        assert len(count_parallel) == pool.n_created == (0 if threads else 1)
    serial = [run_chains(_draws, 4, random_state=s, n_jobs=1, scale=2.0) for s in range(3)]
    for a, b, c in zip(alone, pooled, serial):
        for x, y, z in zip(a, b, c):
            np.testing.assert_array_equal(x, y)
            np.testing.assert_array_equal(x, z)


def test_pool_is_lazy_and_ignores_other_n_jobs(count_parallel):
    with parallel_config(backend="loky"):
        with chain_pool(n_jobs=2) as pool:
            run_chains(_draws, 1, random_state=0, n_jobs=2)      # one task: no scheduler
            assert pool.n_created == 0
            run_chains(_draws, 3, random_state=0, n_jobs=3)      # another n_jobs: its own
            assert pool.n_created == 0 and len(count_parallel) == 1


def test_nested_call_inside_the_pool_gets_its_own_parallel():
    with parallel_config(backend="loky"):
        with chain_pool(n_jobs=2):
            inner = run_chains(_nested, 2, random_state=5, n_jobs=2)
    expected = run_chains(_nested, 2, random_state=5, n_jobs=1)
    for a, b in zip(inner, expected):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


def test_pool_is_gone_after_the_block():
    with chain_pool(n_jobs=2):
        assert chains._ACTIVE_POOL.get() is not None
    assert chains._ACTIVE_POOL.get() is None


def test_a_fit_makes_one_parallel(count_parallel, monkeypatch):
    from skdgm import DeepLDA
    from skdgm.deep_lda import _runs
    monkeypatch.setattr(_runs, "CHUNK_DOCS", 10)     # 4 chunks of documents
    monkeypatch.setattr(chains, "MIN_PARALLEL_COST", 0.0)  # tiny work fans out too
    monkeypatch.setattr(chains, "MIN_THREAD_COST", 0.0)
    X = np.random.default_rng(0).poisson(1.0, size=(40, 12))
    model = DeepLDA(n_components=(3,), n_iter=3, batch_size=40, local_burn_in=2,
                    local_samples=2, random_state=0)
    serial = model.fit(X).components_
    count_parallel.clear()
    with parallel_config(backend="loky"):
        pooled = model.set_params(n_jobs=2).fit(X).components_
    # three passes, each fanning out over the chunks, through one Parallel
    assert len(count_parallel) == 1
    np.testing.assert_array_equal(serial, pooled)


def _worker_pid(task, rng):
    import os
    return os.getpid()


def test_process_workers_outlive_the_pool_block():
    # Consecutive ``partial_fit`` calls each open their own ``chain_pool``; the
    # process workers behind them must be the same ones (loky's reusable executor),
    # or a stream of calls would pay a worker start-up per call.
    import os
    with parallel_config(backend="loky"):
        pids = set()
        for _ in range(3):
            with chain_pool(n_jobs=2):
                pids |= set(run_chains(_worker_pid, 8, random_state=0, n_jobs=2))
    assert os.getpid() not in pids
    assert 1 <= len(pids) <= 2


def _task_id(task, rng):
    return task, rng.random()


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_tasks_travel_in_few_batches_with_their_own_streams(backend, monkeypatch,
                                                            count_threads):
    # 23 tasks on 2 workers: processes get BATCHES_PER_WORKER * 2 messages (the
    # shared arguments pickled once per message), threads take one task at a time
    # outside joblib (nothing to pickle, the finest balance); each task its own
    # seed, in task order
    sent = []
    real = chains.delayed

    def counting(func):
        def make(f, tasks, seeds, kwargs):
            sent.append(len(tasks))
            return real(func)(f, tasks, seeds, kwargs)
        return make

    monkeypatch.setattr(chains, "delayed", counting)
    with parallel_config(backend=backend):
        par = run_chains(_task_id, 23, random_state=4, n_jobs=2)
    if backend == "threading":
        assert sent == [] and count_threads == [(list(range(23)), 2)]
    else:
        assert len(sent) == chains.BATCHES_PER_WORKER * 2 and sum(sent) == 23
    ser = run_chains(_task_id, 23, random_state=4, n_jobs=1)
    assert par == ser and [t for t, _ in par] == list(range(23))


def test_prefer_threads_is_a_hint_a_configured_backend_overrides(count_parallel):
    # DeepLDA asks for threads; with no backend configured it gets them (tasks see
    # this process), under parallel_config(backend="loky") it gets processes.
    pids = run_chains(_worker_pid, 4, random_state=0, n_jobs=2, prefer="threads")
    assert set(pids) == {os.getpid()}
    with parallel_config(backend="loky"):
        pids = run_chains(_worker_pid, 4, random_state=0, n_jobs=2, prefer="threads")
    assert os.getpid() not in pids
    assert chains._workers_kind("threads") == "threads"
    assert chains._workers_kind() == "processes"


def test_thread_workers_have_their_own_cost_threshold(count_parallel, count_threads):
    # between the two thresholds: in-process for processes, fanned out on threads
    cost = (chains.MIN_THREAD_COST + chains.MIN_PARALLEL_COST) / 2
    assert chains.MIN_THREAD_COST < cost < chains.MIN_PARALLEL_COST
    procs = run_chains(_draws, 6, random_state=1, n_jobs=2, cost=cost)
    assert count_parallel == [] and count_threads == []
    thr = run_chains(_draws, 6, random_state=1, n_jobs=2, cost=cost, prefer="threads")
    assert len(count_threads) == 1 and count_parallel == []
    below = run_chains(_draws, 6, random_state=1, n_jobs=2, cost=chains.MIN_THREAD_COST / 2,
                       prefer="threads")
    assert len(count_threads) == 1
    for a, b, c in zip(procs, thr, below):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)


def test_thread_workers_take_the_costliest_task_first(monkeypatch, count_threads):
    # per-task costs: threads are handed the tasks longest first (the order in
    # which they are taken), the results come back in task order, equal to n_jobs=1
    sent = []
    real = chains.delayed

    def recording(func):
        def make(f, tasks, seeds, kwargs):
            sent.extend(t for t in tasks)
            return real(func)(f, tasks, seeds, kwargs)
        return make

    monkeypatch.setattr(chains, "delayed", recording)
    costs = [0.1, 0.5, 0.2, 0.5, 0.05]
    thr = run_chains(_task_id, 5, random_state=3, n_jobs=2, cost=costs, prefer="threads")
    assert count_threads == [([1, 3, 2, 0, 4], 2)] and sent == []
    assert thr == run_chains(_task_id, 5, random_state=3, n_jobs=1)
    sent.clear()
    with parallel_config(backend="loky"):          # processes: batches balanced by cost
        procs = run_chains(_task_id, 5, random_state=3, n_jobs=2, cost=costs)
    assert sent == [1, 3, 2, 0, 4] and procs == thr
    sent.clear()
    below = [chains.MIN_THREAD_COST / 10] * 5      # the total decides the threshold
    assert run_chains(_task_id, 5, random_state=3, n_jobs=2, cost=below,
                      prefer="threads") == thr and len(count_threads) == 1
    with pytest.raises(ValueError, match="3 costs for 5 tasks"):
        run_chains(_task_id, 5, random_state=3, n_jobs=2, cost=costs[:3])


def _thread_id(task, rng):
    import threading
    import time
    time.sleep(0.002)        # a task that releases the GIL, as the kernels do
    return threading.get_ident(), rng.random()


def _fails_at_three(task, rng, seen):
    seen.append(task)
    if task == 3:
        raise ArithmeticError(f"task {task} failed")
    return task


def _nested_threads(task, rng):
    return run_chains(_task_id, 3, random_state=int(rng.integers(1000)), n_jobs=2,
                      prefer="threads")


def test_thread_workers_leave_the_caller_waiting_and_match_joblib(count_parallel,
                                                                  monkeypatch):
    """Two workers are two started threads, not this one (its tasks cost more CPU:
    parallel_updates_idle.txt); joblib's threading backend (the route before
    _run_threads, kept for the benchmark) gives the same results."""
    import threading
    ours = run_chains(_thread_id, 40, random_state=2, n_jobs=2, prefer="threads")
    assert count_parallel == []
    workers = {t for t, _ in ours}
    assert threading.get_ident() not in workers and 1 <= len(workers) <= 2
    monkeypatch.setattr(chains, "_JOBLIB_THREADS", True)
    theirs = run_chains(_thread_id, 40, random_state=2, n_jobs=2, prefer="threads")
    assert len(count_parallel) == 1
    serial = run_chains(_thread_id, 40, random_state=2, n_jobs=1)
    assert [x for _, x in ours] == [x for _, x in theirs] == [x for _, x in serial]


def test_a_failing_thread_task_stops_the_others_and_raises():
    seen = []
    with pytest.raises(ArithmeticError, match="task 3 failed"):
        run_chains(_fails_at_three, 50, random_state=0, n_jobs=2, prefer="threads", seen=seen)
    # the other worker ends the task it holds, then takes no new one
    assert 3 in seen and len(seen) <= 5


def test_calls_from_a_thread_task_run_in_process(count_threads, count_parallel):
    nested = run_chains(_nested_threads, 4, random_state=6, n_jobs=2, prefer="threads")
    assert len(count_threads) == 1 and count_parallel == []
    assert nested == run_chains(_nested_threads, 4, random_state=6, n_jobs=1)
    assert not chains._IN_THREAD_TASK.get()


def test_map_threads_keeps_item_order_and_stays_in_process_when_asked(count_threads,
                                                                     count_parallel):
    """``map_threads``: results in item order on threads of this process (never a
    joblib ``Parallel``, whatever backend is configured); in-process for ``n_jobs=1``,
    one item, or a call from a thread worker's task."""
    from skdgm._core.chains import map_threads
    items = list(range(9))
    with parallel_config(backend="loky"):
        assert map_threads(lambda i: i * i, items, n_jobs=2) == [i * i for i in items]
    assert len(count_threads) == 1 and count_threads[0][1] == 2 and count_parallel == []
    assert map_threads(lambda i: -i, items, n_jobs=1) == [-i for i in items]
    assert map_threads(lambda i: -i, [4], n_jobs=2) == [-4]
    nested = run_chains(_nested_map, 2, random_state=0, n_jobs=2, prefer="threads")
    assert nested == [[0, 1, 2]] * 2 and len(count_threads) == 2


def _nested_map(task, rng):
    from skdgm._core.chains import map_threads
    return map_threads(lambda i: i, range(3), n_jobs=2)


def test_cheap_calls_stay_in_process(count_parallel):
    cheap = run_chains(_draws, 6, random_state=1, n_jobs=2, cost=chains.MIN_PARALLEL_COST / 2)
    assert count_parallel == []
    with parallel_config(backend="loky"):
        dear = run_chains(_draws, 6, random_state=1, n_jobs=2, cost=chains.MIN_PARALLEL_COST)
    assert len(count_parallel) == 1
    for a, b in zip(cheap, dear):
        np.testing.assert_array_equal(a, b)


def _read_only(a):
    a.flags.writeable = False
    return a


def test_shared_array_lives_as_long_as_its_array():
    a = _read_only(np.random.default_rng(0).random((30, 7)))
    view = chains.shared_array(a)
    assert isinstance(view, np.memmap) and not view.flags.writeable
    assert chains.shared_array(a) is view                 # written once
    np.testing.assert_array_equal(view, a)
    path = view.filename
    del view
    gc.collect()
    assert os.path.exists(path)                           # the array still lives
    del a
    gc.collect()
    assert not os.path.exists(path)
    assert path not in {v.filename for _, v in chains._FILES.views.values()}


def test_shared_array_refuses_a_writable_array():
    with pytest.raises(ValueError, match="read-only"):
        chains.shared_array(np.ones(4))


def _what_arrived(task, rng, *, big):
    return [(type(b).__name__, getattr(b, "filename", None), float(b.sum())) for b in big]


def test_process_workers_map_read_only_arrays_from_their_file(monkeypatch):
    monkeypatch.setattr(chains, "SHARE_MIN_BYTES", 100)
    rng = np.random.default_rng(1)
    shared = _read_only(rng.random(50))                   # 400 bytes, read-only: a file
    writable, small = rng.random(50), _read_only(rng.random(5))    # left to joblib
    big = [shared, writable, small]
    with parallel_config(backend="loky"):
        out = run_chains(_what_arrived, 4, random_state=0, n_jobs=2, big=big)
    path = chains.shared_array(shared).filename
    for task in out:
        assert task[0][:2] == ("memmap", path)
        assert task[1][1] != path and task[2][0] == "ndarray"
        assert [s for _, _, s in task] == [float(b.sum()) for b in big]
    with parallel_config(backend="threading"):          # threads: the arrays themselves
        out = run_chains(_what_arrived, 4, random_state=0, n_jobs=2, big=[writable])
    assert all(task[0][0] == "ndarray" for task in out)


def test_share_arguments_keeps_structure_and_values(monkeypatch):
    from collections import namedtuple
    monkeypatch.setattr(chains, "SHARE_MIN_BYTES", 1)
    Pair = namedtuple("Pair", "a b")
    a, b = _read_only(np.arange(6.0)), np.arange(3.0)
    out = chains.share_arguments(dict(x=[(a, b)], p=Pair(a, 2), d={"k": a}, n=5, e=b))
    assert isinstance(out["x"][0][0], np.memmap) and out["x"][0][1] is b
    assert isinstance(out["p"], Pair) and isinstance(out["p"].a, np.memmap)
    assert isinstance(out["d"]["k"], np.memmap) and out["n"] == 5 and out["e"] is b
    np.testing.assert_array_equal(out["p"].a, a)


def test_cost_batches_balance_the_batches_costliest_first():
    # the longest-processing-time rule over batches: every task once, the batches'
    # costs within one task of each other, the costliest batch first
    rng = np.random.default_rng(0)
    for n, k in [(19, 4), (8, 4), (3, 4), (30, 6)]:
        cost = rng.gamma(2.0, size=n)
        groups = chains.cost_batches(cost, k)
        assert sorted(i for g in groups for i in g) == list(range(n))
        assert len(groups) == min(n, k) and all(g == sorted(g) for g in groups)
        loads = [cost[g].sum() for g in groups]
        assert loads == sorted(loads, reverse=True)
        assert loads[0] - loads[-1] <= cost.max() + 1e-12
        assert groups == chains.cost_batches(cost, k)         # no randomness
    assert chains.cost_batches([2.0, 1.0, 1.0], 2) == [[0], [1, 2]]
    assert chains.cost_batches([1.0, 1.0, 2.0], 2) == [[2], [0, 1]]


@pytest.mark.parametrize("backend", ["loky", "threading", None])
def test_per_task_costs_change_no_result(backend):
    # uneven costs regroup the tasks (processes) or reorder them (threads), never
    # their streams: the results are n_jobs=1's, in task order
    cost = list(np.random.default_rng(1).gamma(2.0, size=11))
    ser = run_chains(_task_id, 11, random_state=5, n_jobs=1, cost=cost)
    if backend is None:
        par = run_chains(_task_id, 11, random_state=5, n_jobs=2, cost=cost, prefer="threads")
    else:
        with parallel_config(backend=backend):
            par = run_chains(_task_id, 11, random_state=5, n_jobs=2, cost=cost)
    assert par == ser == run_chains(_task_id, 11, random_state=5, n_jobs=1)
    assert [t for t, _ in par] == list(range(11))

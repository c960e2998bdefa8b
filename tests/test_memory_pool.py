"""The pool that keeps the large blocks an estimator's call frees (issue 26).

``skdgm._core.memory.reuse_freed_memory`` makes NumPy allocate from
``skdgm._core._memory_fast`` for the duration of a call. What must hold: arrays
are what they would be (``np.zeros`` of a reused block is zero, a resized array
keeps its values), arrays outlive the pool, NumPy's allocator is put back even
when the call raises, the pool holds no more than its capacity and nothing once
closed, worker threads of a call use it, and the estimators' results do not
depend on it.
"""

import threading

import numpy as np
import pytest

from skdgm import DeepLDA, GaussianBernoulliRBM
from skdgm._core import _memory_fast, memory
from skdgm._core.chains import run_chains

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # pragma: no cover - NumPy < 2
    from numpy.core.multiarray import get_handler_name

BIG = 200_000          # doubles: 1.6 MB, far above MIN_CACHED
POOL = "skdgm_reuse_freed"


def test_arrays_inside_come_from_the_pool_and_outside_do_not():
    outside = np.ones(BIG)
    with memory.reuse_freed_memory():
        inside = np.ones(BIG)
        assert get_handler_name(inside) == POOL
    after = np.ones(BIG)
    assert get_handler_name(outside) != POOL
    assert get_handler_name(after) != POOL


def test_a_freed_block_is_reused_and_zeroed_for_zeros():
    with memory.reuse_freed_memory():
        a = np.full(BIG, 7.0)
        del a
        before = memory.pool_stats()
        assert before["cached_bytes"] >= BIG * 8
        b = np.zeros(BIG)
        after = memory.pool_stats()
        assert after["hits"] == before["hits"] + 1
        assert not b.any()
        c = np.full(BIG, 3.0)
        del c
        d = np.empty(BIG)      # may hold old values: only its shape is promised
        assert d.shape == (BIG,)


def test_sizes_of_one_class_share_blocks_and_small_ones_are_left_to_malloc():
    with memory.reuse_freed_memory():
        a = np.ones(BIG)
        del a
        hits = memory.pool_stats()["hits"]
        b = np.ones(BIG - 1000)          # the same class, a little smaller
        assert memory.pool_stats()["hits"] == hits + 1
        assert b.sum() == BIG - 1000
        small = np.ones(100)
        del small
        cached = memory.pool_stats()["cached_bytes"]
        tiny = np.ones(100)
        assert memory.pool_stats()["cached_bytes"] == cached
        assert tiny.sum() == 100


def test_arrays_outlive_the_pool_and_the_pool_empties():
    with memory.reuse_freed_memory():
        kept = np.arange(BIG, dtype=np.float64)
        freed = np.ones(BIG)
        del freed
        assert memory.pool_stats()["cached_bytes"] > 0
    stats = memory.pool_stats()
    assert stats["open"] == 0 and stats["cached_bytes"] == 0
    assert kept[-1] == BIG - 1 and kept.sum() == BIG * (BIG - 1) / 2
    del kept                          # freed to malloc: the pool is closed
    assert memory.pool_stats()["cached_bytes"] == 0


def test_resize_keeps_the_values_and_zero_fills():
    with memory.reuse_freed_memory():
        a = np.arange(BIG, dtype=np.float64)
        a.resize(3 * BIG, refcheck=False)
        assert np.array_equal(a[:BIG], np.arange(BIG))
        assert not a[BIG:].any()
        a.resize(10, refcheck=False)
        assert np.array_equal(a, np.arange(10))


def test_capacity_is_respected():
    with memory.reuse_freed_memory(capacity=3 * BIG * 8):
        blocks = [np.ones(BIG) for _ in range(8)]
        del blocks
        stats = memory.pool_stats()
        assert 0 < stats["cached_bytes"] <= 3 * BIG * 8


def test_the_allocator_is_put_back_when_the_call_raises():
    before = _memory_fast.get_handler()
    with pytest.raises(RuntimeError):
        with memory.reuse_freed_memory():
            assert _memory_fast.get_handler() is _memory_fast.HANDLER
            raise RuntimeError("boom")
    assert _memory_fast.get_handler() is before
    assert memory.pool_stats()["open"] == 0


def test_nested_pools_share_one_and_empty_at_the_last():
    with memory.reuse_freed_memory():
        with memory.reuse_freed_memory():
            a = np.ones(BIG)
            del a
        assert memory.pool_stats()["open"] == 1
        assert memory.pool_stats()["cached_bytes"] > 0
    assert memory.pool_stats()["cached_bytes"] == 0


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setenv("SKDGM_REUSE_MEMORY", "0")
    with memory.reuse_freed_memory():
        assert get_handler_name(np.ones(BIG)) != POOL
        assert memory.pool_stats()["open"] == 0


def _fill(task, rng):
    out = []
    for i in range(30):
        a = np.full(BIG // 2 + 1000 * (i % 3), float(task))
        out.append((get_handler_name(a) == POOL, float(a.sum()), a.size))
        del a
    return out


def test_worker_threads_of_a_call_use_the_pool_and_get_their_own_values():
    with memory.reuse_freed_memory():
        res = run_chains(_fill, list(range(6)), random_state=0, n_jobs=2, prefer="threads")
    for task, rows in enumerate(res):
        for pooled, total, size in rows:
            assert pooled
            assert total == task * size


def test_concurrent_threads_never_share_a_live_block():
    errors = []

    def work(v):
        for i in range(200):
            a = np.full(BIG // 4 + (i % 5) * 4096, v)
            if not (a == v).all():
                errors.append(v)
            del a

    with memory.reuse_freed_memory():
        ts = [threading.Thread(target=work, args=(float(v),)) for v in range(1, 4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_deep_lda_results_do_not_depend_on_the_pool(monkeypatch, n_jobs):
    X = np.random.default_rng(0).poisson(0.6, (600, 300))

    def run():
        m = DeepLDA((32, 8), n_iter=2, batch_size=200, random_state=0, n_jobs=n_jobs).fit(X)
        return m.components_.copy(), m.transform(X[:100]), m.score_samples(X[:50])

    hits = memory.pool_stats()["hits"]
    on = run()
    assert memory.pool_stats()["hits"] > hits      # the calls did take reused blocks
    monkeypatch.setenv("SKDGM_REUSE_MEMORY", "0")
    hits = memory.pool_stats()["hits"]
    off = run()
    assert memory.pool_stats()["hits"] == hits
    for a, b in zip(on, off):
        assert np.array_equal(a, b)


def test_grbm_fit_does_not_depend_on_the_pool(monkeypatch):
    X = np.random.default_rng(1).normal(size=(300, 20))

    def run():
        return GaussianBernoulliRBM(8, n_iter=3, random_state=0).fit(X).components_.copy()

    on = run()
    monkeypatch.setenv("SKDGM_REUSE_MEMORY", "0")
    assert np.array_equal(on, run())

"""Keeping the memory an estimator's call frees, for the same call to reuse.

A training update or a local sampler allocates arrays of a few hundred kilobytes
to a few megabytes (chunk layouts, count buffers, the global step's temporaries)
and frees them a few milliseconds later. glibc hands the freed top of its heap
back to the kernel, and the next array's pages are faulted in and zeroed again:
DeepLDA's ``fit`` of 10,000 documents took about 40,000 minor page faults and a
fifth of its wall clock in them (``benchmarks/bench_page_faults.py``). A
process-wide malloc setting would end that, but is not a library's to make.
:func:`reuse_freed_memory` instead makes NumPy allocate, for the duration of the
call, through :mod:`skdgm._core._memory_fast`, which keeps the large freed
blocks in size classes and hands them out again; NumPy's allocator is a
context variable, so only the call (and the worker threads that run its tasks
in a copy of its context, :func:`skdgm._core.chains.run_chains`) use it.

Results do not change: the same arrays are filled with the same numbers; only
where their memory comes from does. ``SKDGM_REUSE_MEMORY=0`` in the environment
switches it off (read at each call).
"""

import functools
import os
from contextlib import contextmanager

from . import _memory_fast

#: The most the pool keeps at once (freed blocks beyond it go back to malloc).
POOL_BYTES = 256 << 20


def enabled():
    """Whether :func:`reuse_freed_memory` acts (``SKDGM_REUSE_MEMORY`` not ``"0"``)."""
    return os.environ.get("SKDGM_REUSE_MEMORY", "1").strip() != "0"


@contextmanager
def reuse_freed_memory(capacity=POOL_BYTES):
    """NumPy arrays made inside come from a pool that keeps freed large blocks.

    Nested and concurrent uses share one pool, emptied (its blocks freed to
    malloc) when the last one ends. Arrays made inside may outlive it: their
    memory is then freed as usual.
    """
    if not enabled():
        yield
        return
    previous = _memory_fast.set_handler(_memory_fast.HANDLER)
    _memory_fast.open_pool(capacity)
    try:
        yield
    finally:
        _memory_fast.set_handler(previous)
        _memory_fast.close_pool()


def pool_stats():
    """The pool's state: ``open`` uses, ``cached_bytes``, ``capacity``, and the
    ``hits`` and ``misses`` of cacheable requests so far."""
    return _memory_fast.pool_stats()


def reusing_memory(method):
    """Run ``method`` inside :func:`reuse_freed_memory` (an estimator's public call)."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with reuse_freed_memory():
            return method(*args, **kwargs)

    return wrapper

# cython: language_level=3
"""A NumPy data allocator that keeps the large blocks freed during a call for reuse.

glibc hands the top of a heap back to the kernel once enough of it is free, so a
training loop that allocates and frees arrays of a few hundred kilobytes to a
few megabytes at every step has their pages faulted in and zeroed by the kernel
again and again (``benchmarks/bench_page_faults.py``). While a pool is open
(:func:`open_pool`; :mod:`skdgm._core.memory` does it for the estimators' calls),
blocks of at least ``MIN_CACHED`` bytes freed by arrays made through this
allocator go to size-class free lists instead, up to ``capacity`` bytes in all,
and the next request of that class takes one. Closing the last pool frees every
cached block. Only where the memory comes from changes: NumPy fills the arrays
as it would anyway, and ``calloc`` zeroes a reused block.

Each block carries a 64-byte header (its class's capacity and a free-list link),
so the returned pointer keeps malloc's alignment. Arrays outlive the pool that
made them: their blocks are then freed to malloc at once.
"""

from cpython.pycapsule cimport PyCapsule_New
from libc.stdint cimport uint8_t
from libc.string cimport memcpy, memset, strncpy
cimport libc.stdlib as cstdlib

cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    ctypedef void* PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock()
    int PyThread_acquire_lock(PyThread_type_lock, int) nogil
    void PyThread_release_lock(PyThread_type_lock) nogil

cdef extern from "numpy/arrayobject.h":
    ctypedef struct PyDataMemAllocator:
        void* ctx
        void* (*malloc)(void* ctx, size_t size) noexcept nogil
        void* (*calloc)(void* ctx, size_t nelem, size_t elsize) noexcept nogil
        void* (*realloc)(void* ctx, void* ptr, size_t new_size) noexcept nogil
        void (*free)(void* ctx, void* ptr, size_t size) noexcept nogil

    ctypedef struct PyDataMem_Handler:
        char name[127]
        uint8_t version
        PyDataMemAllocator allocator

    object PyDataMem_SetHandler(object handler)
    object PyDataMem_GetHandler()


cdef enum:
    HEADER = 64
    N_CLASSES = 160

#: Blocks smaller than this are left to malloc, which keeps them cheaply anyway.
MIN_CACHED = 1 << 16

ctypedef struct _Header:
    size_t capacity     # bytes usable after the header
    void* next          # free-list link while cached


cdef PyThread_type_lock _lock = PyThread_allocate_lock()
cdef void* _free_lists[N_CLASSES]
cdef size_t _cached = 0          # bytes held in the free lists
cdef size_t _capacity = 0        # the most they may hold
cdef Py_ssize_t _depth = 0       # open pools
cdef size_t _hits = 0, _misses = 0
cdef PyDataMem_Handler _handler


cdef inline int _class_of(size_t size, size_t* capacity) noexcept nogil:
    """The size class of a request (four per doubling, from ``MIN_CACHED``) and its
    capacity, or -1 below ``MIN_CACHED`` or above the largest class."""
    cdef size_t base = 1 << 16, step
    cdef int c = 0
    if size < base:
        return -1
    while c < N_CLASSES:
        step = base >> 2
        if size <= base + step:
            capacity[0] = base + step
            return c
        if size <= base + 2 * step:
            capacity[0] = base + 2 * step
            return c + 1
        if size <= base + 3 * step:
            capacity[0] = base + 3 * step
            return c + 2
        if size <= 2 * base:
            capacity[0] = 2 * base
            return c + 3
        base = base << 1
        c += 4
    return -1


cdef inline void* _payload(_Header* h) noexcept nogil:
    return <void*>((<char*>h) + HEADER)


cdef inline _Header* _header_of(void* ptr) noexcept nogil:
    return <_Header*>((<char*>ptr) - HEADER)


cdef void* _take(size_t size, bint zero) noexcept nogil:
    global _hits, _misses, _cached
    cdef size_t capacity = size
    cdef int c = _class_of(size, &capacity)
    cdef _Header* h = NULL
    if c >= 0 and _depth > 0:
        PyThread_acquire_lock(_lock, 1)
        h = <_Header*>_free_lists[c]
        if h != NULL:
            _free_lists[c] = h.next
            _cached -= h.capacity
            _hits += 1
        else:
            _misses += 1
        PyThread_release_lock(_lock)
    if h != NULL:
        if zero:
            memset(_payload(h), 0, size)
        return _payload(h)
    if zero:
        h = <_Header*>cstdlib.calloc(1, HEADER + capacity)
    else:
        h = <_Header*>cstdlib.malloc(HEADER + capacity)
    if h == NULL:
        return NULL
    h.capacity = capacity
    h.next = NULL
    return _payload(h)


cdef void* _malloc(void* ctx, size_t size) noexcept nogil:
    return _take(size if size > 0 else 1, False)


cdef void* _calloc(void* ctx, size_t nelem, size_t elsize) noexcept nogil:
    if elsize != 0 and nelem > (<size_t>-1 - HEADER) // elsize // 2:
        return NULL
    return _take(nelem * elsize if nelem * elsize > 0 else 1, True)


cdef void _free(void* ctx, void* ptr, size_t size) noexcept nogil:
    global _cached
    cdef _Header* h
    cdef size_t capacity = 0
    if ptr == NULL:
        return
    h = _header_of(ptr)
    cdef int c = _class_of(h.capacity, &capacity)
    if c >= 0 and capacity == h.capacity and _depth > 0:
        PyThread_acquire_lock(_lock, 1)
        if _depth > 0 and _cached + h.capacity <= _capacity:
            h.next = _free_lists[c]
            _free_lists[c] = <void*>h
            _cached += h.capacity
            PyThread_release_lock(_lock)
            return
        PyThread_release_lock(_lock)
    cstdlib.free(<void*>h)


cdef void* _realloc(void* ctx, void* ptr, size_t new_size) noexcept nogil:
    cdef void* out
    cdef _Header* h
    if ptr == NULL:
        return _malloc(ctx, new_size)
    h = _header_of(ptr)
    if new_size <= h.capacity and new_size > 0:
        return ptr
    out = _malloc(ctx, new_size)
    if out == NULL:
        return NULL
    memcpy(out, ptr, h.capacity if h.capacity < new_size else new_size)
    _free(ctx, ptr, 0)
    return out


strncpy(_handler.name, b"skdgm_reuse_freed", 127)
_handler.version = 1
_handler.allocator.ctx = NULL
_handler.allocator.malloc = _malloc
_handler.allocator.calloc = _calloc
_handler.allocator.realloc = _realloc
_handler.allocator.free = _free

#: The handler capsule NumPy keeps a reference to in every array it makes.
HANDLER = PyCapsule_New(<void*>&_handler, b"mem_handler", NULL)


def set_handler(handler):
    """Make ``handler`` NumPy's allocator in the current context; return the one before."""
    return PyDataMem_SetHandler(handler)


def get_handler():
    """NumPy's allocator in the current context."""
    return PyDataMem_GetHandler()


def open_pool(size_t capacity):
    """Start keeping freed blocks (up to ``capacity`` bytes while any pool is open)."""
    global _depth, _capacity
    PyThread_acquire_lock(_lock, 1)
    if _depth == 0 or capacity > _capacity:
        _capacity = capacity
    _depth += 1
    PyThread_release_lock(_lock)


def close_pool():
    """End one :func:`open_pool`; the last one frees every cached block."""
    global _depth, _cached, _capacity
    cdef int c
    cdef _Header* h
    cdef _Header* nxt
    PyThread_acquire_lock(_lock, 1)
    if _depth > 0:
        _depth -= 1
    if _depth == 0:
        for c in range(N_CLASSES):
            h = <_Header*>_free_lists[c]
            while h != NULL:
                nxt = <_Header*>h.next
                cstdlib.free(<void*>h)
                h = nxt
            _free_lists[c] = NULL
        _cached = 0
        _capacity = 0
    PyThread_release_lock(_lock)


def pool_stats():
    """``{"open", "cached_bytes", "capacity", "hits", "misses"}`` (hits and misses
    count the cacheable requests since the module was loaded)."""
    return {"open": _depth, "cached_bytes": _cached, "capacity": _capacity,
            "hits": _hits, "misses": _misses}

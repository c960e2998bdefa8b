# Access to the C state of a numpy.random.Generator for nogil Cython kernels.
#
# Kernels draw through numpy's own samplers (``numpy/random/c_distributions.pxd``:
# random_standard_normal, random_standard_gamma, random_binomial, ...), so a
# Cython kernel and its NumPy twin consume one stream in one way. Typical use::
#
#     from numpy.random cimport bitgen_t
#     from numpy.random.c_distributions cimport random_standard_uniform
#     from skdgm._core._random cimport bitgen_of
#
#     def kernel(const double[:, ::1] X, rng):
#         cdef bitgen_t* bg = bitgen_of(rng)
#         with rng.bit_generator.lock, nogil:
#             ... random_standard_uniform(bg) ...
#
# Holding the lock keeps two threads from advancing one generator at once (the
# threading backend of joblib shares memory); each chain owns its generator, so
# the lock is never contended in normal use.

from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from numpy.random cimport bitgen_t


cdef inline bitgen_t* bitgen_of(object generator) except NULL:
    """The ``bitgen_t`` behind a ``numpy.random.Generator`` (or a BitGenerator)."""
    bit_generator = getattr(generator, "bit_generator", generator)
    capsule = bit_generator.capsule
    if not PyCapsule_IsValid(capsule, b"BitGenerator"):
        raise ValueError("expected a numpy.random.Generator with a valid BitGenerator")
    return <bitgen_t*> PyCapsule_GetPointer(capsule, b"BitGenerator")

"""Enumeration of binary states, for exact answers on small models.

Every wing computes exact log-likelihoods, log partition functions and moments of a
small model by summing over all ``2**n`` configurations of its binary units (SBN's
hidden layers, a DBM's odd layers, a GRBM's hidden layer); the tests use the same
enumeration as ground truth. This module is the one place that builds those
configurations and the one place that says how many units an estimator enumerates
by default.
"""

import numpy as np

__all__ = ["MAX_EXACT_UNITS", "binary_states", "iter_binary_states"]

#: Estimators switch from exact enumeration to a Monte-Carlo estimate (AIS) above this
#: many enumerated units: ``2**16`` configurations times a batch of rows still fits in
#: memory and takes well under a second.
MAX_EXACT_UNITS = 16


def binary_states(n, *, start=0, stop=None, lsb_first=False, dtype=np.float64):
    """Binary vectors of length ``n``, one per row, numbered ``start`` to ``stop - 1``.

    Row ``i`` is the binary expansion of the integer ``start + i``.

    Parameters
    ----------
    n : int
        Number of units (columns); ``n >= 0``.
    start, stop : int, default=0 and ``2**n``
        The half-open range of configuration numbers to build (for chunking).
    lsb_first : bool, default=False
        If False, column 0 is the most significant bit, so the rows are in
        lexicographic order (``itertools.product((0, 1), repeat=n)``); if True,
        column 0 is the least significant bit.
    dtype : dtype, default=float64
        dtype of the result.

    Returns
    -------
    states : ndarray of shape (stop - start, n)
        Entries are 0 and 1.

    Raises
    ------
    ValueError
        If ``n`` is negative or the range lies outside ``[0, 2**n]``.

    See Also
    --------
    iter_binary_states : the same rows in chunks, for models near the memory limit.

    Examples
    --------
    >>> from skdgm._core.exact import binary_states
    >>> binary_states(2)
    array([[0., 0.],
           [0., 1.],
           [1., 0.],
           [1., 1.]])
    >>> binary_states(2, lsb_first=True)[1]
    array([1., 0.])
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"the number of units must be >= 0, got {n}")
    total = 1 << n
    stop = total if stop is None else int(stop)
    if not 0 <= start <= stop <= total:
        raise ValueError(f"need 0 <= start <= stop <= 2**{n}, got start={start}, stop={stop}")
    bits = np.arange(n) if lsb_first else np.arange(n)[::-1]
    idx = np.arange(start, stop, dtype=np.int64)
    return ((idx[:, None] >> bits) & 1).astype(dtype)


def iter_binary_states(n, chunk, *, lsb_first=False, dtype=np.float64):
    """Every binary vector of length ``n``, in blocks of at most ``chunk`` rows.

    Concatenating the blocks gives ``binary_states(n, lsb_first=lsb_first)``.

    Parameters
    ----------
    n : int
        Number of units.
    chunk : int
        Rows per block (the last block may be shorter).
    lsb_first : bool, default=False
        Bit order, as in :func:`binary_states`.
    dtype : dtype, default=float64
        dtype of the blocks.

    Yields
    ------
    states : ndarray of shape (<= chunk, n)

    See Also
    --------
    binary_states

    Examples
    --------
    >>> from skdgm._core.exact import iter_binary_states
    >>> [b.shape for b in iter_binary_states(3, chunk=3)]
    [(3, 3), (3, 3), (2, 3)]
    """
    total = 1 << int(n)
    chunk = int(chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    for start in range(0, total, chunk):
        yield binary_states(n, start=start, stop=min(start + chunk, total),
                            lsb_first=lsb_first, dtype=dtype)

"""Building blocks every sampler in skdgm shares.

Bernoulli draws, the Metropolis accept test, and self-normalised importance weights
with their effective sample size and standard error. Each is a few lines, but each
fixes how a random stream is consumed (one uniform per unit, in C order; one uniform
per chain), which the Cython twins and the determinism tests rely on, so each is
written once, here.
"""

import numpy as np

__all__ = ["bernoulli", "effective_sample_size", "importance_std_err", "metropolis_accept",
           "normalised_weights"]


def bernoulli(p, rng, *, size=None, dtype=None, uniform_dtype=np.float64):
    """Bernoulli draws ``u < p`` with ``u = rng.random(size, dtype=uniform_dtype)``.

    One uniform per entry, in C order: the Cython kernels that draw binary units
    (e.g. ``skdgm._core._random_fast.bernoulli``) consume the stream the same way,
    so their NumPy twins can call this.

    Parameters
    ----------
    p : array-like
        Success probabilities.
    rng : numpy.random.Generator
    size : tuple of int, optional
        Shape of the uniforms; defaults to ``p``'s shape. Give it when ``p``
        broadcasts against a larger shape.
    dtype : dtype, optional
        dtype of the result; defaults to ``p``'s dtype.
    uniform_dtype : {float64, float32}, default=float64
        dtype of the uniforms. ``float32`` uses half as many 64-bit draws, so it
        is a different stream: pick one per kernel and keep it.

    Returns
    -------
    draws : ndarray of shape ``size`` (or ``p.shape``)
        Entries are 0 and 1.

    See Also
    --------
    metropolis_accept : the other one-uniform-per-item draw.

    Examples
    --------
    >>> import numpy as np
    >>> from skdgm._core.mcmc import bernoulli
    >>> bernoulli(np.array([0.0, 1.0]), np.random.default_rng(0))
    array([0., 1.])
    """
    p = np.asanyarray(p)    # an ndarray subclass in gives the subclass out, as ``u < p`` does
    shape = p.shape if size is None else size
    u = rng.random(shape, dtype=uniform_dtype)
    return (u < p).astype(p.dtype if dtype is None else dtype)


def metropolis_accept(log_r, rng):
    """Accept each proposal with probability ``min(1, exp(log_r))``.

    One uniform per entry of ``log_r`` is drawn whatever the ratios, so the stream
    use does not depend on the chain's state. The test is ``log u < log_r``,
    with ``log 0 = -inf`` (always accepted when ``log_r`` is finite).

    Parameters
    ----------
    log_r : ndarray of shape (n_chains,)
        Log Metropolis-Hastings ratios, one per chain.
    rng : numpy.random.Generator

    Returns
    -------
    accepted : ndarray of bool, shape (n_chains,)

    See Also
    --------
    bernoulli

    Examples
    --------
    >>> import numpy as np
    >>> from skdgm._core.mcmc import metropolis_accept
    >>> metropolis_accept(np.array([0.0, -np.inf]), np.random.default_rng(0))
    array([ True, False])
    """
    log_r = np.asarray(log_r)
    u = rng.random(log_r.shape)
    with np.errstate(divide="ignore"):
        return np.log(u) < log_r


def normalised_weights(log_w, axis=0):
    """Self-normalised importance weights ``w_i = exp(log_w_i) / sum_j exp(log_w_j)``.

    Computed as ``exp(log_w - max)`` then divided by its sum, so no weight
    overflows.

    Parameters
    ----------
    log_w : ndarray
        Log importance weights (any constant offset cancels).
    axis : int, default=0
        The sample axis.

    Returns
    -------
    w : ndarray of the shape of ``log_w``
        Non-negative, summing to 1 along ``axis``.

    See Also
    --------
    effective_sample_size, importance_std_err

    Examples
    --------
    >>> import numpy as np
    >>> from skdgm._core.mcmc import normalised_weights
    >>> normalised_weights(np.log([1.0, 3.0]))
    array([0.25, 0.75])
    """
    w = np.exp(log_w - np.max(log_w, axis=axis, keepdims=True))
    return w / np.sum(w, axis=axis, keepdims=True)


def effective_sample_size(w, axis=0):
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` of importance weights.

    Between 1 (one weight carries everything) and the number of samples (equal
    weights). The weights need not be normalised (a scale cancels); for normalised
    weights it is ``1 / sum w^2``.

    Parameters
    ----------
    w : ndarray
        Non-negative weights (not their logs).
    axis : int, default=0
        The sample axis.

    Returns
    -------
    ess : float or ndarray

    See Also
    --------
    normalised_weights

    Examples
    --------
    >>> import numpy as np
    >>> from skdgm._core.mcmc import effective_sample_size
    >>> float(effective_sample_size(np.array([1.0, 1.0, 0.0, 0.0])))
    2.0
    """
    return np.sum(w, axis=axis) ** 2 / np.sum(w * w, axis=axis)


def importance_std_err(log_w, axis=0):
    """Delta-method standard error of ``log mean exp(log_w)``: ``sd(w) / (sqrt(n) mean(w))``.

    Parameters
    ----------
    log_w : ndarray
        Log importance weights, samples along ``axis``.
    axis : int, default=0

    Returns
    -------
    std_err : float or ndarray
        Zero when there is one sample (no spread to estimate).

    See Also
    --------
    effective_sample_size

    Examples
    --------
    >>> import numpy as np
    >>> from skdgm._core.mcmc import importance_std_err
    >>> float(importance_std_err(np.zeros(10)))
    0.0
    """
    w = np.exp(log_w - np.max(log_w, axis=axis, keepdims=True))
    n = w.shape[axis]
    mean = w.mean(axis=axis)
    if n < 2:
        return np.zeros_like(mean)
    return w.std(axis=axis, ddof=1) / (np.sqrt(n) * mean)

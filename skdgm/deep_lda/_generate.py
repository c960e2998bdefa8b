"""Ancestral sampling of documents from a fitted deep LDA, given their lengths.

In the PGBN (Cong et al. 2017, Eq. 1) a document's length is Poisson-gamma with
the scale ``c_j^(2) = (1 - p_j^(2)) / p_j^(2)``, ``p_j^(2) ~ Beta(a0, b0)``; with
the paper's ``a0 = b0 = 0.01`` that prior puts ``p_j^(2)`` at 0 or 1 and the
lengths anywhere from 0 to about 1e7, and training never updates it (``p_j^(2)``
is local to each training document). The words, however, do not depend on that
scale: given its length ``N_j``, a Poisson count vector with rates
``Phi^(1) theta_j^(1)`` is ``Mult(N_j, Phi^(1) theta_j^(1) / |theta_j^(1)|)``,
and the proportions ``theta_j^(1) / |theta_j^(1)|`` are free of ``c_j^(2)``. So
documents are drawn here with lengths taken from elsewhere (the training
documents' lengths, or the caller's) and words from the fitted model:
``theta^(L) ~ Gam(r, 1/c^(L+1))``, ``theta^(l) ~ Gam(Phi^(l+1) theta^(l+1), 1/c^(l+1))``
with ``c^(l) ~ Gam(e0, 1/f0)`` for ``l >= 3``, then the multinomial.

For the Bernoulli-Poisson link the "length" is the number of distinct words
(ones); each document's rates are scaled so that its *expected* number of ones,
``sum_v 1 - exp(-s lambda_v)``, equals the target (solved by bisection), and then
``b_v ~ Bernoulli(1 - exp(-s lambda_v))``.
"""

import numbers

import numpy as np

__all__ = [
    "merge_histograms",
    "merge_lengths",
    "sample_lengths",
    "sample_word_probabilities",
    "sample_documents",
    "check_lengths",
    "project_topics",
]

from ._local import FLOOR

_TINY = np.finfo(np.float64).tiny
# Largest gamma shape sample_word_probabilities draws with (see there): far above
# 1e32, where a gamma draw equals its shape to double precision, and far below
# overflow.
_MAX_SHAPE = 1e100


def merge_lengths(values, counts, lengths):
    """Add document lengths to a histogram ``(values, counts)`` (sorted distinct values).

    Memory grows with the number of *distinct* lengths only, which stays small
    for text however long the stream.
    """
    v, c = np.unique(np.asarray(lengths, dtype=np.int64), return_counts=True)
    return merge_histograms(values, counts, v, c)


def merge_histograms(values, counts, more_values, more_counts):
    """Two histograms ``(values, counts)`` of lengths added into one (sorted distinct values)."""
    allv = np.concatenate([values, more_values])
    allc = np.concatenate([counts, more_counts])
    out_v, inv = np.unique(allv, return_inverse=True)
    return out_v, np.bincount(inv, weights=allc, minlength=out_v.size).astype(np.int64)


def sample_lengths(values, counts, n, rng):
    """``n`` draws from the empirical distribution ``(values, counts)``."""
    return values[rng.choice(values.size, size=n, p=counts / counts.sum())]


def sample_word_probabilities(phis, r, e0, f0, n, rng):
    """Per document, ``Phi^(1) theta^(1) / |theta^(1)|`` with ``theta`` drawn top-down (Eq. 1).

    Returns an ``(n, V)`` array whose rows sum to one. ``theta`` is floored at
    ``FLOOR``, as in the local sampler, so a document whose gamma draws all
    underflow gets equal weights on its topics instead of 0/0.

    Two more guards keep every row finite for any ``e0 > 0``. A ``Gam(e0, 1/f0)``
    draw of ``c`` underflows to 0 with probability about ``tiny**e0`` (0.06 % of
    a million draws at ``e0 = 0.01``, all of them at ``e0 = 1e-300``:
    benchmarks/results/topics_interop.txt), and
    ``theta / 0`` then made the row NaN; ``c`` is floored at ``FLOOR`` too. And a
    row of the next layer's gamma shapes is scaled down to a largest entry of
    ``_MAX_SHAPE`` when it is larger, so that several tiny ``c`` in a row cannot
    overflow. Neither changes the proportions at double precision: a
    ``Gam(k)`` draw is ``k (1 + O(k^-1/2))``, so above ``k = 1e32`` it equals
    ``k`` to 16 digits, and both guards act only on rows whose shapes are far
    above that (entries ``1e68`` times smaller than the row's largest carry
    less than ``1e-68`` of its weight).
    """
    L = len(phis)
    shape = np.broadcast_to(np.asarray(r, dtype=np.float64), (n, phis[-1].shape[1]))
    for l in reversed(range(L)):
        # c^(2) only scales theta^(1), which is normalised below: draw no rate for it
        rate = (np.maximum(rng.gamma(e0, 1.0 / f0, size=n), FLOOR) if l > 0
                else np.ones(n))
        theta = np.maximum(rng.standard_gamma(shape) / rate[:, None], FLOOR)
        if l > 0:
            shape = theta @ phis[l].T
            shape *= np.minimum(1.0, _MAX_SHAPE / shape.max(axis=1, keepdims=True))
    theta /= theta.sum(axis=1, keepdims=True)
    p = theta @ phis[0].T
    p /= p.sum(axis=1, keepdims=True)
    return p


def _bernoulli_scale(p, ones, n_bisect=100):
    """Per row, ``s >= 0`` with ``sum_v 1 - exp(-s p_v) = ones`` (bisection on log s)."""
    n, V = p.shape
    ones = np.minimum(np.asarray(ones, dtype=np.float64), V)
    lo = np.full(n, -50.0)
    hi = np.full(n, 60.0)
    for _ in range(n_bisect):
        mid = 0.5 * (lo + hi)
        expected = -np.expm1(-np.exp(mid)[:, None] * p).sum(axis=1)
        low = expected < ones
        lo = np.where(low, mid, lo)
        hi = np.where(low, hi, mid)
    s = np.exp(0.5 * (lo + hi))
    s[ones <= 0] = 0.0
    return s


def sample_documents(phis, r, lengths, *, e0, f0, link, rng):
    """Documents of the given lengths from the fitted model.

    Parameters
    ----------
    phis : list of ndarray
        ``phis[l]`` of shape ``(K_{l-1}, K_l)``, columns on the simplex.
    r : ndarray of shape (K_L,)
    lengths : ndarray of int of shape (n,)
        Tokens per document (``link="poisson"``), or number of distinct words
        (``"bernoulli"``; the expected number, see the module docstring).
    e0, f0 : float
        ``c^(l) ~ Gam(e0, 1/f0)`` for the layers above the first.
    link : {"poisson", "bernoulli"}
    rng : numpy.random.Generator

    Returns
    -------
    X : ndarray of int64, shape (n, V)
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        return np.zeros((0, phis[0].shape[0]), dtype=np.int64)
    p = sample_word_probabilities(phis, r, e0, f0, lengths.size, rng)
    if link == "bernoulli":
        s = _bernoulli_scale(p, lengths)
        return (rng.random(p.shape) < -np.expm1(-s[:, None] * p)).astype(np.int64)
    return rng.multinomial(lengths, p).astype(np.int64)


def check_lengths(n_samples, lengths, *, link, n_features, max_count):
    """Validate :meth:`DeepLDA.sample`'s arguments; the lengths as int64, or ``None``.

    ``None`` stands for ``lengths="empirical"`` (drawn by :func:`sample_lengths`).
    Raises a ``ValueError`` naming the problem otherwise.
    """
    if (not isinstance(n_samples, numbers.Integral) or isinstance(n_samples, bool)
            or n_samples < 0):
        raise ValueError(f"n_samples must be a non-negative int, got {n_samples!r}")
    n_samples = int(n_samples)
    if isinstance(lengths, str):
        if lengths != "empirical":
            raise ValueError(
                f"lengths must be 'empirical' or an array of {n_samples} non-negative "
                f"ints, got {lengths!r}")
        return None
    N = np.asarray(lengths)
    if N.shape != (n_samples,):
        raise ValueError(f"lengths must have shape ({n_samples},) (one per sample), "
                         f"got shape {N.shape}")
    if N.size and (not np.all(np.isfinite(N)) or np.any(N < 0)
                   or np.any(N != np.floor(N)) or np.any(N > max_count)):
        raise ValueError("lengths must be non-negative integers (at most 2**63 - 1)")
    if link == "bernoulli" and N.size and N.max() > n_features:
        raise ValueError(f"with link='bernoulli' a length counts distinct words: at "
                         f"most n_features_in_ = {n_features}")
    return N.astype(np.int64)


def project_topics(topics, layer):
    """Layer-``layer`` topics in vocabulary space, ``Phi^(1) ... Phi^(layer)`` (1-based).

    Each product of column-stochastic matrices is column-stochastic, so the
    columns stay on the simplex.
    """
    out = topics[0]
    for l in range(1, layer):
        out = out @ topics[l]
    return out

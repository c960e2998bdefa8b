"""The greedy stack's CD-1 step, on in-memory rows or a dask array's blocks (issue 28).

One CD-1 update of an RBM of the stack (Salakhutdinov & Hinton 2009, Sec. 3.1;
:func:`skdgm.dbm._train.pretrain_rbm`) is a sum over the minibatch's rows and an
update of the parameters from it. On a :class:`~skdgm._core.blocks.RowBlocks` the
sums are taken where the blocks live, each block's rows drawing their hidden
states from a seed of their own (one per block and minibatch, from the fit's
generator), and summed by the tree of :func:`~skdgm._core.blocks.tree_reduce`, whose
shape follows the block order alone: the answer depends on the row chunks, not on
the workers. The next RBM's data, the hidden states sampled from the rows, are a
derived ``RowBlocks`` that stays where the blocks live too; the client only ever
holds parameters and sums.
"""

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from .._core.base import dense_rows
from .._core.blocks import RowBlocks, add_parts, block_seeds, float_summary
from .._core.mcmc import bernoulli

__all__ = ["SAMPLE_UP_ROWS", "cd1_minibatch", "cd1_sums", "recon_error_sum", "sample_up",
           "skip_sample_up"]

#: Rows of one chunk of :func:`sample_up` in memory.
SAMPLE_UP_ROWS = 4096


def _dense(rows):
    return rows.toarray() if sp.issparse(rows) else rows


def cd1_sums(v0, W, bv, bh, up, down, rng):
    """The sums of one CD-1 step over the rows ``v0`` (dense).

    ``up`` and ``down`` scale the weights in ``p(h | v)`` and ``p(v | h)``
    (Sec. 3.1's doubled directions). Returns the weight gradient's sum
    ``v0^T p(h|v0) - v1^T p(h|v1)`` (``v1`` the reconstruction's means) and the
    two biases' summed differences; the caller divides by the row count.
    """
    ph0 = expit(up * (v0 @ W) + bh)
    h0 = bernoulli(ph0, rng, dtype=W.dtype)
    pv1 = expit(down * (h0 @ W.T) + bv)
    ph1 = expit(up * (pv1 @ W) + bh)
    return v0.T @ ph0 - pv1.T @ ph1, (v0 - pv1).sum(axis=0), (ph0 - ph1).sum(axis=0)


def _cd1_block(rows, shared, seed):
    return cd1_sums(_dense(rows), *shared, np.random.default_rng(seed))


def cd1_minibatch(X, rows, W, bv, bh, up, down, rng):
    """:func:`cd1_sums` of ``X``'s rows ``rows``, and their count.

    In memory the rows draw from ``rng``; from a :class:`RowBlocks` every block's
    share draws from its own seed (:func:`~skdgm._core.blocks.block_seeds`) where
    the block lives, and the sums are combined by a tree in block order (on the
    workers above :data:`~skdgm._core.blocks.TREE_ON_WORKERS_ABOVE` blocks).
    """
    if isinstance(X, RowBlocks):
        batch = X[rows]
        sums, = batch.map(_cd1_block, (W, bv, bh, up, down), block_seeds(rng),
                          combine=add_parts)
        return tuple(sums) + (batch.shape[0],)
    v0 = dense_rows(X, rows)
    return cd1_sums(v0, W, bv, bh, up, down, rng) + (v0.shape[0],)


def _sample_block(block, shared, seed):
    W, bh, up = shared
    return bernoulli(expit(up * (_dense(block) @ W) + bh), np.random.default_rng(seed),
                     dtype=W.dtype)


def sample_up(data, W, bh, up, rng):
    """The next RBM's data: hidden states drawn given every row of ``data``.

    In memory from ``rng``; a :class:`RowBlocks`' are derived block by block
    (one seed per block) and stay where the blocks live; of a subset (the training
    rows of an early-stopped fit), its rows of its whole blocks'.
    """
    if isinstance(data, RowBlocks):
        return data.derive(_sample_block, (W, bh, up), block_seeds(rng),
                           n_features=W.shape[1], dtype=W.dtype, summarize=float_summary)
    # In row chunks: the activations and the float64 uniforms of all rows at once
    # were 2.2 times the data's bytes (the fit of a million MNIST rows, 3.1 GB in
    # float32, peaked at 12.9 GB). One uniform per entry in C order, so the chunks
    # draw what one call would.
    out = np.empty((data.shape[0], W.shape[1]), dtype=W.dtype)
    for a in range(0, data.shape[0], SAMPLE_UP_ROWS):
        rows = data[a:a + SAMPLE_UP_ROWS]
        out[a:a + rows.shape[0]] = bernoulli(expit(up * (rows @ W) + bh), rng,
                                             dtype=W.dtype)
    return out


def skip_sample_up(data, W, rng):
    """Advance ``rng`` as :func:`sample_up` would, without computing the states.

    In memory :func:`sample_up` draws one float64 uniform per row and hidden unit;
    on a :class:`RowBlocks` it takes one seed per block.
    """
    if isinstance(data, RowBlocks):
        block_seeds(rng)
        return
    n, k = data.shape[0], W.shape[1]
    for a in range(0, n, SAMPLE_UP_ROWS):
        rng.random((min(SAMPLE_UP_ROWS, n - a), k))


def _recon_block(rows, shared, extra):
    from ._train import reconstruction_error

    W, bv, bh, up, down = shared
    v = _dense(rows)
    return reconstruction_error(v, expit(up * (v @ W) + bh), down * W, bv)


def recon_error_sum(data, W, bv, bh, up, down):
    """The summed reconstruction cross-entropy of a :class:`RowBlocks`' rows, block by
    block (the verbose figure of :func:`skdgm.dbm._train.pretrain_recon_error`)."""
    parts = data[:].map(_recon_block, (W, bv, bh, up, down), lambda p: [None] * len(p))
    return float(sum(parts))

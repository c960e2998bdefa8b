"""The variational bound ``score_samples`` reports, fast by default (issue 25).

Eq. 3 is a lower bound on ``log p(v)`` for *any* factorised ``Q``: the mean-field
fixed point is only the tightest ``Q`` of that family. Scoring therefore need not
iterate to convergence. ``bound="fast"`` (:func:`fast_bound`) sweeps
:data:`FAST_SWEEPS` times from the first of ``mean_field_starts`` (the bottom-up
pass with doubled weights) and, from the other (the odd layers off), once, going on
only in the rows where that start's bound comes within :data:`FAST_MARGIN` nats;
each row keeps the ``Q`` with the higher bound. The sweeps run in float32 (they
only choose ``Q``); the data's product ``V W_0`` and the bound itself are float64,
with the even layers at their best given the odd ones, so the value is the bound
of that ``Q`` to float64 rounding. ``bound="tight"`` is the converged best-of-starts
fixed point of :func:`._model.mean_field` that ``transform`` uses.
"""

import numpy as np

from .._core.base import iter_minibatches, map_row_chunks
from .._core.numerics import sigmoid, softplus_sum
from ._bounds import estimate_log_partition
from ._model import (_entropy, _mean_field_sweep, even_layers, layer_input, log_marginal_odd,
                     mean_field_init, odd_layers)

__all__ = ["BOUNDS", "FAST_BLOCK", "FAST_MARGIN", "FAST_SWEEPS", "HELD_OUT_BETAS",
           "HELD_OUT_RUNS", "check_bound",
           "fast_bound", "fast_bound_rows", "held_out_bound"]

#: The values of ``score_samples(bound=...)``.
BOUNDS = ("fast", "tight")
#: Sweeps of ``bound="fast"``: on DBMs (196, 392) trained for 3 and 12 passes on
#: 10,000 binarised MNIST rows, 3 sweeps came within 0.0013 and 0.00002 nats per row
#: of the tight bound on average (worst rows 0.16 and 0.0014;
#: ``benchmarks/bench_scoring_cost.py --only dbm``). No per-row tolerance is tested:
#: a 0.01 one stopped no row of these models within 3 sweeps (issue 25, fourth session).
FAST_SWEEPS = 3
#: Nats by which the second start's float32 bound after one sweep may trail the
#: first start's and still be swept on. Measured per row (issue 25, fourth session;
#: ``benchmarks/bench_scoring_cost.py --only dbm_screen``):
#: on the MNIST DBMs above the ``"zeros"`` start trailed by 100-493 nats after one
#: sweep and never beat the doubled one after three; on digits DBMs (12, 8) and
#: (16, 32), where it wins on ~15 % of the rows by up to 0.1 nats, it trailed by at
#: most 1.5 after one sweep; on the (500, 1000) model where the doubled start is
#: ~290 nats low, it led by 289-295 after none.
FAST_MARGIN = 5.0
#: Rows per block of ``bound="fast"``: a block's arrays stay in cache.
FAST_BLOCK = 1000
#: Nats added to :func:`_zeros_ceiling` before it may drop a row, for the float32
#: rounding of it and of the screen's value (both ~1e-4 on MNIST-size models).
CEILING_SLACK = 0.05
#: Temperatures and runs (at most) of the cheap AIS ``log Z`` of early stopping's
#: held-out figure (:func:`held_out_bound`). 8 runs instead of 16 cost 0.29-0.30 CPU-s
#: instead of 0.44-0.48 on the 784-196-392 default model; 100 temperatures would cost
#: 0.15, but their ``log Z`` fell 1.8, 5.9 and 7.9 nats below the 300-temperature one
#: after passes 2, 3 and 4: a bias that grows as the model sharpens would make the
#: held-out figure rise by itself and hide a plateau (issue 25;
#: ``benchmarks/results/dbm_training_cost_parts.txt``).
HELD_OUT_BETAS = 300
HELD_OUT_RUNS = 8


def check_bound(bound):
    """``bound``, or a ``ValueError`` naming the problem if it is not one of :data:`BOUNDS`."""
    if bound not in BOUNDS:
        raise ValueError(f"bound must be 'fast' or 'tight', got {bound!r}")
    return bound


def fast_bound(V, coefs, intercepts, starts=("doubled", "zeros"), *, n_iter=FAST_SWEEPS,
               margin=FAST_MARGIN):
    """``sum_h Q log P*(v, h) + H(Q)`` (Eq. 3 plus ``log Z``) at a few-sweep mean-field ``Q``.

    A sweep updates the odd layers, then the even ones (float32). The last sweep's
    even half is made in float64 inside the bound: for odd means ``mu`` the best
    even means are ``sigma(a_l)``, and the bound at them is ``log_marginal_odd(mu) +
    H(mu)`` (the even layers summed out with means in place of states, since
    ``a sigma(a) + H(sigma(a)) = softplus(a)``): the bound of that ``Q`` to float64
    rounding.

    The first start is swept ``n_iter`` times in every row. Each other start is
    swept once, its bound taken in float32, and swept on (then bounded in float64)
    only in the rows where that bound is within ``margin`` nats of the first
    start's; each row keeps the higher bound. For the ``"zeros"`` start an upper
    bound on that float32 value that needs no product of the means with the
    weights (:func:`_zeros_ceiling`) is tried first, and the value itself is taken
    only in the rows the ceiling does not already drop: the same rows are kept. The doubled start alone reaches a
    fixed point ~290 nats below the ``"zeros"`` one on some trained models
    (``tests/test_dbm.py``), a gap any margin keeps; on binarised MNIST the
    ``"zeros"`` start trailed in every row (see :data:`FAST_MARGIN`). The rows go
    through in blocks of :data:`FAST_BLOCK`; a row's value depends on that row alone.

    Parameters
    ----------
    V : ndarray of shape (n, D)
    coefs, intercepts : list of ndarray
    starts : sequence of {"doubled", "zeros"}, default=("doubled", "zeros")
        See :func:`._model.mean_field_init`.
    n_iter : int, default=FAST_SWEEPS
        Sweeps (0: the starts' odd layers, with the best even layers given them).
    margin : float, default=FAST_MARGIN
        ``inf`` sweeps every start in every row.

    Returns
    -------
    bound : ndarray of shape (n,)
    """
    V = np.asarray(V, dtype=np.float64)
    coefs = [np.asarray(w, dtype=np.float64) for w in coefs]
    intercepts = [np.asarray(b, dtype=np.float64) for b in intercepts]
    c32 = [w.astype(np.float32) for w in coefs]
    b32 = [b.astype(np.float32) for b in intercepts]
    starts = tuple(starts)
    if len(intercepts) == 2:
        starts = starts[:1]          # an RBM: the first sweep is exact from any start
    n_iter = int(n_iter)
    grams = _even_grams(coefs, len(intercepts)) if "zeros" in starts[1:] else None
    out = np.empty(len(V))
    for block in iter_minibatches(len(V), FAST_BLOCK):
        v = V[block]
        VW = v @ coefs[0]
        VW32 = VW.astype(np.float32)
        # The starts are compared without v's own term, the same for every Q of a
        # row: it is added once at the end, not read from v again for each start.
        best = _bound_at(_swept(starts[0], VW32, c32, b32, n_iter), VW, coefs, intercepts)
        for start in starts[1:]:
            mus = _swept(start, VW32, c32, b32, min(n_iter, 1))
            rows = np.arange(len(v))
            if n_iter > 1 or margin < np.inf:
                if start == "zeros" and n_iter >= 1:
                    ceiling = _zeros_ceiling(mus, VW32, c32, b32, grams)
                    rows = np.flatnonzero(ceiling + CEILING_SLACK >= best - margin)
                    if rows.size == 0:
                        continue
                    mus = [None] + [m[rows] for m in mus[1:]]
                rough = _bound_at(mus, VW32[rows], c32, b32)
                keep = np.flatnonzero(rough >= best[rows] - margin)
                rows = rows[keep]
                if rows.size == 0:
                    continue
                mus = [None] + [m[keep] for m in mus[1:]]
                mus = _swept(mus, VW32[rows], c32, b32, n_iter - 1, resume=True)
            best[rows] = np.maximum(best[rows],
                                    _bound_at(mus, VW[rows], coefs, intercepts))
        out[block] = best + v @ intercepts[0]
    return out


def _bound_at(mus, VW, coefs, intercepts):
    # Eq. 3 plus log Z, less v's bias term, at the odd means of ``mus`` and the
    # best even means given them, in the dtype of ``coefs`` (float32: the
    # screen's rough value); VW = v W_0 is all it reads of v
    odd = [mus[l].astype(coefs[0].dtype, copy=False) for l in odd_layers(len(intercepts))]
    bound = log_marginal_odd(odd, coefs, intercepts, first_product=VW, visible_bias=0.0)
    for mu in odd:
        bound += _entropy(mu)
    return bound


def _even_grams(coefs, n_layers):
    """Per even hidden layer ``l``, ``A A^T`` (float32) with ``A`` the weights from
    its odd neighbours stacked, ``[W_{l-1}; W_l^T]``: then ``|d_l|^2 = x A A^T x^T``
    for ``d_l = x A``, ``x`` the neighbours' means side by side."""
    grams = {}
    for l in even_layers(n_layers)[1:]:
        A = np.vstack([coefs[l - 1]] + ([coefs[l].T] if l + 1 < n_layers else []))
        grams[l] = (A @ A.T).astype(np.float32)
    return grams


def _zeros_ceiling(mus, VW32, c32, b32, grams):
    """An upper bound on the screen's value of the ``"zeros"`` start after one sweep.

    After its first odd half the start's ``Q`` has odd means ``sigma(z_l)`` and even
    means ``sigma(b_l)``, whose bound (less ``v``'s bias term) is
    ``G = sum_odd softplus(z_l) + sum_even softplus(b_l)``: each layer at its best
    given fixed neighbours, no product needed (``z_1 = V W_0 + b_1 + sigma(b_2)
    W_1^T``, the deeper ``z_l`` the same in every row). The screen's value sums the
    even layers out at those odd means instead: it exceeds ``G`` by ``sum_j
    [softplus(b_j + d_j) - softplus(b_j) - sigma(b_j) d_j]`` with ``d_l`` the input
    from the odd means, at most ``|d_l|^2 / 8`` since ``softplus'' <= 1/4``; the
    squared norm is a quadratic form in the odd means (:func:`_even_grams`), half
    the products of ``d_l`` itself on the 784-196-392 default model. On DBMs trained
    on binarised MNIST the ceiling alone dropped 77-98 % of the rows the screen
    drops (issue 25).
    """
    n, n_layers = len(VW32), len(b32)
    row = mean_field_init(np.zeros((1, c32[0].shape[0]), np.float32), c32, b32, "zeros")
    g = np.zeros(n)
    for l in odd_layers(n_layers):
        a = layer_input(l, row, c32, b32)
        g += softplus_sum(VW32 + a) if l == 1 else softplus_sum(a)[0]
    for l in even_layers(n_layers)[1:]:
        g += softplus_sum(b32[l][None])[0]
        x = mus[l - 1] if l + 1 == n_layers else np.hstack([mus[l - 1], mus[l + 1]])
        g += np.einsum("ij,ij->i", x @ grams[l], x, dtype=np.float64) / 8
    return g


def _swept(start, VW32, c32, b32, n_iter, *, resume=False):
    """The float32 means from ``start`` after ``n_iter`` sweeps, the last even half left out.

    ``start`` is a start's name, or (``resume=True``) the means a previous call
    returned, whose even half is then made first. The ``"zeros"`` start's first
    odd half costs one row's products: its even hidden layers are ``sigma(b_l)``
    in every row.
    """
    n, n_layers = len(VW32), len(b32)
    odd, even = odd_layers(n_layers), [l for l in even_layers(n_layers) if l > 0]
    halves = ([even] if resume else []) + [odd, even] * n_iter
    if resume:
        mus = list(start)
    elif start == "zeros" and n_iter:
        row = mean_field_init(np.zeros((1, c32[0].shape[0]), np.float32), c32, b32, "zeros")
        mus = [None] + [np.broadcast_to(m, (n, m.shape[1])) for m in row[1:]]
        for l in odd:
            a = layer_input(l, row, c32, b32)
            mus[l] = sigmoid(VW32 + a if l == 1 else np.repeat(a, n, axis=0))
        halves = halves[1:]
    else:
        mus = [None] + mean_field_init(VW32, c32, b32, start, VW=VW32)[1:]
    for layers in halves[:-1] if halves and halves[-1] is even else halves:
        mus = _mean_field_sweep(mus, c32, b32, VW32, layers=layers, track=False)[0]
    return mus


def fast_bound_rows(X, coefs, intercepts, starts, batch_size):
    """:func:`fast_bound` over the rows of ``X``, a CSR ``X`` densified ``batch_size`` rows at a time."""
    return map_row_chunks(lambda V: fast_bound(V, coefs, intercepts, starts), X, batch_size)


def held_out_bound(X, coefs, intercepts, base_visible, starts, batch_size, *, n_runs,
                   random_state, n_jobs=None):
    """Early stopping's held-out figure: the mean fast bound of ``X`` minus a cheap ``log Z``.

    The bound is :func:`fast_bound_rows` (what ``score_samples`` reports by
    default). ``log Z`` is exact when the odd layers can be enumerated; otherwise
    AIS with :data:`HELD_OUT_BETAS` temperatures and ``n_runs`` runs (the
    estimator's ``n_ais_runs``, at most :data:`HELD_OUT_RUNS`) on
    ``random_state`` (the estimator passes a fixed stream: common random numbers
    across passes), vectorised as one group: split into AIS's default 8 groups of
    2 runs it cost ~3.7x more, in Python overhead
    (``benchmarks/results/dbm_training_cost.txt``). The figure is compared only
    with itself, from pass to pass; nothing is cached.
    """
    log_z, _ = estimate_log_partition(
        coefs, intercepts, base_visible, exact=None, n_betas=HELD_OUT_BETAS, n_runs=n_runs,
        random_state=random_state, bounds_random_state=None, tol=None, n_jobs=n_jobs,
        n_groups=1)
    return float(np.mean(fast_bound_rows(X, coefs, intercepts, starts, batch_size)) - log_z)

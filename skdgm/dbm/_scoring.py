"""The variational bound ``score_samples`` reports, fast by default (issue 25).

Eq. 3 is a lower bound on ``log p(v)`` for *any* factorised ``Q``: the mean-field
fixed point is only the tightest ``Q`` of that family. Scoring therefore need not
iterate to convergence. ``bound="fast"`` sweeps from each of ``mean_field_starts``
(the bottom-up pass with doubled weights, a recognition pass, and the start with
the odd layers off) at most :data:`FAST_SWEEPS` times, a row stopping once none of
its means moves by more than :data:`FAST_TOL`, and keeps per row the ``Q`` with the
higher bound. The sweeps run in float32 (they only choose ``Q``); the data's
product ``V W_0`` and the bound itself are float64, so the value is the bound of
that ``Q`` to float64 rounding. ``bound="tight"`` is the converged best-of-starts
fixed point of :func:`._model.mean_field` that ``transform`` uses.
"""

import numpy as np

from .._core.base import map_row_chunks
from ._bounds import estimate_log_partition
from ._model import _mean_field_sweep, lower_bound_unnormalised, mean_field_init

__all__ = ["BOUNDS", "FAST_SWEEPS", "FAST_TOL", "HELD_OUT_BETAS", "HELD_OUT_RUNS", "check_bound",
           "fast_bound", "fast_bound_rows", "held_out_bound"]

#: The values of ``score_samples(bound=...)``.
BOUNDS = ("fast", "tight")
#: Sweeps and per-row tolerance of ``bound="fast"``: on DBMs (196, 392) trained for
#: 3 and 12 passes on 10,000 binarised MNIST rows, 3 sweeps from each start came
#: within 0.0005 and 0.00002 nats per row of the tight bound on average (worst rows
#: 0.022 and 0.0007; ``benchmarks/bench_scoring_cost.py --only dbm``).
FAST_SWEEPS = 3
FAST_TOL = 1e-2
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
               tol=FAST_TOL):
    """``sum_h Q log P*(v, h) + H(Q)`` (Eq. 3 plus ``log Z``) at a few-sweep mean-field ``Q``.

    Every start is swept (stacked, as :func:`._model.mean_field` does) and each row
    keeps the ``Q`` with the higher bound: the doubled start alone reaches a fixed
    point ~290 nats below the other on some trained models (``tests/test_dbm.py``).

    Parameters
    ----------
    V : ndarray of shape (n, D)
    coefs, intercepts : list of ndarray
    starts : sequence of {"doubled", "zeros"}, default=("doubled", "zeros")
        See :func:`._model.mean_field_init`.
    n_iter : int, default=FAST_SWEEPS
        Most sweeps (0: the starts themselves).
    tol : float, default=FAST_TOL
        A row stops once none of its means moved by more than this in a sweep.

    Returns
    -------
    bound : ndarray of shape (n,)
    """
    V = np.asarray(V, dtype=np.float64)
    coefs = [np.asarray(w, dtype=np.float64) for w in coefs]
    intercepts = [np.asarray(b, dtype=np.float64) for b in intercepts]
    VW = V @ coefs[0]
    c32 = [w.astype(np.float32) for w in coefs]
    b32 = [b.astype(np.float32) for b in intercepts]
    VW32, V32 = VW.astype(np.float32), V.astype(np.float32)
    best = np.full(len(V), -np.inf)
    for start in starts:
        mus = mean_field_init(V32, c32, b32, start, VW=VW32)
        active = np.arange(len(V))
        for _ in range(int(n_iter)):
            if active.size == 0:
                break
            every = active.size == len(V)
            # only rows still moving are swept: a row's Q never depends on its batch
            sub, delta = _mean_field_sweep(mus if every else [m[active] for m in mus], c32,
                                           b32, VW32 if every else VW32[active])
            for m, x in zip(mus[1:], sub[1:]):
                m[active] = x
            active = active[delta > tol]
        mus64 = [V] + [m.astype(np.float64) for m in mus[1:]]
        np.maximum(best, lower_bound_unnormalised(mus64, coefs, intercepts, first_product=VW),
                   out=best)
    return best


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

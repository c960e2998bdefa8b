"""The batch upward-downward Gibbs sampler: one sweep over every document and the globals.

One sweep is a partially collapsed Gibbs sampler (Zhou, Cong & Chen 2016a,
Sec. 3; Cong et al. 2017, Sec. 2 and Eq. 6-7) over the globals ``Phi^(l)``,
``r`` and every document's hidden units ``theta^(l)``:

1. upward, per document (:func:`._local.gibbs_upward`): the augmented counts
   (multinomial partitions and CRT tables, Eq. 6) given the current state, then
   ``p_j^(2)``, ``c_j^(l)`` and ``q_j^(l)`` given the current ``theta``;
2. global: ``phi_k^(l) ~ Dir(eta_l + x^(l)_{:k.})`` and
   ``r_k ~ Gam(gamma0/K_L + x^(L+1)_{k.}, 1/(c0 + q^(L+1)_.))``. These are the
   conditionals with every ``theta`` marginalised (given the augmented counts,
   ``Phi`` enters the likelihood only through ``prod phi^x``, and ``r`` only
   through the top tables ``x^(L+1)_{kj} ~ Pois(r_k q_j^(L+1))``);
3. downward, per document (:func:`._local.gibbs_downward`): ``theta^(L)``, ...,
   ``theta^(1)`` from their conditionals under the *new* ``Phi`` and ``r``.

Because step 2 marginalises ``theta``, ``theta`` must be drawn again (step 3)
before anything conditions on it; drawing ``theta`` first under the old globals
and the globals afterwards (as this library did before issue 12) leaves the
posterior no longer invariant. ``p_j^(2)`` and ``c_j^(l)`` are drawn in step 1
from their conditionals given the current ``theta`` and are not part of the
chain's state: nothing reads their previous values.

The per-document halves are module-level functions of one chunk of documents,
so the estimator fans them out through :func:`skdgm._core.chains.run_chains`;
:func:`gibbs_sweep` only orders them.
"""

import numpy as np

from . import _global
from ._local import gibbs_downward, gibbs_upward, words_loglik
from ._train import chunk_layout

__all__ = ["gibbs_sweep", "gibbs_update", "serial_map"]


def serial_map(rng):
    """A ``map_chunks`` for :func:`gibbs_sweep` that runs every chunk on one generator."""
    def run(func, tasks, **kwargs):
        return [func(task, rng, **kwargs) for task in tasks]
    return run


def gibbs_sweep(chunks, thetas, *, phis, r, etas, gamma0, c0, a0, b0, e0, f0, link,
                rng, map_chunks, kernels="cython"):
    """One batch Gibbs sweep over all documents, then the globals, then ``theta``.

    Parameters
    ----------
    chunks : list of sparse matrix
        The documents, cut into chunks (rows of each chunk are documents).
    thetas : list
        Per chunk, its hidden units (list per layer), or ``None`` for the
        deterministic start of :func:`._local.initial_theta`.
    phis : list of ndarray
        Current ``Phi^(l)``, shape ``(K_{l-1}, K_l)``, columns on the simplex.
    r : ndarray of shape (K_L,)
    etas : list of float
        Dirichlet concentration per layer.
    gamma0, c0, a0, b0, e0, f0 : float
        The priors of :class:`skdgm.DeepLDA`.
    link : {"poisson", "bernoulli"}
    rng : numpy.random.Generator
        Stream of the global draws.
    map_chunks : callable ``(func, tasks, **kwargs) -> list``
        Runs ``func(task, chunk_rng, **kwargs)`` for every task, each with its
        own stream (:func:`serial_map`, or ``run_chains`` with spawned seeds).
    kernels : {"cython", "numpy"}

    Returns
    -------
    phis : list of ndarray
    r : ndarray of shape (K_L,)
    thetas : list
        Per chunk, the new hidden units.
    """
    ups = map_chunks(gibbs_upward, list(zip(chunks, thetas)), phis=phis, r=r, a0=a0,
                     b0=b0, e0=e0, f0=f0, link=link, kernels=kernels)
    L = len(phis)
    counts = [sum(u["topic_counts"][l] for u in ups) for l in range(L)]
    top = sum(u["top_tables"] for u in ups)
    q_top = float(sum(u["q_top"] for u in ups))
    new_phis = [_global.gibbs_phi(counts[l], etas[l], rng) for l in range(L)]
    new_r = _global.gibbs_r(np.asarray(top, dtype=np.float64), q_top, gamma0, c0, rng)
    new_thetas = map_chunks(gibbs_downward, [u["carry"] for u in ups], phis=new_phis,
                            r=new_r, kernels=kernels)
    return new_phis, new_r, new_thetas


def gibbs_update(X, state, *, phis, r, etas, gamma0, c0, a0, b0, e0, f0, link, rng,
                 map_chunks, chunk_docs, kernels="cython"):
    """:func:`gibbs_sweep` over the documents of ``X``, carrying their hidden units.

    The documents are cut into chunks of about ``chunk_docs`` (a layout that
    depends only on their number, so that ``state`` lines up from one sweep to
    the next); ``state`` is ``(n_docs, thetas)`` from the previous sweep over
    the same documents, or ``None`` (or another ``n_docs``) to start afresh.

    Returns
    -------
    phis : list of ndarray
    r : ndarray
    state : tuple
        ``(n_docs, thetas)`` for the next sweep.
    loglik, n_words : float
        The log-probability of the documents' own words under the new
        ``Phi^(1) theta^(1)`` (:func:`._local.words_loglik`), and their number.
    """
    n = X.shape[0]
    slices = chunk_layout(n, chunk_docs)
    thetas = [None] * len(slices) if state is None or state[0] != n else state[1]
    chunks = [X[sl] for sl in slices]
    new_phis, new_r, thetas = gibbs_sweep(
        chunks, thetas, phis=phis, r=r, etas=etas, gamma0=gamma0, c0=c0, a0=a0, b0=b0,
        e0=e0, f0=f0, link=link, rng=rng, map_chunks=map_chunks, kernels=kernels)
    ll, nw = 0.0, 0.0
    for chunk, th in zip(chunks, thetas):
        a, b = words_loglik(chunk, new_phis[0], th[0])
        ll, nw = ll + a, nw + b
    return new_phis, new_r, (n, thetas), ll, nw

"""``log p(x)`` of an SBN by the route ``BayesianSBN.score_samples`` picks.

Exact by enumerating the hidden layers when they hold at most ``MAX_EXACT_UNITS``
units (Eq. 7-8 summed over every ``h``); else annealed importance sampling from the
prior with Pólya-Gamma augmented sweeps as transitions (:func:`._model.log_marginal_ais`);
or, with a trained recognition network, importance sampling with it as proposal
(Du et al. 2018, appendix B.1, :func:`._dsghmc.log_marginal_is`). Each route also
returns the Monte-Carlo standard error of every row (0 when exact).
"""

import numpy as np
import scipy.sparse as sp

from .._core.base import iter_minibatches
from .._core.exact import MAX_EXACT_UNITS
from .._core.random import as_generator, seed_for
from . import _gibbs, _model
from ._dsghmc import log_marginal_is

__all__ = ["call_seed", "log_marginal", "map_chunks"]


def log_marginal(params, X, seed, *, method=None, n_betas, n_runs, n_jobs=None,
                 recognition=None, n_is_samples=None):
    """``log p(x)`` of each row of ``X`` and its standard error.

    Parameters
    ----------
    params : SBNParams
    X : ndarray of shape (n, D)
    seed : numpy.random.SeedSequence
        The AIS chains' (or the proposals') randomness.
    method : {None, "ais", "is"}, default=None
        ``None``: exact when enumerable, else AIS.
    n_betas : int or callable
        AIS temperatures; a callable ``n_betas()`` is called only when AIS runs
        (``n_ais_betas="auto"`` is a costly search).
    n_runs : int
        AIS chains per row.
    n_jobs : int, optional
    recognition : RecognitionParams, optional
        The proposal of ``method="is"``.
    n_is_samples : int, optional
        Proposals per row for ``method="is"``.

    Returns
    -------
    log_px, std_err : ndarray of shape (n,)
    """
    if method == "is":
        return log_marginal_is(params, recognition, X, n_is_samples, as_generator(seed))
    if method is None and sum(map(len, params.biases[1:])) <= MAX_EXACT_UNITS:
        lp = _model.log_marginal_exact(params, X)
        return lp, np.zeros_like(lp)
    return _model.log_marginal_ais(params, X, n_betas=n_betas() if callable(n_betas) else n_betas,
                                   n_runs=n_runs, random_state=seed, n_jobs=n_jobs,
                                   transition=_gibbs.ais_transition_pg)


def call_seed(random_state, chunk=0):
    """The seed of one inference call (chunk ``chunk`` of its rows) from ``random_state``.

    The same int gives the same answer on every call; chunk 0 (a dense ``X``) uses
    ``random_state``'s own sequence, the further chunks of a CSR ``X`` children of
    it, so that each chunk's chains have their own streams.
    """
    ss = seed_for(random_state)
    if chunk == 0:
        return ss
    return np.random.SeedSequence(ss.entropy, spawn_key=tuple(ss.spawn_key) + (0xC5, chunk))


def map_chunks(X, func, batch_size):
    """``func(rows, chunk)`` over ``X``: whole when dense, else ``batch_size`` dense rows
    at a time (``chunk`` = 0, 1, ...), the outputs concatenated along the rows."""
    if not sp.issparse(X):
        return func(X, 0)
    return np.concatenate([func(X[sl].toarray(), k) for k, sl in
                           enumerate(iter_minibatches(X.shape[0], batch_size))])

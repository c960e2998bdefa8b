"""Posterior summaries every wing shares: feature moments, kept iterates, imputation.

Three pieces, none of which knows a model:

* :class:`Moments` pools draws (or exact conditional means) of a latent feature over
  sweeps and parameter samples into a mean and a standard deviation, the
  ``transform(X, return_std=True)`` of every estimator;
* :class:`IterateKeeper` keeps the last ``n`` parameter states of a training run
  (posterior samples for a posterior sampler, an iterate ensemble for a stochastic
  optimiser) at a bounded memory;
* :func:`check_missing` and :func:`rao_blackwell_chain` are the front and the loop
  of every ``impute``: validate the ``NaN`` pattern, then run a Gibbs chain over the
  missing entries and average their conditional means (Rao-Blackwellised) rather
  than the draws.
"""

from collections import deque

import numpy as np

__all__ = [
    "IterateKeeper",
    "Moments",
    "bernoulli_std",
    "check_missing",
    "check_n_sweeps",
    "impute_over_states",
    "rao_blackwell_chain",
]


class Moments:
    """Running mean and standard deviation of equally weighted arrays.

    ``add(x)`` takes one draw of the features (or an exact conditional mean,
    together with its conditional variance ``var``, so that the pooled variance is
    the law of total variance: the mean of the conditional variances plus the
    variance of the conditional means).

    The sums are accumulated around the first array added (a shifted data
    algorithm), which keeps the variance accurate when it is small compared with
    the square of the mean.
    """

    def __init__(self):
        self.n = 0
        self._shift = self._s1 = self._s2 = self._cv = None

    def add(self, x, var=None):
        x = np.asarray(x, dtype=np.float64)
        if self._shift is None:
            self._shift = x.copy()
            self._s1 = np.zeros_like(x)
            self._s2 = np.zeros_like(x)
            self._cv = np.zeros_like(x)
        d = x - self._shift
        self._s1 += d
        self._s2 += d * d
        if var is not None:
            self._cv += var
        self.n += 1
        return self

    def mean(self):
        if not self.n:
            raise ValueError("no draws were added")
        return self._shift + self._s1 / self.n

    def var(self):
        """Pooled variance (``ddof=0``): the variance of the mixture of the draws."""
        if not self.n:
            raise ValueError("no draws were added")
        m = self._s1 / self.n
        between = np.maximum(self._s2 / self.n - m * m, 0.0)
        return between + self._cv / self.n

    def std(self):
        return np.sqrt(self.var())


def bernoulli_std(p):
    """``sqrt(p (1 - p))``: the standard deviation of a binary unit with mean ``p``.

    For a binary unit averaged over parameter samples, ``p`` is the mixture's mean
    ``mean_s p_s``, and ``p (1 - p) = mean_s p_s (1 - p_s) + var_s p_s`` (the law of
    total variance): the within-sample Bernoulli spread plus the spread of the
    conditional means between samples.
    """
    p = np.asarray(p, dtype=np.float64)
    return np.sqrt(np.clip(p * (1.0 - p), 0.0, None))


class IterateKeeper:
    """The last ``n`` parameter states of a training run, thinned by the caller.

    ``n == 1`` stores nothing: :meth:`states` then returns the current parameters
    only, so an estimator that keeps one sample costs no memory beyond its model.
    States are copied when stored, so later in-place updates cannot alter them.
    ``set_size`` follows ``set_params(n_posterior_samples=...)`` between calls
    (the newest states are kept when shrinking).
    """

    def __init__(self, n):
        self.n = int(n)
        self._kept = deque(maxlen=self.n) if self.n > 1 else None

    def set_size(self, n):
        n = int(n)
        if n == self.n:
            return
        old = list(self._kept) if self._kept is not None else []
        self.n = n
        self._kept = deque(old, maxlen=n) if n > 1 else None

    def keep(self, state):
        """Store a copy of ``state`` (a tuple or list of arrays or of lists of arrays)."""
        if self._kept is None:
            return
        self._kept.append(_copy_state(state))

    def states(self, current):
        """The kept states, oldest first; ``[current]`` when nothing is kept."""
        if self._kept is None or not self._kept:
            return [current]
        return list(self._kept)

    def __len__(self):
        return 1 if self._kept is None else max(1, len(self._kept))


def _copy_state(state):
    if isinstance(state, np.ndarray):
        return state.copy()
    if isinstance(state, (list, tuple)):
        parts = [_copy_state(s) for s in state]
        return type(state)(*parts) if hasattr(state, "_fields") else type(state)(parts)
    return state


def check_missing(X, what="impute"):
    """The ``NaN`` mask of a dense ``X``, with a clear error for rows with nothing observed.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Already validated (finite apart from ``NaN``).
    what : str
        The caller, for the message.

    Returns
    -------
    missing : ndarray of bool, same shape as ``X``

    Raises
    ------
    ValueError
        If some row is entirely ``NaN``: its conditional distribution is the model's
        marginal, which :meth:`sample` draws; imputing it would silently return
        the same prior mean for every such row.
    """
    missing = np.isnan(X)
    empty = np.flatnonzero(missing.all(axis=1)) if X.shape[1] else np.zeros(0, int)
    if empty.size:
        raise ValueError(
            f"{what}: {empty.size} row(s) have no observed entry (all NaN), e.g. row "
            f"{int(empty[0])}; there is nothing to condition on. Drop those rows, or "
            f"draw from the model with sample().")
    return missing


def check_n_sweeps(n_sweeps):
    """``n_sweeps`` of ``impute`` as an int, or a ``ValueError`` (half are discarded: >= 2)."""
    import numbers
    if (not isinstance(n_sweeps, numbers.Integral) or isinstance(n_sweeps, bool)
            or n_sweeps < 2):
        raise ValueError(f"n_sweeps must be an int >= 2 (the first half are discarded), "
                         f"got {n_sweeps!r}")
    return int(n_sweeps)


def rao_blackwell_chain(step, state, n_sweeps, n_burn, *, rao_blackwell=True):
    """Run ``n_sweeps`` sweeps of ``step`` and average the kept ones.

    Parameters
    ----------
    step : callable
        ``step(state) -> (state, draw, cond_mean)``: one Gibbs sweep; ``draw`` is the
        new value of the imputed entries and ``cond_mean`` their conditional
        expectation given the rest of the state at the time they were drawn.
    state : object
        The chain's starting state.
    n_sweeps, n_burn : int
        Sweeps run and sweeps discarded at the start (``n_burn < n_sweeps``).
    rao_blackwell : bool, default=True
        Average ``cond_mean`` (the Rao-Blackwellised estimator of
        ``E[x_missing | x_observed]``, Gelfand and Smith 1990), or, with ``False``,
        the raw draws (kept for the tests that compare the two).

    Returns
    -------
    state : object
        The final state (chains can continue under the next parameter sample).
    total : ndarray
        The sum of the kept values; ``n_kept`` of them.
    n_kept : int
    """
    if not 0 <= n_burn < n_sweeps:
        raise ValueError(f"need 0 <= n_burn < n_sweeps, got n_burn={n_burn}, "
                         f"n_sweeps={n_sweeps}")
    total = None
    for t in range(n_sweeps):
        state, draw, cond = step(state)
        if t >= n_burn:
            v = cond if rao_blackwell else draw
            total = np.array(v, dtype=np.float64) if total is None else total + v
    return state, total, n_sweeps - n_burn


def impute_over_states(impute_one, states, X, missing):
    """``X`` with its missing entries replaced by ``E[x_miss | x_obs]`` averaged over states.

    The posterior-averaged imputation of every wing: one imputation chain per row
    is carried through the kept parameter states in turn (each state's run starts
    from the previous state's last sweep), and the per-state estimates are averaged.

    Parameters
    ----------
    impute_one : callable
        ``impute_one(params, chain) -> (chain, estimate)``: the wing's imputation
        under one parameter state, continuing ``chain`` (``None`` at first).
    states : sequence
        The kept parameter states, oldest first.
    X : ndarray of shape (n_samples, n_features)
        The data, meaningful where observed.
    missing : ndarray of bool, same shape

    Returns
    -------
    X_filled : ndarray of shape (n_samples, n_features), float64
    """
    total, chain = np.zeros(X.shape), None
    for params in states:
        chain, estimate = impute_one(params, chain)
        total += estimate
    return np.where(missing, total / len(states), X)

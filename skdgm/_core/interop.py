"""ArviZ's ``InferenceData`` from a fitted estimator: one builder, each wing its arrays.

Bayesian users read MCMC draws in ArviZ (trace plots, R-hat, ESS). Every estimator
keeps parameter states (``posterior_samples_``: posterior samples of the Gibbs and
SG-MCMC samplers, an iterate ensemble for the stochastic optimisers) and a
``history_`` of per-pass diagnostics; :class:`InferenceDataMixin` turns them into
what ``arviz_base.from_dict`` builds:

* ``posterior``: every kept state, dims ``(chain, draw, <named parameter dims>)``;
  the estimator is chain 0, and fitted copies passed as ``chains`` (e.g. the same
  model fitted from other seeds) are chains 1, 2, ...;
* ``sample_stats``: the numeric entries of ``history_``, one draw per pass (the
  latest passes common to all chains);
* ``log_likelihood``: ``log p(x_i | state)`` of every row of ``X`` under every
  kept state, where the wing can compute it exactly (``log_likelihood=True``);
* ``observed_data``: ``X`` itself, when given.

A wing supplies one hook, ``_inference_arrays(states, X)``: per kept state a dict
of named arrays, the dimension names of each, and, when ``X`` is given, the exact
``log p(x_i | state)`` (or a ``ValueError`` saying why it has none). ArviZ is
optional (``pip install "skdgm[arviz]"``); without it the method raises an
``ImportError`` naming that extra.
"""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

__all__ = ["ARVIZ_EXTRA", "InferenceDataMixin", "layer_draws", "network_draws",
           "require_arviz"]

#: The command that installs the optional ArviZ dependencies (named in the ImportError).
ARVIZ_EXTRA = 'pip install "skdgm[arviz]"'


def require_arviz():
    """``arviz_base``, or an ``ImportError`` that names the extra to install."""
    try:
        import arviz_base
    except ImportError as exc:
        raise ImportError(
            f"to_inference_data needs ArviZ's arviz-base, which is not installed; "
            f"install the optional extra with: {ARVIZ_EXTRA}") from exc
    return arviz_base


def layer_draws(prefix, arrays, dims):
    """``{prefix_l: array}`` and their dimension names for a list of per-layer arrays.

    Parameters
    ----------
    prefix : str
    arrays : list of ndarray
    dims : list of tuple of str
        The dimension names of each array (as many as its axes).

    Returns
    -------
    draws : dict of str to ndarray
    draw_dims : dict of str to list of str
    """
    names = [f"{prefix}_{l}" for l in range(len(arrays))]
    return (dict(zip(names, (np.asarray(a) for a in arrays))),
            {n: list(d) for n, d in zip(names, dims)})


def network_draws(states):
    """Named arrays of layered networks: ``weights_l``, ``biases_l`` (and ``lateral_l``).

    Parameters
    ----------
    states : list of (weights, biases) or (weights, biases, lateral)
        ``weights[l]`` of shape ``(n_l, n_{l+1})`` between layer ``l`` (0 the
        visible layer) and ``l + 1``; ``biases[l]`` of shape ``(n_l,)``;
        ``lateral[l]`` (optional, may be ``None``) of shape ``(n_l, n_l)``.

    Returns
    -------
    draws : list of dict
        One per state.
    dims : dict
        ``weights_l``: ``(layer_l, layer_{l+1})`` with layers named ``visible``,
        ``hidden_1``, ...; ``biases_l``: ``(layer_l,)``; ``lateral_l``:
        ``(layer_l, layer_l + "_parent")``.
    """
    draws, dims = [], {}
    for state in states:
        weights, biases = state[0], state[1]
        lateral = state[2] if len(state) > 2 else None
        layer = ["visible"] + [f"hidden_{l}" for l in range(1, len(biases))]
        d, dims_w = layer_draws("weights", weights,
                                [(layer[l], layer[l + 1]) for l in range(len(weights))])
        b, dims_b = layer_draws("biases", biases, [(layer[l],) for l in range(len(biases))])
        d.update(b)
        dims.update(dims_w, **dims_b)
        if lateral is not None:
            s, dims_s = layer_draws("lateral", lateral,
                                    [(layer[l], f"{layer[l]}_parent")
                                     for l in range(len(lateral))])
            d.update(s)
            dims.update(dims_s)
        draws.append(d)
    return draws, dims


def _history_stats(histories):
    """The numeric ``history_`` entries every chain has, over their latest common passes."""
    keys = set.intersection(*(set(h) for h in histories))
    out = {}
    for key in sorted(keys):
        series = [h[key] for h in histories]
        if not all(all(isinstance(v, (numbers.Real, np.number)) and not isinstance(v, bool)
                       for v in s) for s in series):
            continue
        n = min(len(s) for s in series)
        if n:
            out[key] = np.array([np.asarray(s[len(s) - n:], dtype=float) for s in series])
    # ArviZ needs one draw count per group: keep the entries of the modal length
    if out:
        lengths = [v.shape[1] for v in out.values()]
        common = max(set(lengths), key=lengths.count)
        out = {k: v for k, v in out.items() if v.shape[1] == common}
    return out


class InferenceDataMixin:
    """``to_inference_data`` for every estimator; the wing supplies the arrays.

    The hook ``_inference_arrays(states, X=None)`` (a staticmethod of the
    estimator, written in the wing's ``_posterior`` module) returns
    ``(draws, dims, loglik)``: one dict of named arrays per kept state (oldest
    first), the dimension names of each array, and ``None`` without ``X``, else
    ``log p(x_i | state)`` of shape ``(n_states, n_rows)``, or a ``ValueError``
    saying why it cannot be computed exactly.
    """

    _inference_arrays = None

    def _inference_input(self, X):
        """``X`` as dense float64, finite, with ``n_features_in_`` columns.

        The binary models (those with a ``binarize`` parameter) threshold it and
        check that it is 0/1, as their inference methods do.
        """
        binary = "binarize" in self.get_params(deep=False)
        X = self._validate_input(X, reset=False, dtype=np.float64, binary=binary,
                                 accept_sparse="csr")
        return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)

    def to_inference_data(self, X=None, *, log_likelihood=False, chains=()):
        """The kept parameter states and the training diagnostics as ArviZ data.

        Builds what ``arviz_base.from_dict`` builds (an ``xarray.DataTree``) from
        ``posterior_samples_`` and ``history_``, for trace plots,
        ``arviz_stats.rhat`` / ``ess`` and the rest of ArviZ. Needs the optional
        extra: ``pip install "skdgm[arviz]"``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), optional
            Stored as the ``observed_data`` group (dims ``row``, ``feature``),
            and scored by ``log_likelihood``.
        log_likelihood : bool, default=False
            Add a ``log_likelihood`` group: ``log p(x_i | state)`` for every row
            of ``X`` under every kept state (dims ``chain``, ``draw``, ``row``),
            where it is exact (models small enough to enumerate; see the user
            guide's ArviZ page). Raises a ``ValueError`` where it is not.
        chains : sequence of estimators, default=()
            More fitted estimators of the same class and sizes (e.g. the same
            settings with other ``random_state``), each keeping as many states:
            chains 1, 2, ... (this estimator is chain 0). R-hat needs at least 2.

        Returns
        -------
        idata : xarray.DataTree
            Groups ``posterior`` (dims ``chain``, ``draw`` and named parameter
            dims), ``sample_stats`` (``history_``'s numeric entries, one draw per
            training pass), and ``log_likelihood`` and ``observed_data`` when
            asked for.

        Raises
        ------
        ImportError
            Without arviz-base (the message names ``pip install "skdgm[arviz]"``).
        ValueError
            For ``chains`` that do not match this estimator, ``log_likelihood``
            without ``X`` or where it cannot be computed, or ``X`` of the wrong
            width.
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        az = require_arviz()
        check_is_fitted(self)
        ests = [self, *chains]
        for other in ests[1:]:
            if type(other) is not type(self):
                raise ValueError(f"chains must be fitted {type(self).__name__} estimators, "
                                 f"got {type(other).__name__}")
            check_is_fitted(other)
        if log_likelihood and X is None:
            raise ValueError("log_likelihood=True needs the rows X to score")
        if X is not None:
            X = self._inference_input(X)
        per_chain = [est._inference_arrays(est.posterior_samples_,
                                           X if log_likelihood else None) for est in ests]
        dims = per_chain[0][1]
        counts = [len(d) for d, _, _ in per_chain]
        if len(set(counts)) > 1:
            raise ValueError(f"every chain must keep as many states (n_posterior_samples); "
                             f"got {counts}")
        posterior = {}
        for name in dims:
            shapes = {d[name].shape for draws, _, _ in per_chain for d in draws}
            if len(shapes) > 1:
                raise ValueError(f"the chains' {name!r} differ in shape {sorted(shapes)}: "
                                 f"fit them with the same sizes")
            posterior[name] = np.array([[d[name] for d in draws] for draws, _, _ in per_chain],
                                       dtype=np.float64)
        groups = {"posterior": posterior}
        stats = _history_stats([getattr(est, "history_", {}) for est in ests])
        if stats:
            groups["sample_stats"] = stats
        all_dims = dict(dims)
        if X is not None:
            groups["observed_data"] = {"X": X}
            all_dims["X"] = ["row", "feature"]
        loglik = None
        if log_likelihood:
            loglik = np.array([ll for _, _, ll in per_chain], dtype=np.float64)
        out = az.from_dict(groups, dims=all_dims, name=type(self).__name__)
        if loglik is not None:
            # one value per row (a row is one multivariate observation), so the
            # group is built apart from observed_data's (row, feature) "X"
            import xarray as xr
            out["log_likelihood"] = xr.DataTree(az.dict_to_dataset(
                {"X": loglik}, dims={"X": ["row"]}))
        return out

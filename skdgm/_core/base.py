"""Estimator plumbing shared by the four wings.

Validation that names the problem, one verbose format, a ``history_`` of
per-iteration metrics, minibatch iteration, and the divergence guard. Only the
estimator modules import this; kernels never do.
"""

import inspect
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import DivergenceError

__all__ = [
    "BaseGenerativeModel",
    "binarize_input",
    "check_binary",
    "check_counts",
    "check_finite_params",
    "dense_rows",
    "float_dtype",
    "iter_minibatches",
    "map_row_chunks",
    "warn_unused_params",
]


def _values(X):
    return X.data if sp.issparse(X) else np.asarray(X)


def check_binary(X, *, allow_nan=False, what="this estimator", hint=None):
    """Raise a clear ``ValueError`` unless every entry of ``X`` is 0 or 1.

    ``allow_nan`` admits NaN as a missing-value marker (for imputation);
    ``hint`` replaces the default advice at the end of the message.
    """
    v = _values(X)
    ok = (v == 0) | (v == 1)
    if allow_nan:
        ok |= np.isnan(v)
    if not np.all(ok):
        bad = v[~ok]
        raise ValueError(
            f"{what} requires binary data (0/1); found {bad.size} other value(s), "
            f"e.g. {bad.ravel()[0]!r}. "
            + (hint or "Binarise first, e.g. with sklearn.preprocessing.Binarizer.")
        )
    return X


def binarize_input(X, threshold, *, allow_nan=False):
    """``1(X > threshold)`` in the dtype of ``X``, as :class:`sklearn.preprocessing.Binarizer`.

    The binary models take ``binarize=None|float``, the convention of
    :class:`sklearn.neural_network.BernoulliRBM` users (``BernoulliNB(binarize=...)``):
    with a float, continuous input is thresholded before the check for 0/1 data.

    Parameters
    ----------
    X : ndarray or CSR matrix of float
        Already validated (finite unless ``allow_nan``).
    threshold : float
        Entries strictly above it become 1, the others 0.
    allow_nan : bool, default=False
        Keep NaN entries as NaN (the missing-value marker of ``impute``) instead of
        mapping them to 0.

    Returns
    -------
    X_bin : ndarray or CSR matrix
        A new array or matrix; ``X`` is not modified.
    """
    if sp.issparse(X):
        if threshold < 0:
            # Every implicit zero would become a one: the result is dense.
            raise ValueError(
                f"binarize={threshold!r} is negative, which would turn every implicit "
                f"zero of the sparse input into a one; use binarize >= 0 with sparse X")
        X = X.copy()
        X.data = (X.data > threshold).astype(X.dtype)
        X.eliminate_zeros()
        return X
    out = (X > threshold).astype(X.dtype)
    if allow_nan:
        nan = np.isnan(X)
        if nan.any():
            out[nan] = np.nan
    return out


def float_dtype(X):
    """The dtype a transform should return for input ``X``: float32 stays float32.

    Everything else (float64, integers, booleans, lists, objects) gives float64,
    the dtype ``validate_data(dtype=(np.float64, np.float32))`` converts it to.
    """
    dtype = getattr(X, "dtype", None)
    if dtype is None and hasattr(X, "dtypes"):      # pandas DataFrame
        dtypes = set(X.dtypes)
        dtype = dtypes.pop() if len(dtypes) == 1 else None
    return np.dtype(np.float32) if dtype == np.float32 else np.dtype(np.float64)


def check_counts(X, *, what="this estimator", max_total=None, limit_name=None):
    """Raise a clear ``ValueError`` unless ``X`` holds finite non-negative integers.

    Parameters
    ----------
    X : ndarray or sparse matrix
    what : str
        The estimator's name, for the messages.
    max_total : int, optional
        The largest total count the caller's samplers can hold. Counts are
        non-negative, so bounding their sum bounds every entry and every partial
        sum (per document, per word, per topic) that an integer accumulator of
        the sampler can reach: e.g. ``2**63 - 1`` for int64 counters, beyond
        which they wrap to negative numbers. ``None`` checks nothing.
    limit_name : str, optional
        How the messages describe ``max_total`` (e.g. ``"2**63 - 1, the largest
        int64"``).
    """
    v = _values(X)
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{what} requires finite counts; the input contains NaN or inf")
    if np.any(v < 0):
        raise ValueError(f"{what} requires non-negative integer counts; found negative values")
    if np.issubdtype(v.dtype, np.floating) and np.any(v != np.floor(v)):
        raise ValueError(
            f"{what} requires non-negative integer counts; found non-integer values"
        )
    if max_total is not None and v.size:
        # Summed in float64: exact below 2**53, and within a relative 1e-15 of the
        # exact sum above, so only totals within that distance of the limit could
        # be misjudged.
        total = float(np.sum(v, dtype=np.float64))
        if total > max_total:  # Python compares float and int exactly
            name = f" ({limit_name})" if limit_name else ""
            big = float(np.max(v))
            detail = (f"one count is {big:.0f}" if big > max_total
                      else f"they sum to {total:.0f}")
            raise ValueError(
                f"{what} can only represent counts summing to at most {max_total}{name}; "
                f"{detail}. Larger counts would wrap around in the sampler's integers."
            )
    return X


def check_finite_params(params, where):
    """Raise :class:`skdgm.exceptions.DivergenceError` if any array is not finite.

    Estimators call this on the *candidate* parameters of an update before
    committing them, so a diverging run never leaves NaN parameters behind.
    """
    for name, value in params.items():
        arrays = value if isinstance(value, (list, tuple)) else [value]
        for a in arrays:
            if not np.all(np.isfinite(a)):
                raise DivergenceError(
                    f"{where}: parameter {name!r} became non-finite; the update was "
                    f"discarded and the last finite parameters kept. Lower the step "
                    f"size / learning rate or check the input scale."
                )


def iter_minibatches(n_samples, batch_size, rng=None):
    """Slices or index arrays covering ``range(n_samples)`` in minibatches.

    With ``rng`` the rows are shuffled first (one permutation per pass).
    """
    if n_samples == 0:
        return
    batch_size = max(1, min(int(batch_size), n_samples))
    order = rng.permutation(n_samples) if rng is not None else None
    for start in range(0, n_samples, batch_size):
        stop = min(start + batch_size, n_samples)
        yield slice(start, stop) if order is None else np.sort(order[start:stop])


def _is_default(value, default):
    if value is default:
        return True
    try:
        return bool(np.array_equal(np.asarray(value, dtype=object),
                                   np.asarray(default, dtype=object)))
    except (TypeError, ValueError):
        return False


def warn_unused_params(estimator, option_reads):
    """Warn about parameters set away from their default that the chosen option ignores.

    A grid search over a parameter the chosen option never reads is silently a
    no-op (e.g. ``learning_rate`` under Gibbs sampling); this names it instead.

    Parameters
    ----------
    estimator : BaseEstimator
    option_reads : dict
        ``{switch: {value: params}}``: for each switch parameter (e.g.
        ``"inference"``) and each of its values, the names of the parameters that
        value reads. Only parameters listed under some value of a switch are
        considered; those not listed under the estimator's current value, and
        set to anything but their ``__init__`` default, get a ``UserWarning``
        naming the parameter, the switch and the options that do read it.
    """
    defaults = {name: p.default for name, p in
                inspect.signature(type(estimator).__init__).parameters.items()}
    for switch, reads in option_reads.items():
        value = getattr(estimator, switch)
        used = set(reads.get(value, ()))
        for name in sorted(set().union(*map(set, reads.values())) - used):
            current = getattr(estimator, name)
            if _is_default(current, defaults.get(name, inspect.Parameter.empty)):
                continue
            readers = ", ".join(repr(v) for v, params in reads.items() if name in params)
            warnings.warn(
                f"{type(estimator).__name__}: {name}={current!r} has no effect with "
                f"{switch}={value!r}; it is only read when {switch} is one of "
                f"{readers}.", UserWarning, stacklevel=3)


def dense_rows(X, rows=slice(None)):
    """The rows ``rows`` of ``X`` as a dense ndarray.

    For a CSR ``X`` only those rows are densified, so that training on sparse
    input holds at most one dense minibatch at a time.
    """
    part = X[rows]
    return part.toarray() if sp.issparse(part) else part


def map_row_chunks(func, X, chunk_size):
    """``func`` over the rows of ``X``, densifying at most ``chunk_size`` rows at a time.

    A dense ``X`` is passed whole (one call, the results exactly those of
    ``func(X)``); a sparse one in consecutive chunks of rows, whose outputs (an
    array, or a list or tuple of arrays) are concatenated along the first axis.
    Only row-wise computations may be mapped this way.
    """
    if not sp.issparse(X):
        return func(X)
    outs = [func(X[sl].toarray()) for sl in iter_minibatches(X.shape[0], chunk_size)]
    if not outs:
        return func(np.zeros((0, X.shape[1]), dtype=X.dtype))
    if isinstance(outs[0], (list, tuple)):
        return type(outs[0])(np.concatenate(parts) for parts in zip(*outs))
    return np.concatenate(outs)


class BaseGenerativeModel(TransformerMixin, BaseEstimator):
    """Mixin of the plumbing every skdgm estimator shares.

    Subclasses define ``score_samples``; ``score`` is its mean. They record
    per-iteration metrics with :meth:`_log_iteration`, which also prints the one
    verbose format: ``[ClassName] Iteration 3, metric = ..., time = 0.42s``.
    """

    def _validate_input(self, X, *, reset, dtype=(np.float64, np.float32),
                        accept_sparse=False, ensure_all_finite=True, binary=False,
                        counts=False, allow_nan=False):
        """``validate_data`` plus the model's own checks, with messages that name the problem.

        With ``binary=True``, an estimator's ``binarize`` parameter (``None`` or a
        threshold) is applied after ``validate_data`` and before the 0/1 check.
        """
        if not reset:
            check_is_fitted(self)
        X = validate_data(
            self, X, reset=reset, dtype=dtype, accept_sparse=accept_sparse,
            ensure_all_finite="allow-nan" if allow_nan else ensure_all_finite,
        )
        if binary:
            threshold = getattr(self, "binarize", None)
            if threshold is not None:
                X = binarize_input(X, threshold, allow_nan=allow_nan)
            hint = None
            if "binarize" in self.get_params(deep=False):
                hint = ("Pass binarize=<threshold> (e.g. binarize=0.5) to threshold it, "
                        "or binarise first with sklearn.preprocessing.Binarizer.")
            check_binary(X, allow_nan=allow_nan, what=type(self).__name__, hint=hint)
        if counts:
            check_counts(X, what=type(self).__name__)
        return X

    def _check_partial_fit_features(self, X):
        """A clear error when the feature count changes between ``partial_fit`` calls."""
        n = X.shape[1]
        if hasattr(self, "n_features_in_") and n != self.n_features_in_:
            # Worded as scikit-learn words it, so its common checks recognise it.
            raise ValueError(
                f"X has {n} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input (the feature count changed "
                f"between partial_fit calls)"
            )

    def _start_history(self):
        self.history_ = {}
        self.n_iter_ = 0
        self._t_start = time.perf_counter()

    def _log_iteration(self, **metrics):
        """Append metrics to ``history_`` and print them when ``verbose``."""
        if not hasattr(self, "history_"):
            self._start_history()
        self.n_iter_ = getattr(self, "n_iter_", 0) + 1
        elapsed = time.perf_counter() - getattr(self, "_t_start", time.perf_counter())
        for k, v in metrics.items():
            self.history_.setdefault(k, []).append(v)
        self.history_.setdefault("time", []).append(elapsed)
        if getattr(self, "verbose", 0):
            parts = ", ".join(f"{k} = {_fmt(v)}" for k, v in metrics.items())
            sep = ", " if parts else ""
            print(f"[{type(self).__name__}] Iteration {self.n_iter_}{sep}{parts}, "
                  f"time = {elapsed:.2f}s", flush=True)

    def score(self, X, y=None):
        """Mean of :meth:`score_samples` over the rows of ``X`` (higher is better)."""
        return float(np.mean(self.score_samples(X)))


def _fmt(v):
    if isinstance(v, (float, np.floating)):
        return f"{v:.4f}" if abs(v) < 1e5 else f"{v:.4e}"
    return str(v)



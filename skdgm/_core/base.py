"""Estimator plumbing shared by the four wings.

Validation that names the problem, one verbose format, a ``history_`` of
per-iteration metrics, minibatch iteration, the divergence guard, and the
training contract every estimator keeps (see :class:`BaseGenerativeModel`).
The estimators import all of it; a few wing modules import only its small
array helpers (``check_finite_params``, ``dense_rows``, ``iter_minibatches``).
"""

import copy
import functools
import numbers
import inspect
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, validate_data

from ..exceptions import DivergenceError
from .blocks import BLOCKWISE_METHODS, blockwise
from .chains import chain_pool
# early stopping lives in .stopping (issue 25); re-exported for the wings
from .stopping import (EARLY_STOPPING_CONSTRAINTS, EARLY_STOPPING_READS,  # noqa: F401
                       EarlyStopping, fixed_reason, say_stopped)

__all__ = [
    "DIVERGENCE_BOUND",
    "DIVERGENCE_GROWTH",
    "N_JOBS_CONSTRAINT",
    "BaseGenerativeModel",
    "binarize_input",
    "binary_hint",
    "check_binary",
    "check_counts",
    "check_finite_params",
    "dense_rows",
    "float_dtype",
    "training_dtype",
    "working_dtype",
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


def binary_hint(estimator):
    """The advice ending a non-binary-data message: ``binarize`` when the estimator has it."""
    if "binarize" in estimator.get_params(deep=False):
        return ("Pass binarize=<threshold> (e.g. binarize=0.5) to threshold it, "
                "or binarise first with sklearn.preprocessing.Binarizer.")
    return None


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


def training_dtype(spec, X):
    """The dtype a model trains in: ``spec`` (``"float32"``, ``"float64"``), or for
    ``None`` the input's own (float32 stays float32, else float64, as
    :func:`float_dtype`).

    Estimators with a ``dtype`` hyper-parameter convert their training data to it
    once per ``fit`` call, so that the updates never convert minibatches and float64
    and float32 input give the same fit.
    """
    return float_dtype(X) if spec is None else np.dtype(spec)


def working_dtype(spec, X, fitted=None, *, training):
    """The dtype an estimator with a ``dtype`` hyper-parameter converts ``X`` to.

    A new model (``fitted=None``) trains in :func:`training_dtype`; a fitted model
    of dtype ``fitted`` keeps training in it, and answers inference in the wider of
    it and the input's dtype (float64 input to a float32 model is answered in
    float64, so the answer does not depend on how rows are chunked or ordered to
    float32 rounding).
    """
    if fitted is None:
        return training_dtype(spec, X)
    return np.dtype(fitted) if training else np.result_type(X.dtype, fitted)


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


#: Largest magnitude a parameter may reach, in the units of the data, before
#: training counts as diverged. A logit or weight of 1e8 saturates every sigmoid
#: (40 already does) and leaves a few doublings to overflow: finite parameters of
#: 1e301 came out of large step sizes, unflagged, before this bound existed.
DIVERGENCE_BOUND = 1e8


#: Runaway growth in a single update, relative to where the parameters were: an
#: update that moves an entry by more than this many times the larger of the
#: parameters' previous magnitude and their natural scale (``bound /
#: DIVERGENCE_BOUND``) counts as diverged. DBMCAST(learning_rate=1e6) moved its
#: weights by 1.15e5 times their magnitude in one update and ended at 2.3e6, far
#: from the absolute bound and unflagged; over learning rates 0.05 to 10 (200 times
#: the default) the largest ratio was 4.7, and 115 at 1e3. BayesianSBN's DSGHMC
#: steps: at most 5.6 up to learning rate 10 (1,000 times the default), 561 at 1e3
#: (benchmarks/results/topics_interop.txt). Both wings check every update with it.
DIVERGENCE_GROWTH = 100.0


#: ``n_jobs`` as joblib reads it: ``None``, a positive count, or ``-1, -2, ...``
#: (all CPUs, all but one, ...). 0 means nothing to joblib, and it raised only
#: once an input was large enough to be split, deep inside a training call.
N_JOBS_CONSTRAINT = [Interval(numbers.Integral, 1, None, closed="left"),
                     Interval(numbers.Integral, None, -1, closed="right"), None]


def check_finite_params(params, where, *, bound=None, previous=None):
    """Raise :class:`skdgm.exceptions.DivergenceError` if any array is not finite.

    Estimators call this on the *candidate* parameters of an update before
    committing them, so a diverging run never leaves NaN parameters behind.

    Parameters
    ----------
    params : dict of str to ndarray or list of ndarray
    where : str
        What was being done, for the message.
    bound : float, optional
        Runaway growth: an entry whose magnitude exceeds ``bound`` counts as
        diverged too (e.g. :data:`DIVERGENCE_BOUND` times the data's scale).
    previous : dict, optional
        The parameters before the update, in the layout of ``params``: an update
        whose largest change in an array exceeds :data:`DIVERGENCE_GROWTH` times
        the larger of that array's previous largest magnitude and the natural
        scale ``bound / DIVERGENCE_BOUND`` (1 without ``bound``) counts as
        diverged too. It catches a runaway step size long before the absolute
        ``bound``.
    """
    scale = 1.0 if bound is None else bound / DIVERGENCE_BOUND
    for name, value in params.items():
        arrays = value if isinstance(value, (list, tuple)) else [value]
        before = None
        if previous is not None and name in previous:
            before = previous[name]
            before = before if isinstance(before, (list, tuple)) else [before]
        for i, a in enumerate(arrays):
            a = np.asarray(a)
            if not a.size:
                continue
            # min and max propagate NaN and reach any infinity, in two passes
            # without a temporary array the size of the parameter
            big = max(abs(float(np.min(a))), abs(float(np.max(a))))
            if not np.isfinite(big):
                raise DivergenceError(
                    f"{where}: parameter {name!r} became non-finite; the update was "
                    f"discarded and the last finite parameters kept (a fit or "
                    f"partial_fit restores its state from before the call). Lower the "
                    f"step size / learning rate or check the input scale."
                )
            if bound is not None and big > bound:
                raise DivergenceError(
                    f"{where}: parameter {name!r} grew beyond {bound:.3g} in magnitude "
                    f"(max {big:.3g}), a runaway; the update was "
                    f"discarded and the last finite parameters kept (a fit or "
                    f"partial_fit restores its state from before the call). Lower the "
                    f"step size / learning rate or check the input scale."
                )
            if before is not None and a.size:
                b = np.asarray(before[i])
                # largest magnitudes from min and max: one temporary (the change)
                # instead of three, on every update of every wing
                ref = max(-float(np.min(b)), float(np.max(b)), scale)
                d = np.subtract(a, b)
                step = max(-float(np.min(d)), float(np.max(d)))
                if step > DIVERGENCE_GROWTH * ref:
                    raise DivergenceError(
                        f"{where}: parameter {name!r} moved by {step:.3g} in one update: "
                        f"it grew beyond {DIVERGENCE_GROWTH:g} times its previous "
                        f"magnitude ({ref:.3g}), a runaway; the update was discarded and "
                        f"the last parameters kept (a fit or partial_fit restores its state from "
                        f"before the call). Lower the step size / learning rate."
                    )


def iter_minibatches(n_samples, batch_size, rng=None):
    """Slices or index arrays covering ``range(n_samples)`` in minibatches.

    The rows are cut into ``ceil(n_samples / batch_size)`` minibatches whose sizes
    differ by at most one (as :func:`numpy.array_split`), none larger than
    ``batch_size``. A plain cut would leave a sliver at the end (201 rows in
    minibatches of 200: 200 and 1), and the stochastic-gradient samplers scale a
    minibatch's statistics by ``n_total / len(minibatch)``: one document standing
    for a whole corpus is an unbiased but wild step, which set DeepLDA's TLASGR
    back by hundreds of perplexity points when a stream came in chunks of 201
    documents (issue 15). With ``rng`` the rows are shuffled first (one
    permutation per pass).
    """
    if n_samples == 0:
        return
    batch_size = max(1, min(int(batch_size), n_samples))
    n_batches = -(-n_samples // batch_size)
    size, extra = divmod(n_samples, n_batches)
    order = rng.permutation(n_samples) if rng is not None else None
    start = 0
    for i in range(n_batches):
        stop = start + size + (i < extra)
        yield slice(start, stop) if order is None else np.sort(order[start:stop])
        start = stop


# Estimators inside a contract call (by id): a fit that calls partial_fit, or a
# subclass's fit that calls super().fit, is one call, snapshotted once.
_IN_CALL = set()


def _contract(method):
    """Wrap ``fit`` / ``partial_fit`` in the training contract (see the class docstring)."""
    validated = _fit_context(prefer_skip_nested_validation=True)(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        key = id(self)
        if key in _IN_CALL:
            return method(self, *args, **kwargs)
        saved = self.__dict__.copy()
        # The call works on a deep copy of the fitted state and the original
        # objects are put back untouched on failure, so that a failed call is
        # invisible, even to references held from outside. The constructor's
        # parameters are shared, not copied (a Generator given as random_state
        # stays the user's object).
        names = set(self._get_param_names())     # (an inspect.signature per call)
        memo = {id(v): v for k, v in saved.items() if k in names}
        work = copy.deepcopy(saved, memo)
        self.__dict__.clear()
        self.__dict__.update(work)
        _IN_CALL.add(key)
        try:
            # _fit_context validates a partial_fit only on its first call;
            # set_params between calls must be validated too.
            if method.__name__ == "partial_fit":
                self._validate_params()
            self._validate_nested_params()
            # once per call: a parameter the chosen option never reads makes a grid
            # search over it a silent no-op
            warn_unused_params(self, self._option_reads)
            # one set of workers for every run_chains call of this fit
            with chain_pool(getattr(self, "n_jobs", None)):
                out = validated(self, *args, **kwargs)
            self._check_divergence()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        finally:
            _IN_CALL.discard(key)
        return out

    wrapper._skdgm_contract = True
    return wrapper


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


#: Entries per key that ``history_`` keeps (the latest); estimators document it.
HISTORY_CAP = 10_000

class BaseGenerativeModel(TransformerMixin, BaseEstimator):
    """Mixin of the plumbing every skdgm estimator shares, and the training contract.

    Subclasses define ``score_samples``; ``score`` is its mean. They record
    per-iteration metrics with :meth:`_log_iteration`, which also prints the one
    verbose format: ``[ClassName] Iteration 3, metric = ..., time = 0.42s``.

    Every ``fit`` and ``partial_fit`` a subclass defines is wrapped, once, here:

    * **Validation.** ``_parameter_constraints`` through scikit-learn's
      ``_fit_context`` (on every ``partial_fit`` call, not only the first), then
      the elements of sequence parameters (``_element_constraints``, e.g. every
      hidden-layer size a positive int) and the entries of dict parameters
      (``_entry_constraints``, e.g. ``prior_params["bias_var"] > 0``), with a
      ``ValueError`` that names the element or key. A parameter set away from its
      default that the chosen option does not read (``_option_reads``) gets a
      ``UserWarning`` (:func:`warn_unused_params`).
    * **Atomic failure.** The call runs on a deep copy of the estimator's state;
      on any exception (bad input, bad parameters, divergence, interruption) the
      original state is put back, so an unfitted estimator stays unfitted and a
      fitted one keeps its model, bit for bit.
    * **Divergence.** After the call, :meth:`_divergence_params` is checked for
      non-finite entries and for runaway growth beyond
      :data:`DIVERGENCE_BOUND` times the data's scale; either raises
      :class:`skdgm.exceptions.DivergenceError`, and the state from before the
      call (the last finite parameters) is restored. Estimators also run the
      check on every update, so that a diverging fit stops early.
    """

    #: scikit-learn's ``{param: constraints}`` (subclasses list theirs).
    _parameter_constraints = {}
    #: ``{param: constraints}`` checked on every element of a sequence value.
    _element_constraints = {}
    #: ``{param: {key: constraints}}`` checked on every entry of a dict value.
    _entry_constraints = {}
    #: ``{switch: {value: params read}}`` for :func:`warn_unused_params`, once per call.
    _option_reads = {}

    def __setstate__(self, state):
        # A model pickled before one of its hyper-parameters existed (a paper run's
        # checkpoint) loads with that parameter at its default: get_params,
        # set_params and the next fit all need every constructor parameter.
        super().__setstate__(state)
        for name, p in inspect.signature(type(self).__init__).parameters.items():
            if p.default is not p.empty and name not in self.__dict__:
                setattr(self, name, p.default)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("fit", "partial_fit"):
            attr = cls.__dict__.get(name)
            if attr is None:
                continue
            if callable(attr) and not getattr(attr, "_skdgm_contract", False):
                setattr(cls, name, _contract(attr))
            elif hasattr(attr, "fn") and not getattr(attr.fn, "_skdgm_contract", False):
                attr.fn = _contract(attr.fn)  # sklearn's available_if descriptor
        # inference on a row-chunked dask array, block by block (issue 28)
        for name in BLOCKWISE_METHODS:
            attr = cls.__dict__.get(name)
            if callable(attr) and not getattr(attr, "_skdgm_blockwise", False):
                setattr(cls, name, blockwise(attr))

    def _score_block(self, X, **kwargs):
        """``(numerator, denominator)`` of :meth:`score` on the rows ``X``, which add
        over blocks of rows (a dask array's ``score``): by default the sum of
        :meth:`score_samples` and the row count, ``score`` being their mean."""
        lp = self.score_samples(X, **kwargs)
        return float(np.sum(lp)), float(len(lp))

    # ------------------------------------------------------------ the skeleton
    # ``fit`` and ``partial_fit`` are written once, here; estimators supply the
    # hooks below. A pass (``_pass``) is the unit of both: ``fit`` resets and runs
    # ``n_iter`` of them, ``partial_fit`` continues with one (estimators whose
    # fit passes differ from a single update, e.g. minibatches of a large input
    # against one update per stream minibatch, override ``_fit_pass`` or
    # ``_partial_step``). Subclasses may override ``fit`` / ``partial_fit`` for
    # their docstrings and call ``super()``: the contract is applied once.

    def fit(self, X, y=None):
        """Reset, then ``n_iter`` passes of the minibatch steps ``partial_fit`` runs.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        self
        """
        X = self._validate_training_data(X, reset=True)
        stopper = self._stopper(X)
        self.__dict__.pop("stopping_reason_", None)     # a reason of an earlier fit
        if stopper is not None:
            X = stopper.training_rows(X)
        ctx = self._initialize(X, fit=True)
        # _n_passes is the cap; a stopper (n_iter="auto", early_stopping) ends sooner
        for _ in range(self._n_passes()):
            self._fit_pass(X, ctx)
            if stopper is not None and stopper.after_pass(self, ctx):
                break
        if stopper is not None:
            stopper.finish(self)
        else:
            say_stopped(self, fixed_reason(self))
        self._end_call(ctx)
        return self

    def partial_fit(self, X, y=None):
        """Continue training on ``X`` (the first call initialises the model).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : Ignored

        Returns
        -------
        self
        """
        first = not self._is_initialized()
        X = self._validate_training_data(X, reset=first)
        ctx = self._initialize(X, fit=False) if first else self._resume(X)
        self._partial_step(X, ctx)
        self._end_call(ctx)
        return self

    def _stopper(self, X):
        """What ends ``fit`` before ``_n_passes()``: a :mod:`skdgm._core.stopping` stopper or ``None``.

        Default: :class:`~skdgm._core.stopping.EarlyStopping` when the estimator's
        early-stopping parameters ask for it on ``X``; ``_early_stop_on`` records
        whether they did, for the ``n_iter="auto"`` cap of ``_initialize``.
        """
        stopper = EarlyStopping.from_estimator(self, X)
        self._early_stop_on = stopper is not None
        return stopper

    def _validation_score(self, X_val):
        """Held-out figure that early stopping maximises (default: :meth:`score`).

        Estimators whose exact score is costly (an AIS ``log Z`` per pass) override
        it with a cheaper estimate that is comparable from pass to pass.
        """
        return self.score(X_val)

    def _early_stopping_state(self):
        """The fitted state that early stopping keeps for its best pass (default: all)."""
        params = set(self._get_param_names())
        return {k: v for k, v in self.__dict__.items() if k not in params}

    def _validate_training_data(self, X, *, reset):
        """The training input, validated (``reset=True`` records its features)."""
        return self._validate_input(X, reset=reset)

    def _is_initialized(self):
        """Whether a model exists for ``partial_fit`` to continue."""
        return hasattr(self, "n_features_in_")

    def _initialize(self, X, *, fit):
        """Fresh parameters, random streams and history; returns the call's context.

        ``fit=False`` for a first ``partial_fit`` (no pre-training, no schedule over
        a known number of updates).
        """
        raise NotImplementedError

    def _resume(self, X):
        """A later ``partial_fit`` call: new streams, current hyper-parameters."""
        raise NotImplementedError

    def _n_passes(self):
        return self.n_iter

    def _pass(self, X, ctx):
        """One pass of minibatch updates over ``X``."""
        raise NotImplementedError

    def _fit_pass(self, X, ctx):
        self._pass(X, ctx)

    def _partial_step(self, X, ctx):
        self._pass(X, ctx)

    def _end_call(self, ctx):
        """Work once per call after the updates (e.g. a log Z estimate)."""

    def _validate_nested_params(self):
        """Elements of sequence parameters and entries of dict parameters."""
        caller = type(self).__name__

        def check(label, constraints, v):
            # bool is an Integral to Python (and to sklearn's Interval): (3, True)
            # would silently be a layer of one unit.
            if isinstance(v, (bool, np.bool_)):
                raise ValueError(f"The {label!r} parameter of {caller} must be a number, "
                                 f"not a bool. Got {v!r} instead.")
            validate_parameter_constraints({label: constraints}, {label: v},
                                           caller_name=caller)

        for name, constraints in self._element_constraints.items():
            value = getattr(self, name)
            if value is None or isinstance(value, (numbers.Number, str)):
                continue   # scalars are the top-level constraints' business
            for i, v in enumerate(np.asarray(value, dtype=object).ravel()):
                check(f"{name}[{i}]", constraints, v)
        for name, entries in self._entry_constraints.items():
            value = getattr(self, name)
            if not value:
                continue
            unknown = sorted(set(value) - set(entries))
            if unknown:
                raise ValueError(f"unknown {name} {unknown} for {caller}; known: "
                                 f"{sorted(entries)}")
            for key, v in value.items():
                check(f"{name}[{key!r}]", entries[key], v)

    def _divergence_params(self):
        """``(params, bound)``: the fitted parameters the divergence check covers.

        ``params`` maps names to arrays (or lists of arrays); ``bound`` is the
        largest magnitude allowed, or ``None`` for the non-finite check only.
        """
        return {}, None

    def _check_divergence(self):
        params, bound = self._divergence_params()
        check_finite_params(params, type(self).__name__, bound=bound)

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
            check_binary(X, allow_nan=allow_nan, what=type(self).__name__,
                         hint=binary_hint(self))
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
        # an endless stream of partial_fit calls must run in constant memory
        for values in self.history_.values():
            del values[:-HISTORY_CAP]
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
        # four decimals would print a small rate (DSGHMC's step size, lr / N) as 0.0000
        if 0 < abs(v) < 1e-3:
            return f"{v:.3g}"
        return f"{v:.4f}" if abs(v) < 1e5 else f"{v:.4e}"
    return str(v)


BaseGenerativeModel.fit = _contract(BaseGenerativeModel.fit)
BaseGenerativeModel.partial_fit = _contract(BaseGenerativeModel.partial_fit)

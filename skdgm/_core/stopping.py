"""When ``n_iter="auto"`` training stops: one plateau rule every wing uses (issue 25).

A fit-quality figure (higher is better) is read after every pass. The figure has
*plateaued* when ``n_iter_no_change`` passes in a row have not raised it by more
than a relative ``tol`` over the best value so far::

    improved  <=>  score > best + tol * |best|

Two stoppers apply the rule, and the training skeleton
(:class:`skdgm._core.base.BaseGenerativeModel.fit`) drives either through the same
three calls (``training_rows``, ``after_pass``, ``finish``), capped by the wing's
maximum number of passes (``_n_passes``):

* :class:`EarlyStopping` -- optimisers (GaussianBernoulliRBM, DBMCAST): a held-out
  slice of the rows is scored after each pass; training stops at the plateau and the
  parameters of the best pass are kept (as scikit-learn's ``MLPClassifier``). With
  ``early_stopping="auto"`` it is on exactly when ``n_iter="auto"`` and the data have
  at least :data:`AUTO_VALIDATION_MIN_ROWS` rows.
* :class:`BurnInStop` -- posterior samplers (BayesianSBN, DeepLDA): the plateau
  ends *burn-in* (never before ``min_burn`` passes, at the latest after
  ``max_burn``), then a collection phase whose length the wing sets from the burn-in
  (``collect(burn_in)`` passes) gathers the posterior samples and training ends.
  The figure is a held-out slice's score when the wing supplies one (``X_val``),
  else a training figure of the pass just made.

Both print one verbose line when they stop, e.g. ``[DBMCAST] stopped: no improvement
> tol=0.0001 (relative) for 10 passes``, and record why in ``stopping_reason_``.
"""

import copy
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

__all__ = ["AUTO_VALIDATION_MIN_ROWS", "BurnInStop", "EARLY_STOPPING_CONSTRAINTS",
           "EARLY_STOPPING_READS", "EarlyStopping", "Plateau", "held_out_split"]

#: ``early_stopping="auto"`` holds out a validation slice only from this many rows
#: on: below it (e.g. the 1,797 digits) every row is worth more as training data, and
#: the wing's fixed ``"auto"`` pass count (tuned there, issue 13) applies.
AUTO_VALIDATION_MIN_ROWS = 5000

#: The constraints of the early-stopping parameters, shared by all estimators.
EARLY_STOPPING_CONSTRAINTS = {
    "early_stopping": ["boolean", StrOptions({"auto"})],
    "validation_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
    "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left")],
    "tol": [Interval(numbers.Real, 0, None, closed="left")],
}

_ES_PARAMS = {"validation_fraction", "n_iter_no_change", "tol"}
#: ``_option_reads`` entry: the early-stopping parameters are read only when it may be on.
EARLY_STOPPING_READS = {"early_stopping": {True: _ES_PARAMS, "auto": _ES_PARAMS,
                                           False: set()}}


class Plateau:
    """The plateau rule: no relative improvement above ``tol`` for ``patience`` updates.

    Parameters
    ----------
    tol : float
        Relative improvement over the best figure so far that counts as progress.
    patience : int
        Updates without progress after which :meth:`update` returns ``True``.
    """

    def __init__(self, tol, patience):
        self.tol, self.patience = float(tol), int(patience)
        self.best, self.best_pass, self.stale, self.scores = -np.inf, 0, 0, []

    def update(self, score):
        """Record ``score`` (higher is better); ``True`` once the figure has plateaued."""
        score = float(score)
        self.scores.append(score)
        if not np.isfinite(self.best) or score > self.best + self.tol * abs(self.best):
            self.stale = 0
        else:
            self.stale += 1
        if score > self.best:
            self.best, self.best_pass = score, len(self.scores)
        return self.stale >= self.patience

    def reason(self):
        return (f"no improvement > tol={self.tol:g} (relative) for {self.patience} "
                f"passes")


def held_out_split(n, n_val, random_state, *, key=0xE5):
    """``(val, train)``: sorted row indices, ``n_val`` of ``n`` held out.

    The permutation comes from ``random_state``'s stream ``key`` (an int or a
    ``SeedSequence`` gives the same split every time), apart from the training streams.
    """
    from .random import as_generator, seed_for

    perm = as_generator(seed_for(random_state, key)).permutation(n)
    return np.sort(perm[:n_val]), np.sort(perm[n_val:])


def _say(est, message):
    est.stopping_reason_ = message
    if getattr(est, "verbose", 0):
        print(f"[{type(est).__name__}] stopped: {message}", flush=True)


def _checked(est, score, what):
    score = float(score)
    if not np.isfinite(score):
        raise FloatingPointError(f"{type(est).__name__}: the {what} is {score}")
    return score


def early_stopping_on(est, n_rows):
    """Whether ``est.early_stopping`` (``True``, ``False`` or ``"auto"``) holds out rows."""
    mode = getattr(est, "early_stopping", False)
    if isinstance(mode, str):     # "auto": by itself under n_iter="auto" on large data
        return est.n_iter == "auto" and n_rows >= AUTO_VALIDATION_MIN_ROWS
    return bool(mode)


class EarlyStopping:
    """sklearn-style early stopping over the passes of ``fit`` (one per fit call).

    The held-out rows are chosen from the estimator's ``random_state`` (an int or
    a ``SeedSequence`` gives the same split every time) and never trained on. The
    figure is ``est._validation_score(X_val)``; the stop is :class:`Plateau`'s.
    """

    def __init__(self, X_val, rows, *, tol, patience):
        self.X_val, self.rows = X_val, rows
        self.plateau = Plateau(tol, patience)
        self.best_state, self.reason = None, None

    # read by tests and by the restore step
    @property
    def scores(self):
        return self.plateau.scores

    @property
    def best(self):
        return self.plateau.best

    @property
    def best_pass(self):
        return self.plateau.best_pass

    @classmethod
    def from_estimator(cls, est, X):
        """The stopper ``est``'s early-stopping parameters ask for on ``X``, or ``None``.

        A dask array's rows stay on its workers (:mod:`skdgm._core.blocks`): no
        validation slice is gathered, ``"auto"`` stays off (``n_iter="auto"`` then
        runs its fixed rule) and ``early_stopping=True`` is refused.
        """
        from .blocks import RowBlocks

        n = X.shape[0]
        if isinstance(X, RowBlocks):
            if getattr(est, "early_stopping", False) is True:
                raise ValueError(
                    f"{type(est).__name__}(early_stopping=True) holds out a validation "
                    f"slice on the client, which a dask array's fit never gathers; use "
                    f"early_stopping=False (or 'auto') with a dask array, or fit "
                    f"in memory")
            return None
        if not early_stopping_on(est, n):
            return None
        n_val = int(np.ceil(est.validation_fraction * n))
        if n < 2 or n_val >= n:
            raise ValueError(
                f"early_stopping needs at least one training and one validation row: "
                f"validation_fraction={est.validation_fraction} of {n} rows leaves "
                f"{n - n_val} for training")
        val, train = held_out_split(n, n_val, est.random_state)
        return cls(X[val], train, tol=est.tol, patience=est.n_iter_no_change)

    def training_rows(self, X):
        return X[self.rows]

    def after_pass(self, est, ctx=None):
        """Score the held-out rows; ``True`` when training should stop."""
        score = _checked(est, est._validation_score(self.X_val),
                         "validation score (early_stopping)")
        done = self.plateau.update(score)
        est.history_.setdefault("validation_score", []).append(score)
        if self.plateau.best_pass == len(self.plateau.scores):
            self.best_state = copy.deepcopy(est._early_stopping_state())
        if getattr(est, "verbose", 0):
            print(f"[{type(est).__name__}] validation_score = {score:.4f} "
                  f"(best {self.best:.4f} at pass {self.best_pass})", flush=True)
        if done:
            self.reason = self.plateau.reason()
            _say(est, self.reason)
        return done

    def finish(self, est):
        """Keep the best pass's parameters; the history and scores stay complete."""
        history, n_iter = est.history_, est.n_iter_
        if self.best_state is not None and self.best_pass < len(self.scores):
            est.__dict__.update(self.best_state)
        est.history_ = history
        est.n_iter_ = n_iter
        if self.reason is None:
            _say(est, f"the cap of {n_iter} passes")
        else:
            est.stopping_reason_ = self.reason
        est.validation_scores_ = list(self.scores)
        est.best_validation_score_ = self.best
        est.best_iter_ = self.best_pass

    restore_best = finish


class BurnInStop:
    """A posterior sampler's ``"auto"`` run: burn-in until the plateau, then collection.

    Parameters
    ----------
    tol, patience : float, int
        The :class:`Plateau` rule.
    min_burn, max_burn : int
        Burn-in passes: the plateau is only tested from ``min_burn`` passes on,
        and burn-in ends after ``max_burn`` passes at the latest.
    collect : callable
        ``collect(burn_in)``: passes of the collection phase after a burn-in of
        ``burn_in`` passes (0 ends training with the burn-in).
    X_val, rows : array and index array, optional
        A held-out slice scored by ``est._validation_score`` after every pass, and
        the rows trained on; without them the figure is ``figure(est)``.
    figure : callable, optional
        ``figure(est)``: the training figure (higher is better) of the pass just
        made, read when no slice is held out.

    The estimator's ``_end_burn_in(ctx, burn_in)``, if it has one, is called once
    when burn-in ends.
    """

    def __init__(self, *, tol, patience, min_burn, max_burn, collect, X_val=None,
                 rows=None, figure=None):
        self.plateau = Plateau(tol, patience)
        self.min_burn, self.max_burn = int(min_burn), max(int(min_burn), int(max_burn))
        self.collect = collect
        self.X_val, self.rows, self.figure = X_val, rows, figure
        self.passes, self.burn_in, self.stop_at = 0, None, None

    def training_rows(self, X):
        return X if self.rows is None else X[self.rows]

    def max_passes(self):
        """The most passes this run can make (``max_burn`` plus its collection)."""
        return self.max_burn + int(self.collect(self.max_burn))

    def after_pass(self, est, ctx=None):
        """Read the figure after a pass; ``True`` when training should stop."""
        self.passes += 1
        if self.burn_in is None:
            if self.X_val is not None:
                score = _checked(est, est._validation_score(self.X_val), "validation score")
                est.history_.setdefault("validation_score", []).append(score)
                if getattr(est, "verbose", 0):
                    print(f"[{type(est).__name__}] validation_score = {score:.4f}",
                          flush=True)
            else:
                score = _checked(est, self.figure(est), "training figure")
            flat = self.plateau.update(score)
            if (flat and self.passes >= self.min_burn) or self.passes >= self.max_burn:
                self.burn_in = self.passes
                self.stop_at = self.passes + int(self.collect(self.passes))
                hook = getattr(est, "_end_burn_in", None)
                if hook is not None:
                    hook(ctx, self.burn_in)
                why = (self.plateau.reason() if flat else
                       f"the cap of {self.max_burn} burn-in passes")
                self.message = (f"burn-in ended after {self.burn_in} passes ({why}); "
                                f"{self.stop_at - self.burn_in} collection passes")
                if getattr(est, "verbose", 0):
                    print(f"[{type(est).__name__}] {self.message}", flush=True)
        return self.stop_at is not None and self.passes >= self.stop_at

    def finish(self, est):
        if self.burn_in is None:       # the loop's bound came first (not expected)
            _say(est, f"the cap of {self.passes} passes, still in burn-in")
        else:
            _say(est, self.message)
        if self.X_val is not None:
            est.validation_scores_ = list(self.plateau.scores)

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
  slice of the rows is scored after each pass; training stops when the figure has
  converged and the parameters of the best pass are kept (as scikit-learn's
  ``MLPClassifier``). With ``early_stopping="auto"`` it is on exactly when
  ``n_iter="auto"`` and the data have at least :data:`AUTO_VALIDATION_MIN_ROWS` rows.
  Under ``n_iter="auto"`` the test is :class:`Trend` (the least-squares trend of the
  held-out figure, which stays honest when the figure is noisy); with an integer
  ``n_iter`` and ``early_stopping=True`` it is the plateau rule above.
* :class:`BurnInStop` -- posterior samplers (BayesianSBN, DeepLDA): the plateau
  ends *burn-in* (never before ``min_burn`` passes, at the latest after
  ``max_burn``), then a collection phase whose length the wing sets from the burn-in
  (``collect(burn_in)`` passes) gathers the posterior samples and training ends.
  The figure is a held-out slice's score when the wing supplies one (``X_val``),
  else a training figure of the pass just made.

Both print one verbose line when they stop, e.g. ``[DBMCAST] stopped: no improvement
> tol=0.0001 (relative) for 10 passes``, and record why in ``stopping_reason_``; a
fit that no rule watched records that too (:func:`fixed_reason`, e.g. ``fixed
n_iter=12``), and one that ran to its cap says so (``reached the cap of 135 passes
while still improving``; :class:`EarlyStopping` then also warns with a
``ConvergenceWarning``, as scikit-learn's ``MLPClassifier`` does at ``max_iter``).
"""

import copy
import numbers
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from .blocks import RowBlocks, RowView

__all__ = ["AUTO_CAP_FLOOR_MIN_ROWS", "AUTO_CAP_SLACK", "AUTO_VALIDATION_MIN_ROWS", "BurnInStop",
           "EARLY_STOPPING_CONSTRAINTS", "EARLY_STOPPING_READS", "EarlyStopping", "Plateau",
           "SIGNIFICANT_Z", "TREND_Z", "Trend", "auto_cap", "auto_passes", "fixed_reason",
           "held_out_rows", "held_out_split", "say_stopped", "training_subset",
           "update_budget", "updates_per_pass"]

#: ``early_stopping="auto"`` holds out a validation slice only from this many rows
#: on: below it (e.g. the 1,797 digits) every row is worth more as training data, and
#: the wing's fixed ``"auto"`` pass count (tuned there, issue 13) applies.
AUTO_VALIDATION_MIN_ROWS = 5000

#: How far :func:`auto_cap` lets the cap's updates exceed ``factor * n_updates``. A
#: fixed rule of whole passes rounds its updates up by up to one pass: by 1 % for the
#: DBM (27 passes of 90 minibatches for 2,400 updates) and 8 % for the GRBM (12 of 90
#: for 1,000) on 10,000 MNIST rows, where their caps (162 and 72 passes) were
#: measured, and they keep them. Where a few passes hold the fixed rule's updates
#: and rounding up adds more (on MNIST from about 15,000 rows for the GRBM, 40,000
#: for the DBM), the cap counts updates instead (issue 25).
AUTO_CAP_SLACK = 0.1


def auto_passes(n_samples, batch_size, n_updates, min_passes=1):
    """Passes over ``n_samples`` rows in minibatches of ``batch_size`` giving ``n_updates``.

    At least ``min_passes``; a pass is ``ceil(n_samples / batch_size)`` updates.
    The fixed part of the GRBM's and the DBM's ``n_iter="auto"`` rules.
    """
    return max(int(min_passes), -(-int(n_updates) // updates_per_pass(n_samples, batch_size)))


def updates_per_pass(n_samples, batch_size):
    """The minibatch updates of one pass over ``n_samples`` rows (at least one):
    ``ceil(n_samples / batch_size)``, the cut of :func:`skdgm._core.base.iter_minibatches`."""
    return max(1, -(-int(n_samples) // max(1, int(batch_size))))


#: :func:`auto_cap`'s large-data floor applies only above this many training rows.
#: At and below it the caps were measured and are kept as they were (72 GRBM and 216
#: DBM passes on the 9,000 training rows of 10,000 MNIST rows, the committed 1k/10k
#: lines and the digits targets): every fit on at most 10,000 rows resolves the
#: passes it resolved before the floor (issue 25).
AUTO_CAP_FLOOR_MIN_ROWS = 10_000


def auto_cap(n_samples, batch_size, n_updates, *, min_passes=1, factor=1,
             floor_passes=0, floor_factor=0):
    """Passes of ``n_iter="auto"``: the fixed rule, or with early stopping its cap.

    ``factor=1`` is the fixed rule, :func:`auto_passes`. With early stopping on the
    wing passes ``factor > 1`` and the result is the cap of a run that the held-out
    trend ends sooner: ``factor`` times the fixed rule's passes, but no more passes
    than hold ``(1 + AUTO_CAP_SLACK) * factor * n_updates`` minibatch updates (and
    never fewer than the fixed rule). The cap is thus a number of *updates*, and its
    cost levels off with the rows instead of growing with them: on large data the
    fixed rule is one or two whole passes (its floor ``min_passes``, or the rounding
    up of a fraction of a pass), and ``factor`` times that would grow with every row
    added.

    That update count alone is too few on large data, where more rows carry a
    better model and the model keeps improving for longer: the GRBM's cap of 12
    passes on 60,000 MNIST rows stopped 81 nats short of a run the held-out figure
    ended after 44. So above :data:`AUTO_CAP_FLOOR_MIN_ROWS` training rows the cap
    is at least a *floor*: ``floor_passes`` passes, but no more passes than hold
    ``(1 + AUTO_CAP_SLACK) * floor_factor * n_updates`` updates. Where a pass is
    small the floor is ``floor_passes`` passes, and where it is large it is that
    update count, so the cap's cost still levels off with the rows, at a level
    sized for large data (for the GRBM, from its 60,000-row runs, 48 passes or 24
    times its fixed rule's updates: 48 passes, 25,920 updates, on 60,000 MNIST
    rows, the one size measured; 30 passes, 27,000 updates, on 100,000; 3 passes
    on a million). ``floor_passes=0``
    (the default) is no floor; the GRBM uses one
    (``skdgm.grbm._defaults.AUTO_CAP_FLOOR_PASSES``), which waited until its held-out
    figure's ``log Z`` annealed long enough on large data to rank the passes.

    The fixed rule's ``min_passes`` stays a lower bound: where ``min_passes`` whole
    passes hold more updates than the cap (DBMCAST's 5 passes above about 470,000
    rows), the cap is those passes and its cost grows with the rows again.

    Examples
    --------
    >>> from skdgm._core.stopping import auto_cap
    >>> auto_cap(9000, 100, 1000, min_passes=2, factor=6)    # 90 updates a pass
    72
    >>> auto_cap(90_000, 100, 1000, min_passes=2, factor=6)  # 900 updates a pass
    8
    >>> auto_cap(90_000, 100, 1000, min_passes=2, factor=6, floor_passes=48,
    ...          floor_factor=24)                            # 27,000 updates
    30
    """
    fixed = auto_passes(n_samples, batch_size, n_updates, min_passes)
    if factor == 1:
        return fixed
    cap = min(int(factor) * fixed, max(fixed, update_budget(n_samples, batch_size,
                                                            factor * n_updates)))
    if floor_passes and n_samples > AUTO_CAP_FLOOR_MIN_ROWS:
        floor = min(int(floor_passes),
                    update_budget(n_samples, batch_size, floor_factor * n_updates))
        cap = max(cap, floor)
    return cap


def update_budget(n_samples, batch_size, n_updates):
    """The fewest passes (at least one) that make ``(1 + AUTO_CAP_SLACK) * n_updates`` minibatch updates.

    The slack lets a rule counted in updates give the same passes as one counted in
    whole passes wherever that one's rounding up is what differs
    (:data:`AUTO_CAP_SLACK`). :func:`auto_cap`'s budget, and the whole of
    BayesianSBN's online-VB ``n_iter="auto"`` on large data.
    """
    return auto_passes(n_samples, batch_size, round((1 + AUTO_CAP_SLACK) * n_updates))


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


#: :class:`Trend` counts a pass as flat while the fitted slope is at most this many
#: standard errors above ``tol``: 0.5 stops a noisy plateau (noise sd 1) within 62
#: passes in 99 % of simulated runs and never stopped a rise of 0.1 per pass (2.6
#: standard errors over 20 passes) in 200 (patience 10; ``tests/test_stopping.py``).
TREND_Z = 0.5

#: A slope this many standard errors above zero is reported as a rise; below it the
#: cap's message says the trend had not flattened, without claiming an improvement.
SIGNIFICANT_Z = 2.0


def _slope(y):
    """Least-squares slope of ``y`` against its index, and its standard error."""
    y = np.asarray(y, dtype=float)
    x = np.arange(y.size) - (y.size - 1) / 2.0
    sxx = float(x @ x)
    b = float(x @ (y - y.mean())) / sxx
    resid = y - y.mean() - b * x
    return b, float(np.sqrt(resid @ resid / (y.size - 2) / sxx))


class Trend:
    """``n_iter="auto"``'s convergence test, robust to a noisy figure (issue 25).

    A held-out figure that jumps by more from pass to pass than it gains (the DBM's
    variational bound, the GRBM's median log-density) defeats :class:`Plateau`: one
    lucky pass sets a best that the next ``patience`` passes fail to beat although
    the figure still rises. This rule reads the trend instead. After each pass it
    fits a least-squares line to the last half of the scores (at least ``2 *
    patience`` of them) and counts the pass as *flat* when the slope ``b`` (per
    pass) is no larger than what the relative ``tol`` asks for plus
    :data:`TREND_Z` standard errors of ``b``::

        flat  <=>  b <= tol * |mean of the window| + TREND_Z * se(b)

    It stops after ``patience`` flat passes in a row. Noise alone widens ``se(b)``,
    so a noisy plateau stops within a bounded number of passes, while a rise larger
    than a few standard errors keeps training; the window grows with the run, so a
    slow late rise is still resolved. The best figure is smoothed too: the mean of
    the last ``patience`` scores, so that keeping the best pass's parameters does
    not reward one lucky score.

    Parameters
    ----------
    tol : float
        Relative gain per pass (over the window's mean level) below which the run
        counts as converged.
    patience : int
        Smoothing window, half the shortest trend window and the flat passes in a
        row that stop the run.
    """

    def __init__(self, tol, patience, z=TREND_Z):
        self.tol, self.patience, self.z = float(tol), int(patience), float(z)
        self.best, self.best_pass, self.stale, self.scores = -np.inf, 0, 0, []
        self.slope = self.se = np.nan
        self.window = 0

    def update(self, score):
        """Record ``score`` (higher is better); ``True`` once the run has converged."""
        self.scores.append(float(score))
        t = len(self.scores)
        smoothed = float(np.mean(self.scores[-self.patience:]))
        if smoothed > self.best:
            self.best, self.best_pass = smoothed, t
        if t < self.first_window:
            return False
        self.window = max(self.first_window, t // 2)
        y = self.scores[-self.window:]
        self.slope, self.se = _slope(y)
        flat = self.slope <= self.tol * abs(float(np.mean(y))) + self.z * self.se
        self.stale = self.stale + 1 if flat else 0
        return self.stale >= self.patience

    @property
    def first_window(self):
        """The pass at which the trend is first read."""
        return max(2 * self.patience, 3)

    def trend(self):
        return (f"trend {self.slope:+.3g} +/- {self.se:.2g} per pass over the last "
                f"{self.window} passes")

    def reason(self):
        return (f"converged: {self.trend()}, not above tol={self.tol:g} (relative) + "
                f"{self.z:g} s.e. for {self.patience} passes")


def fixed_reason(est):
    """``stopping_reason_`` of a fit that no stop rule watched: ``n_iter`` ran in full."""
    if est.n_iter == "auto":
        return f"n_iter='auto' ran its fixed rule of {est.n_iter_} passes"
    return f"fixed n_iter={est.n_iter}"


def held_out_split(n, n_val, random_state, *, key=0xE5):
    """``(val, train)``: sorted row indices, ``n_val`` of ``n`` held out.

    The permutation comes from ``random_state``'s stream ``key`` (an int or a
    ``SeedSequence`` gives the same split every time), apart from the training streams.
    """
    from .random import as_generator, seed_for

    perm = as_generator(seed_for(random_state, key)).permutation(n)
    return np.sort(perm[:n_val]), np.sort(perm[n_val:])


def held_out_rows(X, rows):
    """The held-out rows ``rows`` of ``X``, in memory: a dask array's gathered once.

    A stopper scores its slice after every pass with the in-memory code, so a dask
    array's slice comes to the client once (:meth:`RowBlocks.take
    <skdgm._core.blocks.RowBlocks.take>`, the rows as its blocks prepared them) and
    the figure is the in-memory one for the same rows: the same stop pass. Scoring
    it where the blocks live instead would ship the parameters (or DeepLDA's kept
    samples) to the workers every pass, and split the figure's streams by block.
    """
    return X.take(rows) if isinstance(X, RowBlocks) else X[rows]


def training_subset(X, rows, *, view=False):
    """The rows ``rows`` (increasing) that a fit holding out a slice trains on.

    A dask array's stay in its blocks, never gathered (:meth:`RowBlocks.subset
    <skdgm._core.blocks.RowBlocks.subset>`: its tasks read no other row); in
    memory ``X[rows]``, or with ``view`` a :class:`~skdgm._core.blocks.RowView`
    of them (no copy), for training code that reads its rows through minibatches
    and the helpers of :mod:`skdgm._core.blocks` only.
    """
    if isinstance(X, RowBlocks):
        return X.subset(rows)
    return RowView(X, rows) if view else X[rows]


def say_stopped(est, message):
    """Record why ``fit`` ended in ``stopping_reason_`` and say it on a verbose line."""
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
    figure is ``est._validation_score(X_val)``. The stop is :class:`Trend`'s under
    ``n_iter="auto"`` (train until converged, within the wing's cap) and
    scikit-learn's :class:`Plateau` with an integer ``n_iter`` (``trend=False``).
    """

    def __init__(self, X_val, rows, *, tol, patience, trend=False):
        self.X_val, self.rows = X_val, rows
        self.plateau = (Trend if trend else Plateau)(tol, patience)
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

        On a dask array (:class:`~skdgm._core.blocks.RowBlocks`) the rule is the
        in-memory one, on the same seeded rows: the held-out slice is gathered to
        the client once and scored there (:func:`held_out_rows`), the training rows
        stay in their blocks (:func:`training_subset`).
        """
        n = X.shape[0]
        if not early_stopping_on(est, n):
            return None
        n_val = int(np.ceil(est.validation_fraction * n))
        if n < 2 or n_val >= n:
            raise ValueError(
                f"early_stopping needs at least one training and one validation row: "
                f"validation_fraction={est.validation_fraction} of {n} rows leaves "
                f"{n - n_val} for training")
        val, train = held_out_split(n, n_val, est.random_state)
        return cls(held_out_rows(X, val), train, tol=est.tol,
                   patience=est.n_iter_no_change, trend=est.n_iter == "auto")

    def training_rows(self, X):
        # DBMCAST and GaussianBernoulliRBM (the estimators that hold out rows this
        # way) read their training rows by minibatch, so a view stands in for the copy
        return training_subset(X, self.rows, view=True)

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
            say_stopped(est, self.reason)
        return done

    def finish(self, est):
        """Keep the best pass's parameters; the history and scores stay complete."""
        history, n_iter = est.history_, est.n_iter_
        if self.best_state is not None and self.best_pass < len(self.scores):
            est.__dict__.update(self.best_state)
        est.history_ = history
        est.n_iter_ = n_iter
        if self.reason is None:
            rule = self.plateau
            trend = f" ({rule.trend()})" if isinstance(rule, Trend) and rule.window else ""
            # The trend rule keeps training while the slope exceeds half a standard
            # error; a slope within two of flat is not a measured rise, and the
            # message must not claim one.
            weak = bool(trend) and rule.slope < SIGNIFICANT_Z * rule.se
            # a cap below the trend's first window (large data: 3 passes at a
            # million GRBM rows) ends the run before the rule has judged anything
            unread = isinstance(rule, Trend) and not rule.window
            first = rule.first_window if unread else 0
            how = (f"after {rule.stale} passes without progress" if rule.stale else
                   f"before its trend could be read (from pass {first})" if unread else
                   "before its trend flattened" if weak else "while still improving")
            say_stopped(est, f"reached the cap of {n_iter} passes {how}{trend}")
            if rule.stale == 0:
                # as MLPClassifier at max_iter: the model is not the converged one the
                # user asked for, and only verbose would have said so
                state = (f"the held-out score's trend is read from pass {first} on, so "
                         f"whether it still rose was not judged" if unread else
                         f"the held-out score's trend had not flattened{trend}: within "
                         f"{SIGNIFICANT_Z:g} standard errors of flat, so it may be a "
                         f"plateau or a slow rise" if weak else
                         f"the held-out score was still improving{trend}")
                warnings.warn(
                    f"{type(est).__name__}: fit reached the cap of {n_iter} passes while "
                    f"{state}; the model has not converged by the stopping rule. An "
                    f"integer n_iter with early_stopping=True trains until the held-out "
                    f"score stops improving, within that many passes.",
                    ConvergenceWarning)
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
        the rows trained on (of a :class:`~skdgm._core.blocks.RowBlocks`, its
        :meth:`~skdgm._core.blocks.RowBlocks.subset`: they are not gathered);
        without them the figure is ``figure(est)``.
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
        return X if self.rows is None else training_subset(X, self.rows)

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
            say_stopped(est, f"the cap of {self.passes} passes, still in burn-in")
        else:
            say_stopped(est, self.message)
        if self.X_val is not None:
            est.validation_scores_ = list(self.plateau.scores)

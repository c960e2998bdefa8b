"""What ``"auto"`` means for BayesianSBN's size and run length, and the paper's presets.

``BayesianSBN(random_state=0).fit(X)`` resolves ``n_components="auto"``,
``n_iter="auto"`` and ``burn_in="auto"`` here from the shape of ``X``; the estimator
stores the result as ``n_components_``, ``burn_in_`` and (counting passes)
``n_iter_``. The rules and the figures behind them are in the user guide
(``doc/user_guide/sbn.rst``, "Defaults") and ``benchmarks/results/defaults_sbn.txt``.
"""

import math
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _num_samples

from .._core.base import N_JOBS_CONSTRAINT
from .._core.random import RANDOM_STATE_CONSTRAINT
from .._core.stopping import BurnInStop, update_budget, updates_per_pass
from ._train import INFERENCE

__all__ = ["AUTO_BURN_ROW_VISITS", "AUTO_CAP_FACTOR", "AUTO_DSGHMC_UPDATES",
           "AUTO_INFERENCE_ROWS",
           "AUTO_STREAMING_UPDATES", "AutoStopping", "AUTO_PATIENCE", "AUTO_TOL",
           "PAPER_PRESETS", "PLATEAU_INFERENCE", "auto_plateau_plan",
           "auto_width_for_inference", "resolve_burn_in", "resolve_inference",
           "resolve_n_components", "resolve_n_iter", "resolve_run_length", "resolve_run_steps",
           "resolve_sizes",
           "PARAMETER_CONSTRAINTS"]

#: Below this many training rows the automatic width is the enumerable one.
SMALL_N = 5000
#: Widest automatic layer (the paper's MNIST width).
MAX_AUTO_UNITS = 200
#: Widest automatic layer when batch Gibbs trains it (see :func:`auto_width_for_inference`).
GIBBS_MAX_AUTO_UNITS = 40

#: The settings of Gan et al. (2015), Sec. 5.1 (every data set: K = 200 per layer,
#: weights initialised N(0, 0.1^2), VB 40 iterations, Gibbs 40 burn-in + 100 collected,
#: online VB minibatches of 5,000 with 4 local iterations over 20 epochs), as keyword
#: arguments of BayesianSBN. The paper's online VB used a fixed rate 0.1; ours decays
#: (learning_offset, learning_decay), so that row has no exact equivalent.
PAPER_PRESETS = {
    "sbn_gibbs": dict(n_components=(200,), inference="gibbs", n_iter=140, burn_in=40,
                      prior="tpbn"),
    "sbn_vb": dict(n_components=(200,), inference="vb", n_iter=40, prior="tpbn"),
    "sbn_200_200_vb": dict(n_components=(200, 200), inference="vb", n_iter=40,
                           pretrain=True, prior="tpbn"),
    "arsbn_vb": dict(n_components=(200,), inference="vb", n_iter=40, autoregressive=True,
                     prior="tpbn"),
    "fvsbn_vb": dict(n_components=(), inference="vb", n_iter=40, autoregressive=True,
                     prior="tpbn"),
    "sbn_online_vb": dict(n_components=(200,), inference="online_vb", n_iter=20,
                          batch_size=5000, n_local_iter=4, prior="tpbn"),
}


#: ``inference="auto"`` (the default since issue 25): batch Gibbs below this many
#: training rows, DSGHMC-NAIS from here on. Gibbs's ``n_iter="auto"`` burns in at most
#: AUTO_BURN_ROW_VISITS row visits (binding from 20,834 rows) and then collects 36
#: passes, so its cost grows with the rows (243.5 CPU-s at 10,000 rows, 349.9 at
#: 12,500, 501.3 at 15,000, 795.9 at 25,000, 819.2 at 50,000). DSGHMC-NAIS's default is
#: AUTO_DSGHMC_UPDATES minibatch updates at any size, so its cost grows only with the
#: automatic width until that reaches its 200 units (50,000 rows). On the same 100
#: binarised-MNIST test rows (``defaults_convergence_sbn_{12500,15k,25k,50k}.txt``
#: against ``..._sbn_dsghmc_nais_{12500,15k,25k}.txt`` and ``..._sbn_auto_50k.txt``)
#: DSGHMC-NAIS reads higher *and* costs less from 12,500 rows on: -114.80 in 289.2
#: CPU-s against Gibbs's -116.66 in 349.9 at 12,500; -112.36 in 353.9 against
#: -115.99 in 501.3 at 15,000; -110.71 in 466.3 against -116.10 in 795.9 at 25,000;
#: -110.69 in 777.0 against -116.26 in 819.2 at 50,000. At 10,000 rows Gibbs is both
#: better and cheaper (-110.83 in 243.5 CPU-s against DSGHMC-NAIS's -112.49 in 554 at
#: its earlier 2,640 updates, ``..._sbn_4x.txt``, ``..._dsghmc_nais_10k_steps.txt``),
#: so "auto" keeps it there. Between 10,000 and 12,500 rows neither was measured: the
#: switch sits at the smallest size where DSGHMC-NAIS was measured to win (it was
#: 50,000 until the 15,000- and 25,000-row pairs were measured, then 15,000 until the
#: 12,500-row pair).
AUTO_INFERENCE_ROWS = 12_500
#: What ``inference="auto"`` resolves to, below and from AUTO_INFERENCE_ROWS rows.
AUTO_INFERENCE = ("gibbs", "dsghmc_nais")


def resolve_inference(inference, n_samples):
    """``inference`` with ``"auto"`` resolved for ``n_samples`` training rows.

    ``"auto"``: ``"gibbs"`` below :data:`AUTO_INFERENCE_ROWS` rows, ``"dsghmc_nais"``
    from there on (a row count that is not known yet, as in a dask array of unknown
    chunk sizes, counts as large). Any other value is returned as it is.

    Examples
    --------
    >>> [resolve_inference("auto", n) for n in (1_797, 12_499, 12_500, 100_000)]
    ['gibbs', 'gibbs', 'dsghmc_nais', 'dsghmc_nais']
    >>> resolve_inference("vb", 100_000)
    'vb'
    """
    if inference != "auto":
        return inference
    small = n_samples is not None and n_samples < AUTO_INFERENCE_ROWS
    return AUTO_INFERENCE[0] if small else AUTO_INFERENCE[1]


def _rows_before_validation(X):
    """``X``'s row count, read before ``validate_data`` runs (``"auto"`` must be
    resolved first: the chosen inference decides whether a dask array stays on its
    workers); ``None`` when it is not known yet (a dask array of unknown chunk sizes)
    or ``X`` is not array-like (validation then rejects it with its own message)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape):
        n = shape[0]
        return None if n is None or n != n else int(n)        # dask: nan when unknown
    try:
        return _num_samples(X)      # lists, and objects with only __array__
    except TypeError:
        return None


def resolve_n_components(n_samples, n_features, max_exact_units):
    """Hidden sizes for ``n_components="auto"``: one layer.

    Up to :data:`SMALL_N` rows, ``max_exact_units`` units (16): the most whose
    likelihood ``score_samples`` computes exactly by enumeration, and on binarised
    digits as good as 200 units (-18.9 nats either way) at a tenth of the cost.
    Beyond, one unit per 250 rows, capped at :data:`MAX_AUTO_UNITS` (200 from 50,000
    rows, the paper's MNIST width); ``score_samples`` then estimates by AIS.
    """
    del n_features   # the width follows the rows that can pin the weights down
    if n_samples < SMALL_N:
        return (int(max_exact_units),)
    return (int(min(MAX_AUTO_UNITS, max(max_exact_units, n_samples // 250))),)


def resolve_n_iter(n_samples, inference=None, batch_size=100):
    """Passes for ``n_iter="auto"``: ``clip(240,000 / n_samples, 60, 200)``; the streaming
    inferences at most the whole passes that make about :data:`AUTO_STREAMING_UPDATES`
    updates.

    Small data get more passes (a pass is cheap and the chains need them to mix);
    from 4,000 rows on, 60 passes, as each pass then holds more information.
    The streaming inferences (``"online_vb"``, ``"dsghmc_gibbs"``, ``"dsghmc_nais"``)
    move their global parameters once per minibatch, online VB by a step ``rho_t``
    that decays with the updates ``t`` (Sec. 3.2), DSGHMC by ``n_sghmc_steps`` SGHMC
    steps whose cost does not depend on the rows (``sbn_dsghmc_scaling.txt``), so
    their run length is a number of *updates*; 60 passes would grow with the rows
    (60,000 updates at 100,000 rows, about 8 CPU-hours of online VB). They make at
    most the fewest passes of ``ceil(n_samples / batch_size)`` updates that make
    ``1.1 *`` :data:`AUTO_STREAMING_UPDATES`
    (:func:`skdgm._core.stopping.update_budget`, the budget of the GRBM's and the
    DBM's update-counted caps), at least one; the DSGHMC options the passes that
    hold :data:`AUTO_DSGHMC_UPDATES` updates, the last cut short
    (:func:`resolve_run_steps`).

    Examples
    --------
    >>> [resolve_n_iter(n, "online_vb") for n in (1_000, 10_000, 100_000, 1_000_000)]
    [200, 27, 3, 1]
    >>> resolve_n_iter(100_000, "dsghmc_nais"), resolve_n_iter(100_000)  # batch: passes
    (2, 60)
    """
    n0 = int(min(200, max(60, math.ceil(240_000 / max(1, n_samples)))))
    if inference is None or not INFERENCE[inference].streaming:
        return n0
    if _counts_updates(inference):     # the last pass cut short: resolve_run_steps
        return min(n0, -(-AUTO_DSGHMC_UPDATES // updates_per_pass(n_samples, batch_size)))
    return min(n0, update_budget(n_samples, batch_size, AUTO_STREAMING_UPDATES))


def resolve_run_steps(n_iter, n_samples, inference, batch_size=100):
    """The minibatch updates of a streaming ``fit`` of ``n_iter`` passes (``"auto"`` resolved).

    ``n_iter`` whole passes of ``ceil(n_samples / batch_size)`` updates, except for
    the DSGHMC options' ``n_iter="auto"``: :data:`AUTO_DSGHMC_UPDATES` updates (fewer
    only where the pass rule's 200 passes hold fewer), the last pass cut short, so
    that the cost of a default fit stops growing with the rows (one pass at
    1,000,000 rows would be 10,000 updates, about an hour).

    Examples
    --------
    >>> [resolve_run_steps("auto", n, "dsghmc_nais") for n in (1_000, 50_000, 10**6)]
    [2000, 2000, 2000]
    >>> resolve_run_steps("auto", 500, "dsghmc_nais"), resolve_run_steps(3, 10**6, "dsghmc_nais")
    (1000, 30000)
    """
    passes = resolve_n_iter(n_samples, inference, batch_size) if n_iter == "auto" else n_iter
    steps = int(passes) * updates_per_pass(n_samples, batch_size)
    if n_iter == "auto" and _counts_updates(inference):
        return min(steps, AUTO_DSGHMC_UPDATES)
    return steps


#: The streaming inferences' ``n_iter="auto"`` in minibatch updates (issue 25; online
#: VB, and DSGHMC since its measurement at 10,000 rows,
#: ``defaults_convergence_sbn_dsghmc_nais_10k.txt``): the pass rule's own count on
#: small data, 240,000 row visits in the default minibatches of 100 rows (from 1,200
#: to 4,000 rows ``240,000 / n`` passes of ``n / 100`` updates), kept from there on
#: instead of the 60-pass floor. With the slack of whole passes (``AUTO_CAP_SLACK``,
#: 2,640 updates) nothing changes up to 4,400 rows (the 1,797 digits: 134 passes
#: either way); 27 passes at 10,000 rows (was 60), 3 at 100,000 (was 60; an online-VB
#: pass there costs 490 CPU-s at the automatic 200 units,
#: ``defaults_convergence_sbn_online_vb_100k.txt``), one from 264,000 rows on.
AUTO_STREAMING_UPDATES = 2400
#: The DSGHMC options' ``n_iter="auto"`` of ``fit`` in minibatch updates (issue 25;
#: fewer only where the pass rule's 200 passes hold fewer, up to 1,000 rows): the
#: passes that make them, the last one cut short (:func:`resolve_run_steps`). A
#: DSGHMC-NAIS update at the automatic 200 units costs about 0.37 CPU-s whatever the
#: rows (3,000 updates took 1,121.5 CPU-s at 50,000 rows,
#: ``defaults_convergence_sbn_dsghmc_nais_50k.txt``, and 1,145.8 at 100,000,
#: ``..._100k.txt``), so 2,000 updates (4 passes at 50,000 rows, 2 at 100,000, a fifth
#: of a pass at 1,000,000) keep a default fit within issue 25's 15 CPU-minutes at any
#: size, with room for the host's noise; online VB's budget (AUTO_STREAMING_UPDATES
#: rounded up to whole passes, 3,000 updates at both sizes) did not, and whole passes
#: alone would grow with the rows (10,000 updates in one pass at 1,000,000 rows).
AUTO_DSGHMC_UPDATES = 2000


def _counts_updates(inference):
    """Whether ``inference``'s ``n_iter="auto"`` counts :data:`AUTO_DSGHMC_UPDATES` (its engine says)."""
    return inference is not None and INFERENCE[inference].auto_counts_updates


#: The plateau of ``n_iter="auto"`` (Gibbs and VB, issue 25): burn-in (VB: training)
#: ends when the training figure of the pass (the mean log joint of the rows and their
#: sampled hidden units; VB's bound) has not improved by a relative AUTO_TOL for
#: AUTO_PATIENCE passes, not before the fixed rule's burn-in and at most AUTO_CAP_FACTOR
#: times it.
AUTO_TOL = 1e-4
AUTO_PATIENCE = 10
AUTO_CAP_FACTOR = 4
#: Gibbs's burn-in cap in row visits (passes times rows): a pass costs ``O(N D K^2)``,
#: so a cap in passes alone grows a default fit with ``N`` (132 passes at 10 CPU-s per
#: 50,000-row pass would be 22 CPU-minutes). 2,000,000 row visits are 40 passes at
#: 50,000 rows; up to 20,833 rows the cap of AUTO_CAP_FACTOR times the fixed rule is
#: the smaller one, so nothing changes there (issue 25).
AUTO_BURN_ROW_VISITS = 2_000_000
#: The inferences whose ``n_iter="auto"`` runs until the plateau.
PLATEAU_INFERENCE = ("gibbs", "vb")


def auto_plateau_plan(n_samples, inference):
    """``(min_burn, max_burn, collect)`` passes of ``n_iter="auto"`` for a batch inference.

    Gibbs: burn-in from the fixed rule's 40 % of :func:`resolve_n_iter` up to
    ``AUTO_CAP_FACTOR`` times that or :data:`AUTO_BURN_ROW_VISITS` row visits,
    whichever is fewer passes (never below the fixed rule), then the fixed rule's
    60 % collected (on small data that converge by then, exactly the fixed rule).
    VB: its passes are all "burn-in", from :func:`resolve_n_iter` up to
    ``AUTO_CAP_FACTOR`` times, nothing collected.

    Examples
    --------
    >>> auto_plateau_plan(10_000, "gibbs"), auto_plateau_plan(50_000, "gibbs")
    ((24, 96, 36), (24, 40, 36))
    """
    n0 = resolve_n_iter(n_samples)
    if inference == "vb":
        return n0, AUTO_CAP_FACTOR * n0, 0
    burn = resolve_burn_in(n0)
    by_rows = math.ceil(AUTO_BURN_ROW_VISITS / max(1, n_samples))
    return burn, max(burn, min(AUTO_CAP_FACTOR * burn, by_rows)), n0 - burn


class AutoStopping:
    """BayesianSBN's ``n_iter="auto"`` hooks of the training skeleton (mixed into the estimator).

    Gibbs and VB with ``n_iter="auto"`` (and ``burn_in="auto"``): burn-in until the
    training figure plateaus (:class:`skdgm._core.stopping.BurnInStop`, bounds from
    :func:`auto_plateau_plan`), then the fixed rule's collection.
    """

    def _resolve_inference(self, X):
        """Store ``inference_`` for this fit's rows; say it when ``"auto"`` chose."""
        n = _rows_before_validation(X)
        self.inference_ = resolve_inference(self.inference, n)
        if self.verbose and self.inference == "auto":
            print(f"[{type(self).__name__}] inference='auto': {self.inference_!r} for {n} "
                  f"rows (batch Gibbs below {AUTO_INFERENCE_ROWS:,})", flush=True)

    def _chosen_inference(self):
        """The inference this fit runs (``inference_``; ``inference`` before a fit)."""
        return self.__dict__.get("inference_", self.inference)

    def _stopper(self, X):
        self._auto_plan = None
        inference = self._chosen_inference()
        if (self.n_iter != "auto" or self.burn_in != "auto"
                or inference not in PLATEAU_INFERENCE):
            return None
        min_burn, max_burn, collect = auto_plateau_plan(X.shape[0], inference)
        key = "log_joint" if inference == "gibbs" else "bound"
        stopper = BurnInStop(tol=AUTO_TOL, patience=AUTO_PATIENCE, min_burn=min_burn,
                             max_burn=max_burn, collect=lambda burn: collect,
                             figure=lambda est: est.history_[key][-1])
        self._auto_plan = (stopper.max_passes(), collect)
        return stopper

    def _n_passes(self):
        plan = getattr(self, "_auto_plan", None)
        return self._n_iter_resolved if plan is None else plan[0]

    def _hold_collection(self):
        """Under the plateau rule nothing is collected until :meth:`_end_burn_in`."""
        if getattr(self, "_auto_plan", None) is not None:
            self.burn_in_ = self._auto_plan[0]

    def _end_burn_in(self, ctx, burn_in):
        """Samples are collected from here on, thinned to fit the collection."""
        self.burn_in_ = burn_in
        if not ctx.get("keep_all"):     # warm_start keeps every draw (see _warm)
            ctx["thin"] = max(1, self._auto_plan[1] // self.n_posterior_samples)


def resolve_burn_in(n_iter, *, streaming_steps=False, fit=True, per_pass=1, run_steps=0):
    """Burn-in for ``burn_in="auto"``: the first 40 % of the final phase's passes.

    With ``streaming_steps`` (the DSGHMC options) the burn-in counts minibatch
    steps, the unit in which their engine collects samples: ``partial_fit``
    (``fit=False``) burns in 40 steps, the setting their benchmarks used; ``fit``
    (``n_iter`` passes of ``per_pass`` steps) 40 passes' worth of steps, but at
    most two thirds of the run's steps (the share 40 has of the 60 passes the pass
    rule gives from 4,000 rows), so that the few passes of the update-counted
    ``n_iter="auto"`` still collect ``n_posterior_samples`` from the last third of
    their steps (issue 25): 1,800 of 2,700 steps (18 of 27 passes) at 10,000 rows,
    2,000 of 3,000 at 100,000, 6,666 of the 10,000 steps of the one pass at 1,000,000.

    Examples
    --------
    >>> resolve_burn_in(60), resolve_burn_in(60, streaming_steps=True)
    (24, 40)
    >>> resolve_burn_in(27, streaming_steps=True, per_pass=100)
    1800
    >>> resolve_burn_in(1, streaming_steps=True, per_pass=10_000)
    6666
    >>> resolve_burn_in(1, streaming_steps=True, fit=False)
    40
    """
    if streaming_steps:
        run_steps = run_steps or n_iter * per_pass
        return 40 if not fit else min(40 * per_pass, 2 * run_steps // 3)
    return int(0.4 * n_iter)


def auto_width_for_inference(sizes, inference):
    """The automatic sizes cut to what ``inference`` can train at scale (issue 25).

    Batch Gibbs (``"gibbs"``, the default) visits every row at every pass, and its
    row step costs ``O(N D K^2)`` (Eq. 13-14: one ``K x K`` precision per visible
    unit, summed over the rows). At 40 units a 60-pass fit on 50,000 binarised MNIST
    rows stays within 15 CPU-minutes, where the 200 units of the width rule would
    take about an hour; 40 is also the width the rule gives at 10,000 rows, so below
    that nothing changes. The other inferences keep the rule's width (up to
    :data:`MAX_AUTO_UNITS`). Figures: ``benchmarks/results/sbn_scaling_defaults.txt``.
    """
    if inference == "gibbs":
        return tuple(min(k, GIBBS_MAX_AUTO_UNITS) for k in sizes)
    return tuple(sizes)


def resolve_sizes(n_components, autoregressive, n_samples, n_features, max_exact_units,
                  inference=None):
    """The hidden sizes ``n_components`` asks for, ``"auto"`` resolved for ``X``'s shape.

    ``n_samples=None`` (no data yet) resolves ``"auto"`` to ``()``, so that the
    settings can be checked before the data are read. ``"auto"`` follows
    :func:`resolve_n_components`, then :func:`auto_width_for_inference`.

    Raises
    ------
    ValueError
        If a size is not positive, or ``n_components=()`` without
        ``autoregressive`` (a net with neither hidden nor lateral weights).
    """
    if isinstance(n_components, str):          # "auto"
        if n_samples is None:
            return ()
        sizes = auto_width_for_inference(
            resolve_n_components(n_samples, n_features, max_exact_units), inference)
    else:
        sizes = tuple(int(k) for k in np.atleast_1d(np.asarray(n_components, dtype=object)))
    if any(k < 1 for k in sizes):
        raise ValueError(f"n_components must hold positive ints, got {sizes}")
    if not sizes and not autoregressive:
        raise ValueError("n_components=() needs autoregressive=True (the FVSBN)")
    return sizes


def resolve_run_length(n_iter, burn_in, n_samples, inference="gibbs", batch_size=100, *,
                       fit=True):
    """``(n_iter, burn_in)`` with ``"auto"`` resolved for ``inference``.

    :func:`resolve_n_iter` (passes; the streaming inferences counting ``batch_size``
    minibatches) and :func:`resolve_burn_in`. The burn-in is in the unit the
    inference collects in: passes for batch Gibbs, minibatch steps for the DSGHMC
    options, in ``fit`` and ``partial_fit`` alike, so an int ``burn_in`` is
    returned as it is (``burn_in_`` reports the unit the engine counts).

    Examples
    --------
    >>> resolve_run_length("auto", "auto", 100_000, "dsghmc_nais")
    (2, 1333)
    >>> resolve_run_length(4, 15, 1_000, "dsghmc_nais"), resolve_run_length(4, 1, 1_000)
    ((4, 15), (4, 1))
    """
    n_iter_arg = n_iter
    n_iter = (resolve_n_iter(n_samples, inference, batch_size) if n_iter == "auto"
              else int(n_iter))
    if burn_in != "auto":
        return n_iter, int(burn_in)
    steps = INFERENCE[inference].streaming and inference != "online_vb"
    per_pass = updates_per_pass(n_samples, batch_size) if steps and fit else 1
    run_steps = resolve_run_steps(n_iter_arg, n_samples, inference, batch_size) if steps else 0
    return n_iter, resolve_burn_in(n_iter, streaming_steps=steps, fit=fit,
                                   per_pass=per_pass, run_steps=run_steps)


# BayesianSBN's parameter constraints (scikit-learn's ``_parameter_constraints``),
# kept here beside the defaults and presets they bound; the estimator class
# points at this dict so that ``set_params`` / ``fit`` validate against it.
PARAMETER_CONSTRAINTS = {
    "n_components": ["array-like", Interval(numbers.Integral, 1, None, closed="left"),
                     StrOptions({"auto"})],
    "inference": [StrOptions(set(INFERENCE) | {"auto"})],
    "prior": [StrOptions({"tpbn", "student_t", "normal"}), None],
    "autoregressive": ["boolean"],
    "n_iter": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "burn_in": [Interval(numbers.Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "n_posterior_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "pretrain": ["boolean"],
    "prior_params": [dict, None],
    "learning_offset": [Interval(numbers.Real, 0, None, closed="left")],
    "learning_decay": [Interval(numbers.Real, 0.5, 1.0, closed="both")],
    "n_local_iter": [Interval(numbers.Integral, 1, None, closed="left")],
    "total_samples": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), tuple, callable],
    "friction": [Interval(numbers.Real, 0, 1, closed="right")],
    "sgmcmc": [StrOptions({"sghmc", "sgnht"})],
    "n_sghmc_steps": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_hidden_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "gibbs_sweeps": [Interval(numbers.Integral, 1, None, closed="left")],
    "recognition_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_is_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_ais_betas": [Interval(numbers.Integral, 2, None, closed="left"),
                    StrOptions({"auto"})],
    "n_ais_runs": [Interval(numbers.Integral, 1, None, closed="left")],
    "ais_tol": [Interval(numbers.Real, 0, None, closed="neither")],
    "random_state": RANDOM_STATE_CONSTRAINT,
    "verbose": ["verbose"],
    "n_jobs": N_JOBS_CONSTRAINT,
    "binarize": [Interval(numbers.Real, None, None, closed="neither"), None],
    "warm_start": ["boolean"],
}

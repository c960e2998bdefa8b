"""What ``"auto"`` means for DBMCAST's sizes and run lengths.

``DBMCAST(n_components="auto", n_iter="auto", pretrain_n_iter="auto")`` resolves
them here from the shape of the training data; the figures behind the rules are in
the user guide (``doc/user_guide/dbm.rst``, "Defaults").
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import EARLY_STOPPING_CONSTRAINTS, N_JOBS_CONSTRAINT
from .._core.random import RANDOM_STATE_CONSTRAINT
# the pass rules of n_iter="auto" are shared with the GRBM (issue 25)
from .._core.stopping import auto_cap, auto_passes

__all__ = ["AUTO_EARLY_STOPPING_FACTOR", "AUTO_MIN_PASSES", "AUTO_PRETRAIN_UPDATES",
           "AUTO_UPDATES", "ELEMENT_CONSTRAINTS",
           "MF_STARTS",
           "OPTION_READS", "PARAMETER_CONSTRAINTS", "SAMPLERS", "auto_n_components",
           "auto_passes", "check_sizes", "resolve_fit_passes"]

# ``"auto"`` sizes: h1 = n_features / 4 clipped to [16, 500], h2 = 2 h1 (the paper's
# 500-1000 ratio). 16 keeps log Z exact (enumerated) on small inputs such as 8x8
# digits; 500 is the paper's MNIST model, reached from 2,000 features up.
AUTO_H1_MIN, AUTO_H1_MAX = 16, 500
# ``n_iter="auto"``: enough passes for this many parameter updates (at least
# AUTO_MIN_PASSES passes). 2,400 updates took binarised digits (1,200 rows, auto
# sizes) from learning nothing to +5.7 nats over independent pixels (5.4 CPU-s);
# see doc/user_guide/dbm.rst, "Defaults".
AUTO_UPDATES = 2400
AUTO_MIN_PASSES = 5
# With ``n_iter="auto"`` and early stopping on (``early_stopping="auto"`` from 5,000
# rows), the passes are capped at this multiple of the fixed rule above; the held-out
# bound's trend (skdgm._core.stopping.Trend) ends the run sooner once it has converged
# (issue 25). On 10,000 binarised MNIST rows the fixed rule is 27 passes.
# Five times (135 passes) spent 284.8 CPU-s (defaults_convergence_dbm_trend.txt), about
# half of it on the held-out figure, whose AIS now runs its 16 runs as one vectorised
# group (3.7x cheaper, dbm_training_cost.txt): the 162 passes of the new cap fit in the
# 300 CPU-s issue 25 allows there (defaults_convergence_dbm_avg.txt). Eight times since
# the held-out figure reads the fast bound and 8 AIS runs, not 16 (about half its CPU,
# dbm_training_cost_parts.txt): 216 passes there, defaults_convergence_dbm_cheap.txt.
# On large data the cap counts updates (skdgm._core.stopping.auto_cap), so the floor
# of 5 passes that large data reach is not multiplied.
AUTO_EARLY_STOPPING_FACTOR = 8
# ``pretrain_n_iter="auto"``: CD-1 updates per RBM of the greedy stack.
AUTO_PRETRAIN_UPDATES = 600


def auto_n_components(n_features):
    """The ``n_components="auto"`` rule: ``(h, 2 h)``, ``h = n_features // 4`` in [16, 500]."""
    h = int(min(AUTO_H1_MAX, max(AUTO_H1_MIN, int(n_features) // 4)))
    return (h, 2 * h)


def resolve_fit_passes(n_iter, n_samples, batch_size, *, early_stopping):
    """Passes of ``fit`` on ``n_samples`` training rows: ``n_iter``, or for ``"auto"``
    the fixed rule, which becomes a cap while early stopping is on (the held-out trend
    then ends the run first): ``AUTO_EARLY_STOPPING_FACTOR`` times the fixed rule's
    passes, but no more than hold 1.1 times as many of its updates
    (:func:`skdgm._core.stopping.auto_cap`): 216 passes of the 9,000 training rows of
    10,000, 24 of the 90,000 of 100,000 (not 40: eight times the floor of 5 passes)."""
    if n_iter != "auto":
        return int(n_iter)
    return auto_cap(n_samples, batch_size, AUTO_UPDATES, min_passes=AUTO_MIN_PASSES,
                    factor=AUTO_EARLY_STOPPING_FACTOR if early_stopping else 1)


SAMPLERS = ("sap", "fpcd", "trans_sap", "adaptive_st", "cast")
# Parameters only some options read; setting one the chosen option ignores warns at
# fit time (the user guide's table mirrors this). ``n_temperatures``, ``beta_min``
# and ``wl_gain`` are absent: ``sample(sampler="adaptive_st")`` reads them whatever
# the training sampler.
OPTION_READS = {
    "sampler": {
        "sap": set(),
        "fpcd": {"fpcd_learning_rate", "fpcd_decay"},
        "trans_sap": {"swap_interval"},
        "adaptive_st": {"swap_interval"},
        "cast": {"swap_interval", "swap"},
    },
    "pretrain": {True: {"pretrain_n_iter", "pretrain_learning_rate"}, False: set()},
}
# ``mean_field_starts`` -> the starts of :func:`._model.mean_field` for inference and
# for training. "auto": training from the doubled start alone (the paper's), inference
# from both. On binarized MNIST (784-500-1000, SAP, 10,000 rows, 240 CPU-s) the
# one-start model scored 5.6 nats higher than the two-start one (both scored with
# both starts; benchmarks/results/dbm_mf_starts.txt), and its update costs 1.5x less.
_BOTH = ("doubled", "zeros")
MF_STARTS = {"auto": (_BOTH, ("doubled",)), "best": (_BOTH, _BOTH),
             "doubled": (("doubled",),) * 2, "zeros": (("zeros",),) * 2}
# DBMCAST's parameter constraints, kept here beside what "auto" means so that the
# estimator file holds the orchestration only (issue 16); the class points at it.
PARAMETER_CONSTRAINTS = {
    **EARLY_STOPPING_CONSTRAINTS,
    "n_components": ["array-like", Interval(numbers.Integral, 1, None, closed="left"),
                           StrOptions({"auto"})],
    "sampler": [StrOptions(set(SAMPLERS))],
    "dtype": [StrOptions({"float32", "float64"}), None],
    "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
    "beta_min": [Interval(numbers.Real, 0, 1, closed="both")],
    "wl_gain": [Interval(numbers.Real, 0, None, closed="left"), tuple, str, callable],
    "swap_interval": [Interval(numbers.Integral, 1, None, closed="left")],
    "swap": [StrOptions({"at_beta_one", "last_visit"})],
    "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_mean_field": [Interval(numbers.Integral, 0, None, closed="left")],
    "n_mean_field_eval": [Interval(numbers.Integral, 1, None, closed="left")],
    "mean_field_tol": [Interval(numbers.Real, 0, None, closed="left")],
    "mean_field_starts": [StrOptions(set(MF_STARTS))],
    # 0 would train nothing: rejected, so every allowed value trains.
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), tuple, str,
                      callable],
    "fpcd_learning_rate": [Interval(numbers.Real, 0, None, closed="left")],
    "fpcd_decay": [Interval(numbers.Real, 0, 1, closed="both")],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_iter": [Interval(numbers.Integral, 0, None, closed="left"), StrOptions({"auto"})],
    "pretrain": ["boolean"],
    "pretrain_n_iter": [Interval(numbers.Integral, 0, None, closed="left"),
                        StrOptions({"auto"})],
    # 0 would pre-train nothing while pretending to (pretrain=False says so)
    "pretrain_learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_ais_betas": [Interval(numbers.Integral, 2, None, closed="left"),
                    StrOptions({"auto"})],
    "ais_tol": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_ais_runs": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_posterior_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "average": [Interval(numbers.Real, 0, 1, closed="left")],
    "momentum": [Interval(numbers.Real, 0, 1, closed="left")],
    "n_gibbs_steps": [Interval(numbers.Integral, 1, None, closed="left")],
    "random_state": RANDOM_STATE_CONSTRAINT,
    "verbose": ["verbose"],
    "n_jobs": N_JOBS_CONSTRAINT,
    "binarize": [Interval(numbers.Real, None, None, closed="neither"), None],
}

# ... and those of each entry of ``n_components``
ELEMENT_CONSTRAINTS = {
    "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
}


def check_sizes(n_components):
    """The hidden sizes as a list of int, or ``None`` for ``"auto"``.

    Raises
    ------
    ValueError
        Unless ``n_components`` is ``"auto"`` or a non-empty sequence of positive
        integers.
    """
    if isinstance(n_components, str):
        return None
    sizes = np.asarray(n_components).ravel()
    if sizes.size < 1 or np.any(sizes < 1) or not np.all(sizes == np.round(sizes)):
        raise ValueError(
            f"n_components must be a non-empty sequence of positive integers, "
            f"got {n_components!r}")
    return [int(s) for s in sizes]

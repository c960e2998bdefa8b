"""GaussianBernoulliRBM's option tables: which parameters each option reads, and the
constraints every parameter must meet.

The estimator points at them (``_option_reads``, ``_parameter_constraints``); they
live here so that the estimator file holds the orchestration only (issue 16).
"""

import numbers

from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import EARLY_STOPPING_CONSTRAINTS, N_JOBS_CONSTRAINT
from .._core.random import RANDOM_STATE_CONSTRAINT
from ._samplers import SAMPLERS
from ._train import auto_passes

__all__ = ["AUTO_CAP_FLOOR_FACTOR", "AUTO_CAP_FLOOR_PASSES", "AUTO_EARLY_STOPPING_FACTOR",
           "OPTION_READS", "PARAMETER_CONSTRAINTS", "VALIDATION_BETAS", "VALIDATION_BETAS_MAX",
           "resolve_fit_passes", "check_burn_in", "validation_betas"]

#: With ``n_iter="auto"`` and early stopping on (``early_stopping="auto"`` from 5,000
#: rows), the passes are capped at this multiple of the fixed ``"auto"`` rule, and the
#: cosine learning-rate schedule spans the cap; the held-out trend
#: (:class:`skdgm._core.stopping.Trend`) ends the run sooner once it has converged.
#: Six times: on 10,000 MNIST rows the fixed rule is 12 passes and a pass with its
#: held-out median costs about 3.8 CPU-s (``defaults_convergence_grbm_median.txt``),
#: so the cap (72 passes) spends about the 300 CPU-s issue 25 allows there; at four
#: times the run stopped at 33 passes, 38 nats below a 48-pass run. On large data the
#: cap counts updates rather than passes (``resolve_fit_passes``).
AUTO_EARLY_STOPPING_FACTOR = 6

#: The cap's large-data floor (above 10,000 training rows; :func:`skdgm._core.stopping.auto_cap`):
#: at least 48 passes, or 1.1 x 24 times the fixed rule's updates where fewer (48
#: passes at 60,000 MNIST rows, 30 at 100,000, 3 at a million). Without it, on all
#: 60,000 MNIST training images (256 units, batch 100) the cap of 12 passes was
#: reached while the held-out median still rose (test log p -690.14,
#: ``paper_grbm_mnist_fit.txt``); with it the fit trains 48 passes, keeps pass 37
#: and reads -639.50 (``paper_grbm_mnist_fit_floor.txt``). It needs the longer
#: held-out AIS of :func:`validation_betas`: with 300 temperatures at every size the
#: same floor kept a pass that read -838.78 (``paper_grbm_mnist_fit_auto.txt``).
AUTO_CAP_FLOOR_PASSES = 48
AUTO_CAP_FLOOR_FACTOR = 24

#: Temperatures of the AIS ``log Z`` inside early stopping's held-out figure: 300 up
#: to 1,000 held-out rows (10,000 rows at ``validation_fraction=0.1``: those fits read
#: the figure they always did), then half a temperature more per further held-out
#: row, at most 3,000. Along a 40-pass run on 20,000 MNIST rows (256 units) a fresh
#: 300-temperature run missed a 3,000 x 100 reference by amounts that grew with
#: training (errors' s.d. 21.3 nats over the passes), and its held-out median kept a
#: pass 30.7 nats worse than the reference's choice; at 3,000 temperatures (16 runs,
#: 4.4 CPU-s a call) the errors' s.d. was 5.9 and it kept the reference's pass
#: (``grbm_heldout_log_z.txt``). Its cost grows with the rows as a pass's does.
VALIDATION_BETAS = 300
VALIDATION_BETAS_MAX = 3000


def validation_betas(n_val):
    """Temperatures of the held-out figure's AIS ``log Z`` for ``n_val`` held-out rows."""
    return int(min(VALIDATION_BETAS_MAX, VALIDATION_BETAS + max(0, n_val - 1000) // 2))


# Parameters only some samplers read (in training and in ``sample``); setting one
# the chosen sampler ignores warns at fit time (the user guide's table mirrors this).
_LANGEVIN = {"langevin_step_size", "metropolis_adjust", "adjust_after"}
OPTION_READS = {"sampler": {
    "gibbs": set(),
    "langevin": _LANGEVIN,
    "gibbs_langevin": _LANGEVIN | {"langevin_steps", "langevin_inner"},
}}

# GaussianBernoulliRBM's parameter constraints (``_parameter_constraints``).
PARAMETER_CONSTRAINTS = {
    **EARLY_STOPPING_CONSTRAINTS,
    "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
    "dtype": [StrOptions({"float32", "float64"}), None],
    "sampler": [StrOptions(set(SAMPLERS))],
    "metropolis_adjust": ["boolean"],
    "adjust_after": [Interval(numbers.Integral, 0, None, closed="left"), None],
    "cd_steps": [Interval(numbers.Integral, 1, None, closed="left")],
    "burn_in": [Interval(numbers.Integral, 0, None, closed="left")],
    "negative_phase": [StrOptions({"noise", "annealed", "auto"})],
    "init_std": [Interval(numbers.Real, 0, None, closed="left"), StrOptions({"auto"})],
    "langevin_steps": [Interval(numbers.Integral, 1, None, closed="left")],
    "langevin_inner": [StrOptions({"steps", "closed_form"})],
    "langevin_step_size": [Interval(numbers.Real, 0, 2, closed="neither")],
    "objective": [StrOptions({"joint", "marginal"})],
    "optimizer": [StrOptions({"sgd", "adam"})],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
    "clip_grad_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_iter": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "min_variance": [Interval(numbers.Real, 0, None, closed="neither")],
    "n_posterior_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "average": [Interval(numbers.Real, 0, 1, closed="left")],
    "n_ais_runs": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_ais_betas": [Interval(numbers.Integral, 2, None, closed="left"),
                    StrOptions({"auto"})],
    "ais_tol": [Interval(numbers.Real, 0, None, closed="neither")],
    "random_state": RANDOM_STATE_CONSTRAINT,
    "verbose": ["verbose"],
    "n_jobs": N_JOBS_CONSTRAINT,
}


def check_burn_in(burn_in, cd_steps, negative_phase):
    """Raise a ``ValueError`` unless ``burn_in`` leaves negative statistics to collect.

    It must be below ``cd_steps``, and 0 with ``negative_phase="annealed"`` (whose
    negative statistics are the final, importance-weighted states).
    """
    if burn_in >= cd_steps:
        raise ValueError(
            f"burn_in ({burn_in}) must be smaller than cd_steps ({cd_steps}); "
            f"otherwise no negative statistics are collected")
    if negative_phase == "annealed" and burn_in != 0:
        raise ValueError(
            f"burn_in ({burn_in}) must be 0 with negative_phase='annealed': its "
            f"negative statistics are the final, importance-weighted states")


def resolve_fit_passes(n_iter, shape, batch_size, cd_steps, n_components, *, early_stopping):
    """Passes of ``fit`` on the training rows of ``shape``: ``n_iter``, or for ``"auto"``
    the fixed rule (:func:`auto_passes`), which becomes a cap while early stopping is
    on (the held-out trend then ends the run first): ``AUTO_EARLY_STOPPING_FACTOR`` times
    the fixed rule's passes, but no more than hold 1.1 times as many of its updates
    (:func:`skdgm._core.stopping.auto_cap`), and above 10,000 training rows at least
    ``AUTO_CAP_FLOOR_PASSES`` passes or 1.1 times ``AUTO_CAP_FLOOR_FACTOR`` times its
    updates, the fewer. On MNIST (652 features, the defaults): 100 passes of 1,000
    rows (no early stopping), 72 of the 9,000 training rows of 10,000, 48 of the
    54,000 of 60,000, 30 of the 90,000 of 100,000, 3 of the 900,000 of a million."""
    if n_iter != "auto":
        return n_iter
    if not early_stopping:
        return auto_passes(shape[0], shape[1], batch_size, cd_steps, n_components)
    return auto_passes(shape[0], shape[1], batch_size, cd_steps, n_components,
                       factor=AUTO_EARLY_STOPPING_FACTOR, floor_passes=AUTO_CAP_FLOOR_PASSES,
                       floor_factor=AUTO_CAP_FLOOR_FACTOR)

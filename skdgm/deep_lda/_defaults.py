"""What ``n_iter="auto"`` means for DeepLDA.

Burn-in until the fit has converged (issue 25, :class:`skdgm._core.stopping.BurnInStop`):
at least the passes of the fixed rule :func:`resolve_n_iter` gives (about
``AUTO_UPDATES`` global updates, within ``[AUTO_MIN_PASSES, AUTO_MAX_PASSES]``; the
batch Gibbs sampler ``AUTO_GIBBS_SWEEPS`` sweeps), then until the figure has not
improved by a relative ``AUTO_TOL`` for ``AUTO_PATIENCE`` (10) passes, at most
``AUTO_CAP_FACTOR`` times the fixed rule; then the passes that collect the kept
global samples (:func:`collection_passes`). The figure is the held-out perplexity of
at most ``AUTO_VALIDATION_DOCS`` documents set aside, under the kept global samples
as the final perplexity is; below 5,000 documents (and for batch Gibbs) there is no
slice to spare and the fixed rule applies.
"""

import math
import numbers

from sklearn.utils._param_validation import Interval, StrOptions

from .._core.base import N_JOBS_CONSTRAINT
from .._core.random import RANDOM_STATE_CONSTRAINT, seed_for
from .._core.stopping import BurnInStop, held_out_rows, held_out_split
from .._core.schedules import Polynomial

__all__ = ["AutoStopping", "OPTION_READS", "PARAMETER_CONSTRAINTS", "SAMPLER_DEFAULTS", "collection_passes",
           "resolve_n_iter", "step_schedule", "validation_docs"]

# n_iter="auto": passes enough for about AUTO_UPDATES global updates, within
# [AUTO_MIN_PASSES, AUTO_MAX_PASSES]; batch Gibbs makes AUTO_GIBBS_SWEEPS sweeps.
AUTO_UPDATES = 500
AUTO_MIN_PASSES = 1
AUTO_MAX_PASSES = 10
AUTO_GIBBS_SWEEPS = 100
# The plateau of n_iter="auto": the figure is -log perplexity (about -6.8 on 20 News),
# so a relative 1e-4 is 0.07 % of perplexity, under the 1 % a run four times longer
# is allowed to gain (issue 25).
# On the few hundred documents of the slice the figure's pass-to-pass noise is
# larger than its per-pass trend well before the fit has converged: 10 passes, not
# 5, so that one lucky pass does not end burn-in (on the full 20 News burn-in now
# runs to its cap; defaults_convergence_deep_lda.txt).
AUTO_TOL = 1e-4
AUTO_PATIENCE = 10
AUTO_CAP_FACTOR = 4
# Documents held out to score the plateau's figure: 5 % of the corpus, at most 1,000
# (scored under the kept samples, a local run per sample, so more would cost a
# sizeable share of a pass). The latest sample's figure on at most 500 documents
# ended burn-in 2.98 % above a run four times longer (issue 25).
AUTO_VALIDATION_FRACTION = 0.05
AUTO_VALIDATION_DOCS = 1000


def resolve_n_iter(n_iter, sampler, n_samples, batch_size):
    """Passes of ``fit`` over ``n_samples`` documents, ``n_iter="auto"`` resolved."""
    if n_iter != "auto":
        return int(n_iter)
    if sampler == "gibbs":
        return AUTO_GIBBS_SWEEPS
    per_pass = math.ceil(n_samples / batch_size)
    return max(AUTO_MIN_PASSES, min(AUTO_MAX_PASSES, math.ceil(AUTO_UPDATES / per_pass)))


def collection_passes(n_posterior_samples, posterior_thin, sampler, n_samples, batch_size):
    """Passes after burn-in that refill the kept global samples (at least one)."""
    if posterior_thin == "pass":
        return n_posterior_samples
    per_pass = 1 if sampler == "gibbs" else math.ceil(n_samples / batch_size)
    return max(1, math.ceil(n_posterior_samples * posterior_thin / per_pass))


def validation_docs(n_samples, sampler):
    """Documents ``n_iter="auto"`` holds out for its figure (0: the fixed rule applies)."""
    from .._core import stopping   # read at call time (tests lower the threshold)

    if sampler == "gibbs" or n_samples < stopping.AUTO_VALIDATION_MIN_ROWS:
        return 0
    return min(AUTO_VALIDATION_DOCS, math.ceil(AUTO_VALIDATION_FRACTION * n_samples))


class AutoStopping:
    """DeepLDA's ``n_iter="auto"`` hooks of the training skeleton (mixed into the estimator).

    From 5,000 documents on (:func:`validation_docs`), burn-in runs until the held-out
    slice's perplexity plateaus (:class:`skdgm._core.stopping.BurnInStop`), between
    the fixed rule's passes and ``AUTO_CAP_FACTOR`` times them, then
    :func:`collection_passes` refill the kept samples; below, the fixed rule.
    """

    def _stopper(self, X):
        # common random numbers: every pass's held-out figure uses the same streams
        self._val_seed, self._auto_cap = self._eval_seed(5), None
        n = X.shape[0]
        n_val = validation_docs(n, self.sampler) if self.n_iter == "auto" else 0
        if not n_val:
            # small corpora (and batch Gibbs) keep the fixed rule: their training
            # perplexity keeps falling as they overfit, and 1 % of 2,000 documents
            # is too few to judge a plateau on
            return None
        val, rows = held_out_split(n, n_val, self.random_state)
        # A dask array's slice (at most AUTO_VALIDATION_DOCS documents, whatever the
        # corpus) is gathered to the client once and scored there after every pass
        # as in memory: the same rows, streams and kept samples give the same
        # figure, hence the same stop, where scoring it on the workers would ship
        # the kept samples every pass for a few hundred kB of rows. Its training
        # rows stay in the blocks (BurnInStop.training_rows: RowBlocks.subset).
        X_val = held_out_rows(X, val)
        n_train = n - n_val
        floor = resolve_n_iter("auto", self.sampler, n_train, self.batch_size)
        collect = collection_passes(self.n_posterior_samples, self.posterior_thin,
                                    self.sampler, n_train, self.batch_size)
        stopper = BurnInStop(tol=AUTO_TOL, patience=AUTO_PATIENCE, min_burn=floor,
                             max_burn=AUTO_CAP_FACTOR * floor, collect=lambda burn: collect,
                             X_val=X_val, rows=rows)
        self._auto_cap = stopper.max_passes()
        return stopper

    def _validation_score(self, X_val):
        """The held-out figure: ``-log`` perplexity under the kept global samples.

        The predictive is averaged over the ``n_posterior_samples`` latest samples,
        as the final :meth:`perplexity` is: the latest sample alone scores a few
        per cent worse and its figure flattens while the averaged one still falls.
        Each document's words are split 80/20 as in ``score``; the local chains run
        ``local_burn_in`` + ``local_samples`` sweeps on the same streams at every
        pass, so that pass-to-pass changes are the model's, not sampling noise.
        """
        obs, held = self._split(X_val)
        # a fresh copy each pass: spawning the chains' streams advances a kept
        # SeedSequence, which drew new streams at every pass before issue 25's fix
        ll, cnt = self._heldout_loglik(obs, held, point=False, n_burn=int(self.local_burn_in),
                                       n_collect=int(self.local_samples),
                                       seed=seed_for(self._val_seed))
        return float(ll.sum() / max(1.0, float(cnt.sum())))


#: Each sampler's ``(learning_rate, learning_decay)`` when left at ``None``: the
#: authors' settings (Cong et al. 2017, Sec. 4; SGRLD as Patterson and Teh 2013).
SAMPLER_DEFAULTS = {
    "tlasgr": (1.0, 0.7),
    "tlfsgr": (1.0, 0.7),
    "sgrld": (0.1, 0.9),
    "gibbs": (1.0, 0.7),
}


def step_schedule(sampler, learning_rate, learning_offset, learning_decay):
    """The step size ``eps_t = learning_rate (1 + t / learning_offset)^(-learning_decay)``.

    ``None`` takes the sampler's default (:data:`SAMPLER_DEFAULTS`).
    """
    a0, c0 = SAMPLER_DEFAULTS[sampler]
    a = a0 if learning_rate is None else float(learning_rate)
    c = c0 if learning_decay is None else float(learning_decay)
    return Polynomial(a, float(learning_offset), c)


# DeepLDA's parameter constraints (scikit-learn's ``_parameter_constraints``), kept
# here beside the defaults they bound; the estimator class points at this dict so
# that ``set_params`` / ``fit`` validate against it.
PARAMETER_CONSTRAINTS = {
    "n_components": [Interval(numbers.Integral, 1, None, closed="left"), tuple, list],
    "sampler": [StrOptions({"tlasgr", "tlfsgr", "sgrld", "gibbs"})],
    "link": [StrOptions({"poisson", "bernoulli"})],
    "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_iter": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "total_samples": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "learning_rate": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "learning_offset": [Interval(numbers.Real, 0, None, closed="neither")],
    "learning_decay": [Interval(numbers.Real, 0, None, closed="left"), None],
    "eta": [Interval(numbers.Real, 0, None, closed="neither"), tuple, list, None],
    "gamma0": [Interval(numbers.Real, 0, None, closed="neither")],
    "c0": [Interval(numbers.Real, 0, None, closed="neither")],
    "a0": [Interval(numbers.Real, 0, None, closed="neither")],
    "b0": [Interval(numbers.Real, 0, None, closed="neither")],
    "e0": [Interval(numbers.Real, 0, None, closed="neither")],
    "f0": [Interval(numbers.Real, 0, None, closed="neither")],
    "local_burn_in": [Interval(numbers.Integral, 0, None, closed="left")],
    "local_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "n_posterior_samples": [Interval(numbers.Integral, 1, None, closed="left")],
    "posterior_thin": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"pass"})],
    "random_state": RANDOM_STATE_CONSTRAINT,
    "verbose": ["verbose"],
    "n_jobs": N_JOBS_CONSTRAINT,
    "round_counts": ["boolean"],
}


# Parameters only the stochastic-gradient samplers read (batch Gibbs sweeps over the
# whole input and takes no step); setting one with sampler="gibbs" warns at fit time.
_SG_READS = {"batch_size", "total_samples", "learning_rate", "learning_offset", "learning_decay"}
OPTION_READS = {"sampler": {"tlasgr": _SG_READS, "tlfsgr": _SG_READS, "sgrld": _SG_READS,
                            "gibbs": set()}}

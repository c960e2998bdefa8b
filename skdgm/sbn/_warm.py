"""``warm_start``: a batch Gibbs or VB fit continued where the last one stopped.

A long batch fit (hours on MNIST, issue 24) must survive an interrupted session. With
``warm_start=True`` a fit keeps what its chain needs to go on: the engine (Gibbs: the
parameters, hidden units and prior states; VB: the variational state), the pass
count, the training generator's state before the end-of-call draws, and every
post-burn-in draw of the Gibbs chain. The next ``fit`` on the same rows then runs
``n_iter`` more passes of the *same* chain, so that ``fit`` with ``n_iter=n``
followed by a warm ``fit`` with ``n_iter=m`` equals one ``fit`` with ``n_iter=n + m``
(and ``burn_in`` an integer) bit for bit: parameters, kept samples and ``history_``
apart from its wall-clock entries. The kept samples follow the fixed rule of the
whole chain (every ``(n_passes - burn_in) // n_posterior_samples``-th draw after
burn-in, the latest ``n_posterior_samples``), which is why every draw after burn-in
is kept: one parameter sample per pass (a 784-200 net: 1.3 MB a pass).

The estimator's hooks call :meth:`WarmStart._continues`, :meth:`WarmStart._chain_start`
and :meth:`WarmStart._kept_samples`; nothing here knows scikit-learn beyond them.
"""

import copy

__all__ = ["WARM_INFERENCE", "WarmStart", "fixed_thin", "thinned"]

#: The inferences whose ``fit`` a warm start continues (the batch ones).
WARM_INFERENCE = ("gibbs", "vb")


def fixed_thin(n_passes, burn_in, n_keep):
    """The fixed rule's thinning: ``n_keep`` samples spread over the post-burn-in
    passes (DSGHMC's ``fit``: minibatch steps, :class:`._dsghmc._DSGHMCEngine`)."""
    return max(1, (n_passes - burn_in) // n_keep)


def thinned(draws, thin, n_keep):
    """The kept samples of a chain whose post-burn-in draws are ``draws`` (one a pass).

    The draw after pass ``burn_in + d`` is kept when ``d`` is a multiple of ``thin``;
    the latest ``n_keep`` of those are returned (what ``fit`` collects on the fly).
    """
    return draws[thin - 1::thin][-n_keep:]


class WarmStart:
    """BayesianSBN's ``warm_start`` hooks (mixed into the estimator)."""

    def _continues(self, X):
        """Whether this ``fit`` continues the chain of the last one (``warm_start``).

        Raises
        ------
        ValueError
            If the continuation is not well defined: ``n_iter="auto"`` (a plateau
            rule has no "more passes"), or rows or features other than the chain's.
        """
        chain = self.__dict__.get("_chain")
        if not self.warm_start or chain is None or chain["inference"] != self._chosen_inference():
            return False
        if self.n_iter == "auto":
            raise ValueError("warm_start=True continues a fitted chain for n_iter more "
                             "passes: set an integer n_iter (got 'auto')")
        if X.shape != chain["shape"]:
            raise ValueError(f"warm_start=True continues the chain on the rows it was "
                             f"fitted on, of shape {chain['shape']}; got X of shape "
                             f"{X.shape} (set warm_start=False to start afresh)")
        return True

    def _continue_chain(self, X):
        """The context of a continued fit: the saved engine, generator and draws."""
        chain = self._chain
        engine = self._engine
        self._refresh_engine(engine)
        rng = copy.deepcopy(chain["rng"])
        self._n_iter_resolved = int(self.n_iter)
        self._total_passes = self.n_iter_ + self._n_iter_resolved
        n_passes = chain["t"] + self._n_iter_resolved
        return {"engine": engine, "rng": rng, "samples": list(chain["draws"]),
                "t": chain["t"], "n_passes": n_passes, "keep_all": True,
                "thin": 1, "fit": True, "n_rows": X.shape[0]}

    def _chain_start(self, engine, rng, *, fit, n_rows):
        """A fresh chain's context: nothing collected, the fixed rule's thinning.

        With ``warm_start`` every post-burn-in draw is kept instead (thinned at the end).
        """
        n_passes = self._n_passes()
        ctx = {"engine": engine, "rng": rng, "samples": [], "t": 0, "n_passes": n_passes,
               "thin": fixed_thin(n_passes, self.burn_in_, self.n_posterior_samples),
               "fit": fit, "n_rows": n_rows,
               # the streaming run's minibatch steps (DSGHMC's "auto" cuts its last pass)
               "steps_left": getattr(self, "_run_steps", 0) or None if fit else None}
        if fit and self.warm_start and self._chosen_inference() in WARM_INFERENCE:
            ctx.update(keep_all=True, thin=1)
        self.__dict__.pop("_chain", None)
        return ctx

    def _kept_samples(self, ctx):
        """The samples ``fit`` keeps; with ``warm_start`` the chain is saved first."""
        if not ctx.get("keep_all"):
            return ctx["samples"]
        # the generator before the end-of-call draws (VB draws its samples from q
        # here), so that a continuation's passes use the uninterrupted fit's numbers
        self._chain = {"inference": self._chosen_inference(), "t": ctx["t"],
                       "shape": (ctx["n_rows"], self.n_features_in_),
                       "rng": copy.deepcopy(ctx["rng"]), "draws": ctx["samples"]}
        return thinned(ctx["samples"],
                       fixed_thin(ctx["t"], self.burn_in_, self.n_posterior_samples),
                       self.n_posterior_samples)

"""Joint-distribution tests of MCMC kernels (Geweke 2004, "Getting it right").

A Gibbs (or any invariant) kernel ``T(theta' | theta, y)`` for the posterior
``p(theta | y)`` leaves the joint ``p(theta, y) = p(theta) p(y | theta)`` invariant
when it is alternated with a fresh draw ``y ~ p(y | theta)``. So two simulators of the
same joint must agree on every test statistic ``g(theta, y)``:

* the *marginal-conditional* simulator draws ``theta ~ p(theta)``, ``y ~ p(y | theta)``
  independently ``n_iter`` times;
* the *successive-conditional* simulator starts from one such draw and then alternates
  ``theta <- T(theta, y)`` and ``y ~ p(y | theta)`` for ``n_iter`` steps.

The difference of the two means of each statistic, divided by its standard error
(independent draws for the first simulator, batch means for the autocorrelated second),
is a z-score; the test passes when every ``|z|`` is below the Bonferroni-corrected
two-sided normal quantile. A kernel that targets the wrong conditional, updates blocks in
an invalid order, or uses a biased auxiliary draw moves the successive-conditional means
away from the prior's, and the z-scores grow like ``sqrt(n_iter)``.

Every Geweke test in the suite also runs a deliberately broken kernel through the same
helper and asserts that it *fails* (:func:`assert_geweke_fails`), so that a test that
cannot fail is caught.

The helper is for tests only; it lives beside them and is imported as ``_geweke``.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = [
    "GewekeResult",
    "assert_geweke_fails",
    "assert_geweke_passes",
    "batch_means_se",
    "geweke_test",
]


def batch_means_se(x, n_batches=50):
    """Standard error of the mean of each column of an autocorrelated trace.

    ``x`` has shape ``(n_draws, n_stats)``. The trace is cut into ``n_batches``
    contiguous batches (a trailing remainder is dropped); the standard error is the
    standard deviation of the batch means over ``sqrt(n_batches)``. Batches much longer
    than the chain's autocorrelation time make this consistent.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    size = x.shape[0] // n_batches
    if size < 2:
        raise ValueError(f"need at least {2 * n_batches} draws for {n_batches} batches")
    means = x[: size * n_batches].reshape(n_batches, size, -1).mean(axis=1)
    return means.std(axis=0, ddof=1) / np.sqrt(n_batches)


@dataclass
class GewekeResult:
    """Outcome of :func:`geweke_test`."""

    z: np.ndarray
    """z-score of each statistic (successive minus marginal, over the joint SE)."""
    threshold: float
    """Bonferroni-corrected two-sided critical value of ``|z|``."""
    names: list
    marginal_mean: np.ndarray
    successive_mean: np.ndarray

    @property
    def passed(self):
        return bool(np.all(np.abs(self.z) < self.threshold))

    def report(self):
        rows = [
            f"  {n:>24s}: marginal {m:+.5g}, successive {s:+.5g}, z = {z:+.2f}"
            for n, m, s, z in zip(self.names, self.marginal_mean,
                                  self.successive_mean, self.z)
        ]
        return (f"Geweke test, |z| threshold {self.threshold:.2f} "
                f"(max |z| = {np.max(np.abs(self.z)):.2f}):\n" + "\n".join(rows))


def geweke_test(sample_prior, sample_data, transition, statistics, *, n_iter, rng,
                n_marginal=None, burn_in=100, thin=1, n_batches=50, n_chains=1,
                alpha=0.01, names=None):
    """Compare the marginal-conditional and successive-conditional simulators.

    Parameters
    ----------
    sample_prior : callable ``rng -> theta``
        A draw of every unknown the kernel updates (parameters *and* latent variables)
        from their joint prior.
    sample_data : callable ``(theta, rng) -> y``
        A draw of the observed data given ``theta``.
    transition : callable ``(theta, y, rng) -> theta``
        The kernel under test: one (or several) MCMC updates of ``theta`` given ``y``.
        It may update ``theta`` in place; the helper never keeps a reference across
        calls.
    statistics : callable ``(theta, y) -> array of shape (m,)``
        Test functions of the joint. Include first and second moments of each block
        and cross terms with the data: a kernel that is wrong only in how ``theta``
        depends on ``y`` leaves the marginal of ``theta`` alone.
    n_iter : int
        Length of the successive-conditional chain (after ``burn_in``).
    rng : numpy.random.Generator
        The only source of randomness; fix its seed for a deterministic test.
    n_marginal : int, default=n_iter
        Number of independent joint draws.
    burn_in, thin : int
        Successive-conditional steps discarded at the start; steps between recorded
        statistics.
    n_batches : int, default=50
        Batches for the batch-means standard error of the successive chain.
    n_chains : int, default=1
        With ``n_chains > 1`` the successive-conditional simulator runs that many
        independent chains of ``n_iter // n_chains`` steps, each started from its own
        marginal-conditional draw. A chain started from the joint stays at the joint
        if the kernel is right, so no burn-in is needed (``burn_in`` is ignored) and
        the standard error comes from the spread of the chains' means, which stays
        honest for kernels that mix too slowly for batch means (e.g. the horseshoe's
        global scales). A wrong kernel drifts away within each short chain.
    alpha : float, default=0.01
        Family-wise level; each of the ``m`` statistics is tested at ``alpha / m``.
    names : list of str, optional
        Labels of the statistics for the report.

    Returns
    -------
    GewekeResult
    """
    n_marginal = n_iter if n_marginal is None else n_marginal
    marg = np.array([
        np.atleast_1d(statistics(th, sample_data(th, rng)))
        for th in (sample_prior(rng) for _ in range(n_marginal))
    ], dtype=float)

    def successive(n_steps, n_burn):
        theta = sample_prior(rng)
        y = sample_data(theta, rng)
        out = []
        for it in range(n_burn + n_steps * thin):
            theta = transition(theta, y, rng)
            y = sample_data(theta, rng)
            if it >= n_burn and (it - n_burn) % thin == 0:
                out.append(np.atleast_1d(statistics(theta, y)))
        return np.asarray(out, dtype=float)

    if n_chains > 1:
        length = n_iter // n_chains
        if length < 1:
            raise ValueError(f"n_iter={n_iter} is fewer than n_chains={n_chains}")
        chain_means = np.array([successive(length, 0).mean(axis=0)
                                for _ in range(n_chains)])
        succ = chain_means
        se_s = chain_means.std(axis=0, ddof=1) / np.sqrt(n_chains)
    else:
        succ = successive(n_iter, burn_in)
        se_s = batch_means_se(succ, n_batches)

    if not (np.all(np.isfinite(marg)) and np.all(np.isfinite(succ))):
        raise AssertionError("a Geweke statistic is not finite")
    se_m = marg.std(axis=0, ddof=1) / np.sqrt(marg.shape[0])
    se = np.sqrt(se_m**2 + se_s**2)
    diff = succ.mean(axis=0) - marg.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, diff / se, np.where(diff == 0, 0.0, np.inf))
    m = z.size
    names = list(names) if names is not None else [f"g{i}" for i in range(m)]
    if len(names) != m:
        raise ValueError(f"{len(names)} names for {m} statistics")
    return GewekeResult(z=z, threshold=float(norm.isf(alpha / (2 * m))), names=names,
                        marginal_mean=marg.mean(axis=0),
                        successive_mean=succ.mean(axis=0))


def assert_geweke_passes(*args, **kwargs):
    """Run :func:`geweke_test` and fail with its report unless every ``|z|`` is small."""
    res = geweke_test(*args, **kwargs)
    # printed for the record: `pytest -rP tests/test_geweke_*.py` shows every report
    print(res.report())
    assert res.passed, res.report()
    return res


def assert_geweke_fails(*args, min_abs_z=None, **kwargs):
    """Negative control: a deliberately broken kernel must be caught.

    Fails unless at least one ``|z|`` exceeds ``min_abs_z`` (default: the test's own
    Bonferroni threshold), i.e. the same test, seeds and sizes detect the bug.
    """
    res = geweke_test(*args, **kwargs)
    print("negative control:", res.report())
    bound = res.threshold if min_abs_z is None else min_abs_z
    assert np.max(np.abs(res.z)) > bound, (
        "the broken kernel was NOT detected:\n" + res.report())
    return res

"""Deep LDA features averaged over the kept global samples (``transform``).

A document's feature is the posterior mean of its normalised hidden units
``theta^(l) / |theta^(l)|`` (the topic proportions). It is estimated by the local
upward-downward Gibbs sampler (Alg. 1, line 3) run under each kept global sample
``(Phi_s, r_s)`` in turn, the chains carried over from one sample to the next (so
only the first pays the burn-in, as in the held-out protocol of Sec. 5), one
collected sweep at a time. The standard deviation is that of the proportions over
all the collected sweeps of all the kept samples (``ddof=0``): by the law of total
variance, the local posterior spread within a global sample plus the spread of the
local means between global samples. It is a Monte-Carlo estimate from as many
draws as sweeps were collected, so expect a relative error of about
``1 / sqrt(2 n_draws)`` on it.
"""

import math

import numpy as np

from .._core.interop import layer_draws

__all__ = ["collected_sweeps", "inference_arrays", "theta_moments"]


def collected_sweeps(n_collect, n_samples):
    """Sweeps collected under each of ``n_samples`` global samples: ``ceil(n_collect / n_samples)``.

    The total stays within ``n_samples - 1`` sweeps of ``n_collect``, so averaging
    over the kept global samples costs about what one sample's ``n_collect`` did.
    """
    return max(1, math.ceil(int(n_collect) / int(n_samples)))


def theta_moments(run_samples, X, samples, seed, *, n_burn, n_collect, return_std=False):
    """Per-layer mean (and standard deviation) of the normalised ``theta^(l)`` over sweeps and samples.

    Parameters
    ----------
    run_samples : callable
        ``run_samples(X, seed_seq, samples, *, n_burn, n_collect, what)``, the
        estimator's chunked run of :func:`skdgm.deep_lda._local.samples_task`
        (one chain per chunk of documents, carried over the samples) with
        ``what="moments"`` (``"mean"`` without ``return_std``); returns one
        ``{"mean", "var"}`` per chunk, in document order.
    X : CSR matrix
    samples : list of (phis, r)
        The kept global samples, oldest first.
    seed : numpy.random.SeedSequence
    n_burn : int
        Sweeps discarded under the first sample.
    n_collect : int
        Sweeps collected in all, split over the samples (:func:`collected_sweeps`).
    return_std : bool, default=False

    Returns
    -------
    mean : list of ndarray of shape (n_docs, K_l)
    std : list of ndarray of shape (n_docs, K_l), only with ``return_std``
    """
    per_sample = collected_sweeps(n_collect, len(samples))
    # every collected sweep is one draw of each document's proportions
    parts = run_samples(X, seed, samples, n_burn=n_burn, n_collect=per_sample,
                        what="moments" if return_std else "mean")
    L = len(parts[0]["mean"])
    means = [np.vstack([p["mean"][l] for p in parts]) for l in range(L)]
    if return_std:
        return means, [np.sqrt(np.vstack([p["var"][l] for p in parts])) for l in range(L)]
    return means


def inference_arrays(states, X=None):
    """The kept ``(Phi, r)`` for ``to_inference_data`` (:mod:`skdgm._core.interop`).

    ``topics_l`` (``Phi^(l+1)``, dims ``word`` or ``topic_l`` by ``topic_{l+1}``)
    and ``r``. No exact ``log p(x | Phi, r)`` exists: ``X`` raises a ``ValueError``.
    """
    if X is not None:
        raise ValueError(
            "DeepLDA has no exact per-document log p(x | Phi, r): the topic proportions "
            "theta would have to be integrated out (perplexity and score_samples "
            "estimate it by sampling them); call to_inference_data with "
            "log_likelihood=False")
    L = len(states[0][0])
    layer = ["word"] + [f"topic_{l}" for l in range(1, L + 1)]
    draws, dims = [], {}
    for topics, r in states:
        d, dims = layer_draws("topics", topics, [(layer[l], layer[l + 1]) for l in range(L)])
        d["r"] = np.asarray(r)
        draws.append(d)
    return draws, {**dims, "r": [layer[L]]}, None

"""What ``n_iter="auto"`` means for DeepLDA.

Passes over the training documents enough for about ``AUTO_UPDATES`` global updates
(minibatches), within ``[AUTO_MIN_PASSES, AUTO_MAX_PASSES]``; the batch Gibbs sampler
makes ``AUTO_GIBBS_SWEEPS`` sweeps.
"""

import math

__all__ = ["resolve_n_iter"]

# n_iter="auto": passes enough for about AUTO_UPDATES global updates, within
# [AUTO_MIN_PASSES, AUTO_MAX_PASSES]; batch Gibbs makes AUTO_GIBBS_SWEEPS sweeps.
AUTO_UPDATES = 500
AUTO_MIN_PASSES = 1
AUTO_MAX_PASSES = 10
AUTO_GIBBS_SWEEPS = 100


def resolve_n_iter(n_iter, sampler, n_samples, batch_size):
    """Passes of ``fit`` over ``n_samples`` documents, ``n_iter="auto"`` resolved."""
    if n_iter != "auto":
        return int(n_iter)
    if sampler == "gibbs":
        return AUTO_GIBBS_SWEEPS
    per_pass = math.ceil(n_samples / batch_size)
    return max(AUTO_MIN_PASSES, min(AUTO_MAX_PASSES, math.ceil(AUTO_UPDATES / per_pass)))

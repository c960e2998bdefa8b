"""Elementwise numerics every model uses, in their fastest stable NumPy form."""

import numpy as np

__all__ = ["sigmoid", "softplus"]


def softplus(x):
    """``log(1 + exp(x))`` without overflow; keeps float32 as float32.

    Written as ``max(x, 0) + log1p(exp(-|x|))``: ``np.logaddexp(0, x)`` was up to
    15x slower on float32 arrays (measured in the GRBM wing).
    """
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x):
    """The logistic function as ``(1 + tanh(x / 2)) / 2``.

    The same values as ``scipy.special.expit`` to rounding, 3-6x faster on the
    sampler-sized arrays measured in the GRBM wing, and it keeps float32.
    """
    return 0.5 + 0.5 * np.tanh(0.5 * x)

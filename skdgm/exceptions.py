"""Exceptions and warnings raised by skdgm."""

__all__ = ["DivergenceError"]


class DivergenceError(FloatingPointError):
    """A training update produced non-finite parameters.

    The update is discarded before it is raised, so the estimator still holds the
    last finite parameters (and can be inspected or trained on with a smaller
    step size).
    """

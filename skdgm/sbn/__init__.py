"""Deep sigmoid belief nets with Bayesian inference (Gan et al. 2015; Du et al. 2018)."""

from ._estimator import BayesianSBN

__all__ = ["BayesianSBN"]

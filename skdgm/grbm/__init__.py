"""Gaussian-Bernoulli RBM trained by modified CD (Liao et al., 2022)."""

from ._estimator import GaussianBernoulliRBM

__all__ = ["GaussianBernoulliRBM"]

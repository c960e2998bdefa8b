"""skdgm: scikit-learn compatible Bayesian deep generative models with MCMC training."""

from .grbm import GaussianBernoulliRBM

__version__ = "0.1.0.dev0"

__all__ = ["GaussianBernoulliRBM"]

"""skdgm: scikit-learn compatible Bayesian deep generative models with MCMC training."""

from .dbm import DBMCAST
from .grbm import GaussianBernoulliRBM

__version__ = "0.1.0.dev0"

__all__ = ["DBMCAST", "GaussianBernoulliRBM"]

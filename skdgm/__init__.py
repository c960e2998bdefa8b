"""skdgm: scikit-learn compatible Bayesian deep generative models with MCMC training."""

from .dbm import DBMCAST
from .deep_lda import DeepLDA
from .grbm import GaussianBernoulliRBM
from .sbn import BayesianSBN

__version__ = "0.1.0.dev0"

__all__ = ["BayesianSBN", "DBMCAST", "DeepLDA", "GaussianBernoulliRBM"]

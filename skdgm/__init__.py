"""skdgm: scikit-learn compatible Bayesian deep generative models with MCMC training."""

__version__ = "0.1.0.dev0"

from .deep_lda import DeepLDA

__all__ = ["DeepLDA"]

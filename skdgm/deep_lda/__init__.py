"""Deep latent Dirichlet allocation (the Poisson gamma belief network) with TLASGR-MCMC."""

from ._estimator import DeepLDA

__all__ = ["DeepLDA"]

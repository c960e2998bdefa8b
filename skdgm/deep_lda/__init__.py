"""Deep latent Dirichlet allocation (the Poisson gamma belief network) with TLASGR-MCMC."""

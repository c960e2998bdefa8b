"""Deep sigmoid belief nets (Gan et al. 2015; Du et al. 2018)."""

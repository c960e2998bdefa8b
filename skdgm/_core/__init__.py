"""The shared core every wing builds on; it knows no model.

Random streams (``random``, ``_random_fast``), chain parallelism (``chains``),
schedules, optimisers (``optim``) and SG-MCMC updates (``sgmcmc``), annealed
importance sampling and its bidirectional sandwich (``ais``, ``bdmc``), the shared
sampler steps (``mcmc``: Bernoulli draws, the Metropolis test, importance weights),
binary-state enumeration (``exact``), posterior summaries and imputation loops
(``posterior``), convergence diagnostics, elementwise numerics, and the estimator
plumbing with the training contract (``base``)."""

"""The shared core: random streams, chain parallelism, schedules, AIS, diagnostics
and estimator plumbing. It knows no model; every wing builds on it."""

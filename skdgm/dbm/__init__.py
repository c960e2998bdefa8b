"""Deep Boltzmann machines trained with coupled adaptive simulated tempering."""

from ._estimator import DBMCAST

__all__ = ["DBMCAST"]

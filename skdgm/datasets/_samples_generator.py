"""Small synthetic data sets the tests and benchmarks share."""

import numpy as np

__all__ = ["make_grbm_mixture"]


def make_grbm_mixture(n_samples=1000, *, random_state=None):
    """Standardised 2-D data from three overlapping Gaussian clusters.

    Cluster means ``(-2, -1.5)``, ``(2, 1.5)`` and ``(0, 2.5)`` with weights 0.35,
    0.35 and 0.3 and isotropic standard deviation 0.8, then each column centred
    and scaled to unit variance (correlation about 0.61). A small continuous data
    set whose modes overlap: the GRBM tests and benchmarks measure sampler bias
    and training on it, where a 2-D model's moments are exact by enumeration.

    Parameters
    ----------
    n_samples : int, default=1000
    random_state : int, numpy.random.Generator or None, default=None
        A Generator is used as it is (its stream advances); an int or None
        seeds ``numpy.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)

    Examples
    --------
    >>> from skdgm.datasets import make_grbm_mixture
    >>> X = make_grbm_mixture(500, random_state=0)
    >>> X.shape
    (500, 2)
    >>> bool(abs(X.mean()) < 1e-12)
    True
    """
    rng = (random_state if isinstance(random_state, np.random.Generator)
           else np.random.default_rng(random_state))
    means = np.array([[-2.0, -1.5], [2.0, 1.5], [0.0, 2.5]])
    z = rng.choice(3, size=int(n_samples), p=[0.35, 0.35, 0.3])
    X = means[z] + 0.8 * rng.normal(size=(int(n_samples), 2))
    return (X - X.mean(0)) / X.std(0)

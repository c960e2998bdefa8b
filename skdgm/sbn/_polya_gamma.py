r"""Pólya-Gamma draws ``PG(b, z)`` that are right for every ``z`` and every ``b >= 0``.

The Gibbs sweep (Gan et al. 2015, Eq. 12) needs ``PG(1, psi)`` for activations that
reach ``|psi|`` in the hundreds once a net has trained, and the AIS path needs
``PG(beta, psi)`` for every temperature ``beta`` in ``(0, 1]``. The ``polyagamma``
package (2.0.2) is not right everywhere (measured with 200,000 draws against the closed
forms below; see the user guide): its default method returns ``E[PG(1, 200)] = 0.16``
instead of 0.0025, its ``"devroye"`` method fails from ``z = 200`` on, ``"gamma"`` is
biased from ``z = 10`` and ``"saddle"`` everywhere; near ``z = 0`` the default is
biased for ``b = 3.5`` and ``"alternate"`` for ``b = 0.5, 2, 3.5`` (``b = 0.5``: mean
-3 to -6 standard errors, variance -1 to -4 %). Its ``"alternate"`` method (Windle, Polson
and Scott 2014) is right for
``b = 1`` from ``z = 1e-8`` to ``1e12``. So, with ``b = n + f``, ``n`` an integer and
``0 <= f < 1``, and using ``PG(b1 + b2, z) = PG(b1, z) + PG(b2, z)`` (independent):

* the integer part is the sum of ``n`` draws of ``PG(1, z)`` by ``"alternate"``
  (``|z| <= 1e10``);
* the fractional part (and everything beyond ``|z| = 1e10``) uses the infinite-sum
  representation (Polson, Scott and Windle 2013, Eq. 1)

  .. math::

      \mathrm{PG}(b, z) = \frac{1}{2\pi^2} \sum_{k \ge 1}
      \frac{g_k}{(k - 1/2)^2 + z^2 / (4\pi^2)}, \qquad g_k \sim \mathrm{Gamma}(b, 1),

  with the first ``_N_TERMS`` terms drawn exactly and the rest replaced by one gamma
  variable with the remainder's exact mean ``b sum_{k>K} c_k`` and variance
  ``b sum_{k>K} c_k^2``, both from closed forms. The mean and variance of every draw
  are therefore exact for every ``z``; only the remainder's higher cumulants are
  approximated (its third cumulant by at most a third, and the remainder holds a
  fraction ``~2 / (pi^4 K^3)`` of the variance at ``z = 0``, a larger one only when
  ``|z| >> 2 pi K``, where the law is close to Gaussian anyway).
"""

import numpy as np
from polyagamma import random_polyagamma

__all__ = ["draw_polya_gamma", "pg_mean_var"]

_N_TERMS = 10
_Z_ALTERNATE_MAX = 1e10
_K_HALF = np.arange(1, _N_TERMS + 1) - 0.5


def pg_mean_var(z, b=1.0):
    """Exact mean and variance of ``PG(b, z)``, stable for every ``z`` (array).

    ``E = b tanh(z/2) / (2 z)`` and ``Var = b (2 tanh(z/2) - z sech^2(z/2)) / (4 z^3)``
    (Polson, Scott and Windle 2013), by their Taylor series in ``u = z/2`` below
    ``|z| = 0.01`` (where the variance formula cancels) and their limits at ``z = inf``.
    """
    z = np.abs(np.asarray(z, dtype=float))
    u = 0.5 * z
    small = z < 1e-2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        t = np.tanh(u)
        sech2 = np.where(u < 350.0, 1.0 / np.cosh(np.minimum(u, 350.0)) ** 2, 0.0)
        mean = np.where(small, 0.25 - u * u / 12.0 + u ** 4 / 30.0, t / (2.0 * z))
        var = np.where(small,
                       1.0 / 24 - u * u / 30.0 + 204.0 / 10080.0 * u ** 4
                       - 992.0 / 90720.0 * u ** 6,
                       (2.0 * t - z * sech2) / (4.0 * z ** 3))
    mean = np.where(np.isinf(z), 0.0, mean)
    var = np.where(np.isinf(z), 0.0, var)
    return b * mean, b * var


def _pg_gamma_sum(b, z, rng):
    """``PG(b, z)`` by the truncated sum with a moment-matched gamma remainder.

    ``z`` is a 1-d array of ``|psi|``; ``b > 0`` a float. Draws ``rng.standard_gamma(b,
    (len(z), _N_TERMS))`` then ``rng.standard_gamma(shape_r)`` for the remainder.
    """
    with np.errstate(over="ignore"):
        a2 = (z / (2.0 * np.pi))[:, None] ** 2
        c = 1.0 / (2.0 * np.pi ** 2 * (_K_HALF ** 2 + a2))          # (m, K)
    head = rng.standard_gamma(b, size=c.shape)
    out = (c * head).sum(axis=1)
    m1, v1 = pg_mean_var(z, 1.0)
    # the remainder's sums, by difference from the closed forms; clipped because for
    # z -> 0 they are ~1e-6 of the total and rounding could make them negative
    r1 = np.maximum(m1 - c.sum(axis=1), 0.0)
    r2 = np.maximum(v1 - (c * c).sum(axis=1), 0.0)
    ok = (r1 > 0) & (r2 > 0)
    shape = np.where(ok, b * r1 * r1 / np.where(ok, r2, 1.0), 0.0)
    scale = np.where(ok, r2 / np.where(ok, r1, 1.0), 0.0)
    return out + scale * rng.standard_gamma(shape)


def draw_polya_gamma(psi, rng, b=1.0):
    """``PG(b, psi)`` draws of the shape of ``psi`` (Eq. 12 has ``b = 1``).

    Parameters
    ----------
    psi : array_like
        Tilting parameters (activations); any finite value, or ``+-inf`` (then 0).
    rng : numpy.random.Generator
    b : float, default=1.0
        Shape, ``b >= 0``; ``b = 0`` gives zeros, AIS passes ``b = beta``.

    Returns
    -------
    ndarray of the shape of ``psi``
        Exact in mean and variance for every ``psi`` and ``b`` (module docstring for the
        construction and what is measured).
    """
    psi = np.asarray(psi, dtype=float)
    b = float(b)
    if not (np.isfinite(b) and b >= 0):
        raise ValueError(f"the Pólya-Gamma shape b must be finite and >= 0, got {b}")
    if np.isnan(psi).any():
        raise ValueError("the Pólya-Gamma argument psi holds NaN (diverged parameters?)")
    out = np.zeros(psi.size)
    if psi.size == 0 or b == 0.0:
        return out.reshape(psi.shape)
    z = np.abs(psi).ravel()
    n = int(np.floor(b))
    f = b - n
    near = z <= _Z_ALTERNATE_MAX
    if n:
        if near.all():
            zn = z
        else:
            zn = z[near]
        if zn.size:
            rep = np.ascontiguousarray(np.broadcast_to(zn, (n, zn.size)))
            draws = random_polyagamma(1.0, rep, method="alternate",
                                      random_state=rng).sum(axis=0)
            if near.all():
                out += draws
            else:
                out[near] += draws
        far = ~near & np.isfinite(z)
        if far.any():
            out[far] += _pg_gamma_sum(float(n), z[far], rng)
    if f > 0:
        fin = np.isfinite(z)
        if fin.all():
            out += _pg_gamma_sum(f, z, rng)
        elif fin.any():
            out[fin] += _pg_gamma_sum(f, z[fin], rng)
    return out.reshape(psi.shape)

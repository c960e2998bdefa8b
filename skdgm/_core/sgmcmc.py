"""Stochastic-gradient MCMC updates for continuous parameters (no model knowledge).

Two updates on a list of parameter arrays, written in the "momentum as a
displacement" form of Chen, Fox and Guestrin (2014, Eq. 15) that Du, Zhu and
Zhang (2018) use as their Eq. (4):

SGHMC (:func:`sghmc_update`)
    ``v <- (1 - xi) v + eta * g + N(0, 2 xi eta)``,  ``theta <- theta + v``,
    where ``g`` is an (unbiased) estimate of ``grad log p(theta | D)`` and
    ``eta`` the step size (Du et al. call it the learning rate ``lambda_t``).
SGNHT (:func:`sgnht_update`)
    the Nose-Hoover thermostat variant (Ding et al. 2014, Alg. 2 in the same
    parametrisation): the friction ``xi`` becomes a state variable,
    ``xi <- xi + mean(v**2) - eta / (1 - xi / 2)``, which absorbs unknown gradient-noise
    variance. The noise still uses the fixed diffusion ``A``.

Per-datum step sizes (Du et al., appendix C)
    The gradient of the log posterior grows with the dataset size ``N``, so a
    step size tuned for one dataset is wrong for another. Du et al. divide the
    gradient by ``N`` and tune the step on that "per-datum gradient". We keep
    the sampler exact for the posterior by using the *full-scale* gradient with
    ``eta = lr / N`` (:func:`per_datum_step_size`): the drift is then the
    per-datum gradient times ``lr`` and the injected noise has the variance
    ``2 xi lr / N`` the dynamics need to target ``p(theta | D)`` rather than a
    tempered version of it.

Every function returns *new* arrays and leaves its inputs untouched, so an
estimator can check the candidate for NaN (``check_finite_params``) before it
commits the step.
"""

import numpy as np

__all__ = [
    "SGHMCState",
    "init_momenta",
    "per_datum_step_size",
    "sghmc_update",
    "sgnht_update",
]


def per_datum_step_size(learning_rate, n_total):
    """Step ``eta`` for full-scale gradients from a per-datum learning rate.

    ``eta = learning_rate / n_total`` (Du et al., appendix C): the same
    ``learning_rate`` then works for datasets of any size ``n_total``.
    """
    n_total = float(n_total)
    if not n_total > 0:
        raise ValueError(f"the dataset size must be positive, got {n_total}")
    return float(learning_rate) / n_total


def init_momenta(params):
    """Zero momenta shaped like ``params`` (a list of arrays)."""
    return [np.zeros_like(p, dtype=float) for p in params]


def _noise(rng, shape, scale):
    if scale == 0.0:
        return 0.0
    return scale * rng.standard_normal(shape)


def sghmc_update(params, momenta, grads, *, step_size, friction, rng, temperature=1.0):
    """One SGHMC step (Du et al. Eq. 4; Chen et al. 2014 Eq. 15 with beta_hat = 0).

    Parameters
    ----------
    params, momenta, grads : list of ndarray
        Current ``theta``, momenta ``v`` (displacements) and an estimate of
        ``grad log p(theta | D)`` at ``theta`` (full scale: prior gradient plus
        ``N / |B|`` times the minibatch sum).
    step_size : float
        ``eta`` (``lambda_t`` in Du et al.); see :func:`per_datum_step_size`.
    friction : float
        Momentum decay ``xi`` in ``(0, 1]`` (Du et al. choose 0.1 or 0.05).
    rng : numpy.random.Generator
    temperature : float, default=1.0
        Multiplies the injected noise variance; 0 gives SGD with momentum.

    Returns
    -------
    new_params, new_momenta : list of ndarray
    """
    scale = np.sqrt(2.0 * friction * step_size * temperature)
    new_p, new_v = [], []
    for theta, v, g in zip(params, momenta, grads):
        v = (1.0 - friction) * v + step_size * g + _noise(rng, np.shape(theta), scale)
        new_v.append(v)
        new_p.append(theta + v)
    return new_p, new_v


def sgnht_update(params, momenta, thermostat, grads, *, step_size, diffusion, rng,
                 temperature=1.0):
    """One stochastic-gradient Nose-Hoover thermostat step (Ding et al. 2014, Alg. 2).

    Same parametrisation as :func:`sghmc_update`; the friction is the state
    variable ``thermostat``, updated to keep the mean kinetic energy per
    coordinate at its stationary value under this discretisation:
    ``thermostat <- thermostat + mean(v**2) - step_size * temperature / (1 - thermostat / 2)``.

    Why ``1 / (1 - xi / 2)``: with friction ``xi`` per step, ``v' = (1 - xi) v + e``
    has the stationary variance ``Var(e) / (xi (2 - xi))``, while the positions
    see the temperature ``Var(e) / (2 xi eta)``; the momenta of a chain whose
    positions have temperature ``T`` therefore have ``E[v**2] = eta T / (1 - xi / 2)``.
    Ding et al.'s continuous-time target ``eta T`` is the ``xi -> 0`` limit; with
    it the thermostat settles at ``xi ~ 1 - sqrt(1 - 2 A)`` instead of ``A`` and
    the posterior variance comes out too small by about ``A / 2`` (5 % at
    ``A = 0.1``) at every step size (``tests/test_sgmcmc_bias.py``).

    Parameters
    ----------
    params, momenta, grads : list of ndarray
    thermostat : float
        Current friction (start it at ``diffusion``).
    step_size : float
    diffusion : float
        ``A``, the friction whose matching noise is injected.
    rng : numpy.random.Generator
    temperature : float, default=1.0

    Returns
    -------
    new_params, new_momenta, new_thermostat
    """
    scale = np.sqrt(2.0 * diffusion * step_size * temperature)
    new_p, new_v = [], []
    sq, n = 0.0, 0
    for theta, v, g in zip(params, momenta, grads):
        v = (1.0 - thermostat) * v + step_size * g + _noise(rng, np.shape(theta), scale)
        new_v.append(v)
        new_p.append(theta + v)
        sq += float(np.sum(v * v))
        n += v.size
    target = step_size * temperature / (1.0 - 0.5 * thermostat)
    new_thermostat = thermostat + sq / max(n, 1) - target
    return new_p, new_v, new_thermostat


class SGHMCState:
    """Momenta (and thermostat) of one SG-MCMC chain, with one ``step`` method.

    A convenience for estimators: it keeps the auxiliary variables between
    ``partial_fit`` calls and dispatches to :func:`sghmc_update` or
    :func:`sgnht_update`. ``step`` returns the candidate parameters; the chain's
    momenta only change when the caller passes ``commit=True`` or calls
    :meth:`commit` with what ``step`` returned.

    Parameters
    ----------
    params : list of ndarray
        Shapes of the parameters (values are not kept).
    method : {"sghmc", "sgnht"}
    friction : float
        ``xi`` for SGHMC; the diffusion ``A`` (and the thermostat's start) for
        SGNHT.
    """

    def __init__(self, params, *, method="sghmc", friction=0.1):
        if method not in ("sghmc", "sgnht"):
            raise ValueError(f"unknown SG-MCMC method {method!r}; use 'sghmc' or 'sgnht'")
        self.method = method
        self.friction = float(friction)
        self.momenta = init_momenta(params)
        self.thermostat = float(friction)

    def step(self, params, grads, *, step_size, rng, temperature=1.0):
        """Candidate ``(new_params, aux)``; pass ``aux`` to :meth:`commit`."""
        if self.method == "sghmc":
            p, v = sghmc_update(params, self.momenta, grads, step_size=step_size,
                                friction=self.friction, rng=rng, temperature=temperature)
            return p, (v, self.thermostat)
        p, v, xi = sgnht_update(params, self.momenta, self.thermostat, grads,
                                step_size=step_size, diffusion=self.friction, rng=rng,
                                temperature=temperature)
        return p, (v, xi)

    def commit(self, aux):
        """Accept the momenta (and thermostat) of a step."""
        self.momenta, self.thermostat = aux[0], float(aux[1])

"""Recognition network for the neural adaptive proposal of DSGHMC (Du, Zhu and Zhang 2018).

The proposal has the SBN's structure with every layer inverted (Sec. 3):

    q(h_1, ..., h_L | x) = q(h_1 | x) prod_{l=1}^{L-1} q(h_{l+1} | h_l),
    q(h_{l,k} = 1 | h_{l-1}, h_{l,<k}) = sigmoid(a_{l,k}),
    a_l = d_l + h_{l-1} @ R_l.T  (+ h_{l,<k} @ A_l.T with ARSBN layers),

with ``h_0 = x``. With ``autoregressive=True`` every layer has a strictly
lower-triangular within-layer matrix ``A_l`` (an ARSBN layer, Du et al. Sec. 4.1
"for ARSBN, we use recognition models with ARSBN layers") and is sampled unit by
unit.

Parameter layout (:class:`RecognitionParams`), ``sizes = (D, K_1, ..., K_L)``:
``weights[l]`` of shape ``(K_{l+1}, sizes[l])`` (``R_{l+1}``), ``biases[l]`` of
shape ``(K_{l+1},)`` and ``lateral[l]`` of shape ``(K_{l+1}, K_{l+1})`` or
``lateral = None``. ``hidden`` lists ``[h_1, ..., h_L]``, each of shape
``(..., K_l)`` with leading axes broadcasting against the data ``(..., D)``.

The parameters ``phi`` ascend the inclusive-KL objective ``E_p[log q]``
(Eq. 7); :func:`recognition_log_prob_grad` gives ``sum_s w_s grad_phi log
q(h^(s) | x)``, which with self-normalised importance weights ``w_s`` is Eq. 9.
"""

from typing import NamedTuple

import numpy as np
from scipy.special import expit

from .._core.numerics import softplus

__all__ = [
    "RecognitionParams",
    "flatten_params",
    "init_recognition",
    "recognition_log_prob",
    "recognition_log_prob_grad",
    "sample_recognition",
]


def flatten_params(params):
    """Weights, biases, then lateral weights (if any), as one list.

    For any ``(weights, biases, lateral)`` tuple: the generative ``SBNParams`` and
    the recognition ``RecognitionParams`` share the layout, and the SG-MCMC and
    Adam updates run over this flat list.
    """
    out = list(params.weights) + list(params.biases)
    if params.lateral is not None:
        out += list(params.lateral)
    return out


class RecognitionParams(NamedTuple):
    """Recognition-network parameters ``phi`` (layout in the module docstring)."""

    weights: list
    biases: list
    lateral: list | None = None

    def flat(self):
        """All arrays in one list (the order :meth:`from_flat` expects)."""
        return flatten_params(self)

    def from_flat(self, arrays):
        """Same layout, new arrays."""
        L = len(self.weights)
        lat = None if self.lateral is None else list(arrays[2 * L:3 * L])
        return RecognitionParams(list(arrays[:L]), list(arrays[L:2 * L]), lat)

    def copy(self):
        return self.from_flat([a.copy() for a in self.flat()])


def init_recognition(n_features, n_components, rng, *, autoregressive=False,
                     scale=0.01):
    """Small Gaussian weights, zero biases (Du et al. Sec. 4.1)."""
    sizes = (int(n_features),) + tuple(int(k) for k in n_components)
    weights = [scale * rng.standard_normal((sizes[l + 1], sizes[l]))
               for l in range(len(sizes) - 1)]
    biases = [np.zeros(k) for k in sizes[1:]]
    lateral = None
    if autoregressive:
        lateral = [np.zeros((k, k)) for k in sizes[1:]]
    return RecognitionParams(weights, biases, lateral)


def _bottom_up(phi, below, l):
    return phi.biases[l] + below @ phi.weights[l].T


def sample_recognition(phi, X, n_samples, rng):
    """Draw ``n_samples`` proposals per row of ``X`` and their log densities.

    Parameters
    ----------
    phi : RecognitionParams
    X : ndarray of shape (n, D)
    n_samples : int
        ``L`` (Du et al. use 5 while training).
    rng : numpy.random.Generator
        One ``rng.random((L, n, K_l))`` block per layer, bottom layer first.

    Returns
    -------
    hidden : list of ndarray of shape (L, n, K_l)
    log_q : ndarray of shape (L, n)
    """
    X = np.asarray(X, dtype=float)
    shape = (int(n_samples), X.shape[0])
    below = X
    hidden, log_q = [], np.zeros(shape)
    for l in range(len(phi.weights)):
        a_fixed = np.broadcast_to(_bottom_up(phi, below, l), shape + (len(phi.biases[l]),))
        u = rng.random(a_fixed.shape)
        if phi.lateral is None:
            a = a_fixed
            h = (u < expit(a)).astype(float)
        else:
            # ARSBN layer: unit k sees the already drawn units < k of its own layer.
            A = phi.lateral[l]
            h = np.zeros(a_fixed.shape)
            a = np.array(a_fixed)
            for k in range(h.shape[-1]):
                if k:
                    a[..., k] += h[..., :k] @ A[k, :k]
                h[..., k] = u[..., k] < expit(a[..., k])
        log_q += np.sum(h * a - softplus(a), axis=-1)
        hidden.append(h)
        below = h
    return hidden, log_q


def _activations(phi, X, hidden):
    below = np.asarray(X, dtype=float)
    out = []
    for l, h in enumerate(hidden):
        a = _bottom_up(phi, below, l)
        if phi.lateral is not None:
            a = a + h @ np.tril(phi.lateral[l], -1).T
        out.append(a)
        below = h
    return out


def recognition_log_prob(phi, X, hidden):
    """``log q(h_1, ..., h_L | x)`` for given hidden layers (shape of their leading axes)."""
    total = 0.0
    for h, a in zip(hidden, _activations(phi, X, hidden)):
        a, h = np.broadcast_arrays(a, h)
        total = total + np.sum(h * a - softplus(a), axis=-1)
    return total


def recognition_log_prob_grad(phi, X, hidden, weights):
    """``sum_{leading} weights * grad_phi log q(h | x)`` (Du et al. Eq. 9 with SNIS weights).

    Parameters
    ----------
    phi : RecognitionParams
    X : ndarray of shape (n, D)
    hidden : list of ndarray of shape (L, n, K_l)
    weights : ndarray of shape (L, n)
        E.g. self-normalised importance weights divided by the batch size.

    Returns
    -------
    grad : RecognitionParams
    """
    X = np.asarray(X, dtype=float)
    lead = np.shape(weights)
    below = np.broadcast_to(X, lead + X.shape[-1:])
    gw, gb, gl = [], [], []
    for l, (h, a) in enumerate(zip(hidden, _activations(phi, X, hidden))):
        r = (np.broadcast_to(h, lead + h.shape[-1:]) - expit(a)) * weights[..., None]
        r2 = r.reshape(-1, r.shape[-1])
        gw.append(r2.T @ below.reshape(-1, below.shape[-1]))
        gb.append(r2.sum(axis=0))
        if phi.lateral is not None:
            hh = np.broadcast_to(h, r.shape).reshape(r2.shape)
            gl.append(np.tril(r2.T @ hh, -1))
        below = np.broadcast_to(h, r.shape)
    return RecognitionParams(gw, gb, gl if phi.lateral is not None else None)

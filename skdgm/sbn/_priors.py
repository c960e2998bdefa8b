"""Shrinkage priors on the weights as scale mixtures of normals (Gan et al. 2015, Sec. 2.4).

Every prior is ``w_jk ~ N(0, 1 / lambda_jk)`` with a prior-specific law on the
precision ``lambda_jk``, so Gibbs and VB only need, from the prior, the (expected)
precision of every weight. One *state* dict per weight block (a layer's ``W`` and
lateral ``S``/``U`` concatenated column-wise) holds the latent scales; ``mask`` marks
the entries that exist (the strictly lower triangle of a lateral block).

``"normal"``
    fixed precision ``1 / weight_var``.
``"student_t"``
    ``lambda ~ Gamma(df / 2, rate = df * scale^2 / 2)``: the marginal of ``w`` is a
    Student-t with ``df`` degrees of freedom and scale ``scale``.
``"tpbn"`` (Eq. 9)
    ``w ~ N(0, zeta)``, ``zeta ~ Gamma(a, xi)``, ``xi ~ Gamma(b, phi_k)``,
    ``phi_k ~ Gamma(1/2, omega)``, ``omega ~ Gamma(1/2, 1)`` (rates), one ``phi_k``
    per column, i.e. per upper unit: a small ``phi_k`` switches the unit off.
    ``a = b = 1/2`` is the horseshoe.
"""

import numpy as np
from scipy.special import digamma, gammaln, kve

__all__ = [
    "DEFAULT_PRIOR_PARAMS",
    "gibbs_update_prior",
    "init_prior_state",
    "init_prior_states",
    "prior_precision",
    "resolve_prior_params",
    "random_gig",
    "vb_prior_bound",
    "vb_update_prior",
]

DEFAULT_PRIOR_PARAMS = {
    "weight_var": 1.0,     # normal prior on weights
    "bias_var": 10.0,      # normal prior on every bias (nu_b = nu_c)
    "df": 2.2,             # student_t
    "scale": 0.1,          # student_t
    "a": 0.5,              # tpbn (a = b = 1/2: horseshoe)
    "b": 0.5,
}


# --- GIG sampler ---------------------------------------------------------------

def _gig_log_h(t, p, omega):
    return p * t - omega * np.cosh(t)


def random_gig(p, a, b, rng):
    """Exact draws from ``GIG(p, a, b)``, density ``∝ x^(p-1) exp(-(a x + b / x) / 2)``.

    Vectorised over broadcast ``p, a, b`` (``a, b > 0``). With ``x = sqrt(b / a) e^t``,
    ``t`` has the log-concave density ``exp(p t - omega cosh t)``, ``omega = sqrt(a b)``;
    we reject from a three-piece envelope (flat between the two points where the log
    density has dropped by 1 from the mode, exponential tangents outside), whose
    acceptance rate is bounded below for every log-concave density. scipy's
    ``geninvgauss.rvs`` loops in Python over array parameters (41 s for 784 x 200).
    """
    p, a, b = np.broadcast_arrays(np.asarray(p, float), np.asarray(a, float),
                                  np.asarray(b, float))
    shape = p.shape
    p, a, b = p.ravel(), a.ravel(), b.ravel()
    omega = np.sqrt(a * b)
    m = np.arcsinh(p / omega)
    hm = _gig_log_h(m, p, omega)

    def drop_point(sign):
        # bisection for the offset d > 0 with h(m + sign d) = h(m) - 1
        hi = np.ones_like(m)
        for _ in range(200):
            low = _gig_log_h(m + sign * hi, p, omega) > hm - 1
            if not low.any():
                break
            hi = np.where(low, 2 * hi, hi)
        lo = np.zeros_like(m)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            above = _gig_log_h(m + sign * mid, p, omega) > hm - 1
            lo = np.where(above, mid, lo)
            hi = np.where(above, hi, mid)
        return m + sign * hi

    t1, t2 = drop_point(-1.0), drop_point(1.0)
    s1 = p - omega * np.sinh(t1)          # > 0
    s2 = p - omega * np.sinh(t2)          # < 0
    h1 = _gig_log_h(t1, p, omega) - hm
    h2 = _gig_log_h(t2, p, omega) - hm
    w_mid = t2 - t1
    w_left = np.exp(h1) / s1
    w_right = np.exp(h2) / -s2
    total = w_mid + w_left + w_right
    out = np.empty_like(p)
    todo = np.arange(p.size)
    while todo.size:
        i = todo
        u = rng.random(i.size) * total[i]
        e = rng.standard_exponential(i.size)
        v = rng.random(i.size)
        mid = u < w_mid[i]
        left = ~mid & (u < w_mid[i] + w_left[i])
        t = np.where(mid, t1[i] + u, 0.0)
        # exponential tails: distance from the tangent point is Exp(slope)
        t = np.where(left, t1[i] - e / s1[i], t)
        right = ~mid & ~left
        t = np.where(right, t2[i] + e / -s2[i], t)
        env = np.where(mid, 0.0, np.where(left, h1[i] + s1[i] * (t - t1[i]),
                                          h2[i] + s2[i] * (t - t2[i])))
        acc = np.log(v) <= _gig_log_h(t, p[i], omega[i]) - hm[i] - env
        out[i[acc]] = t[acc]
        todo = i[~acc]
    return (np.sqrt(b / a) * np.exp(out)).reshape(shape)


def gig_moments(p, a, b):
    """``E[x], E[1/x], E[log x]`` under ``GIG(p, a, b)`` (Bessel ratios; log by a
    central difference in the order, which is smooth)."""
    om = np.sqrt(a * b)
    r = np.sqrt(b / a)
    kp = kve(p, om)
    ex = r * kve(p + 1, om) / kp
    einv = kve(p + 1, om) / (r * kp) - 2 * p / b
    eps = 1e-5
    dlogk = (np.log(kve(p + eps, om)) - np.log(kve(p - eps, om))) / (2 * eps)
    elog = np.log(r) + dlogk
    return ex, einv, elog


# --- states --------------------------------------------------------------------

def init_prior_state(kind, shape, prior_params):
    """Latent scales at their prior means (or 1 for the heavy-tailed ones)."""
    pp = prior_params
    if kind == "normal":
        return {}
    if kind == "student_t":
        lam = np.full(shape, 1.0 / pp["scale"] ** 2)
        # VB: q(lambda) = Gamma(shape_q, rate_q)
        return {"lam": lam, "q_shape": np.full(shape, pp["df"] / 2),
                "q_rate": np.full(shape, pp["df"] * pp["scale"] ** 2 / 2)}
    if kind == "tpbn":
        J, K = shape
        return {"zeta": np.ones(shape), "xi": np.ones(shape), "phi": np.ones(K), "omega": 1.0,
                # VB expectations
                "e_inv_zeta": np.ones(shape), "e_zeta": np.ones(shape),
                "e_log_zeta": np.zeros(shape), "e_xi": np.ones(shape),
                "e_log_xi": np.zeros(shape), "e_phi": np.ones(K), "e_log_phi": np.zeros(K),
                "e_omega": 1.0, "e_log_omega": 0.0,
                "q": {}}
    raise ValueError(f"unknown prior {kind!r}")


def resolve_prior_params(method_defaults, overrides):
    """:data:`DEFAULT_PRIOR_PARAMS`, then an inference method's, then the user's.

    Raises ``ValueError`` naming unknown keys of ``overrides``.
    """
    pp = {**DEFAULT_PRIOR_PARAMS, **method_defaults}
    if overrides:
        unknown = set(overrides) - set(pp)
        if unknown:
            raise ValueError(f"unknown prior_params {sorted(unknown)}; known: {sorted(pp)}")
        pp.update(overrides)
    return pp


def init_prior_states(kind, block_shapes, prior_params):
    """One :func:`init_prior_state` per weight block, ``block_shapes`` ``(J_l, d_l - 1)``."""
    return [init_prior_state(kind, shape, prior_params) for shape in block_shapes]


def prior_precision(kind, state, prior_params, shape, vb=False):
    """(Expected) precision of every weight, shape ``shape``."""
    if kind == "normal":
        return np.full(shape, 1.0 / prior_params["weight_var"])
    if kind == "student_t":
        return state["q_shape"] / state["q_rate"] if vb else state["lam"]
    return state["e_inv_zeta"] if vb else 1.0 / state["zeta"]


def gibbs_update_prior(kind, state, w, mask, prior_params, rng):
    """Draw the latent scales from their full conditionals given the weights ``w``.

    TPBN (Sec. 3.1): ``zeta | - ~ GIG(a - 1/2, 2 xi, w^2)``, ``xi | - ~ Gamma(a + b,
    zeta + phi_k)``, ``phi_k | - ~ Gamma(J_k b + 1/2, omega + sum_j xi_jk)``,
    ``omega | - ~ Gamma(K/2 + 1/2, 1 + sum_k phi_k)`` (``J_k`` = entries in column k).
    """
    pp = prior_params
    if kind == "normal" or w.size == 0:
        return state
    w2 = np.maximum(w ** 2, 1e-300)
    if kind == "student_t":
        df, s = pp["df"], pp["scale"]
        lam = rng.standard_gamma(df / 2 + 0.5, size=w.shape) / (df * s * s / 2 + w2 / 2)
        return {**state, "lam": np.where(mask, lam, state["lam"])}
    a, b = pp["a"], pp["b"]
    zeta = random_gig(a - 0.5, 2 * state["xi"], w2, rng)
    zeta = np.where(mask, zeta, 1.0)
    xi = rng.standard_gamma(a + b, size=w.shape) / (zeta + state["phi"])
    xi = np.where(mask, xi, 1.0)
    n_col = mask.sum(axis=0)
    phi = rng.standard_gamma(n_col * b + 0.5) / (state["omega"] + (xi * mask).sum(axis=0))
    K = w.shape[1]
    omega = rng.standard_gamma(K / 2 + 0.5) / (1.0 + phi.sum())
    return {**state, "zeta": zeta, "xi": xi, "phi": phi, "omega": float(omega)}


def vb_update_prior(kind, state, w2_mean, mask, prior_params):
    """Coordinate-ascent updates of the prior's variational factors given ``E[w^2]``.

    Student-t: ``q(lambda) = Gamma(df/2 + 1/2, df s^2 / 2 + E[w^2] / 2)``.
    TPBN (the VB analogue of the Gibbs conditionals): ``q(zeta) = GIG(a - 1/2,
    2 E[xi], E[w^2])``, ``q(xi) = Gamma(a + b, E[zeta] + E[phi_k])``, ``q(phi_k) =
    Gamma(J_k b + 1/2, E[omega] + sum_j E[xi_jk])``, ``q(omega) = Gamma(K/2 + 1/2,
    1 + sum_k E[phi_k])``, each an exact coordinate step on the bound.
    """
    pp = prior_params
    if kind == "normal" or w2_mean.size == 0:
        return state
    if kind == "student_t":
        df, s = pp["df"], pp["scale"]
        shape_q = np.full(w2_mean.shape, df / 2 + 0.5)
        rate_q = df * s * s / 2 + w2_mean / 2
        return {**state, "q_shape": shape_q, "q_rate": rate_q}
    a, b = pp["a"], pp["b"]
    st = dict(state)
    K = w2_mean.shape[1]
    n_col = mask.sum(axis=0)
    ga, gb = 2 * st["e_xi"], np.maximum(w2_mean, 1e-300)
    ez, einv, elog = gig_moments(a - 0.5, ga, gb)
    st.update(e_zeta=np.where(mask, ez, 1.0), e_inv_zeta=np.where(mask, einv, 1.0),
              e_log_zeta=np.where(mask, elog, 0.0))
    st["q"] = dict(st["q"], zeta=(ga, gb))
    xi_shape, xi_rate = a + b, st["e_zeta"] + st["e_phi"]
    st.update(e_xi=np.where(mask, xi_shape / xi_rate, 1.0),
              e_log_xi=np.where(mask, digamma(xi_shape) - np.log(xi_rate), 0.0))
    st["q"]["xi"] = (xi_shape, xi_rate)
    phi_shape = n_col * b + 0.5
    phi_rate = st["e_omega"] + (st["e_xi"] * mask).sum(axis=0)
    st.update(e_phi=phi_shape / phi_rate, e_log_phi=digamma(phi_shape) - np.log(phi_rate))
    st["q"]["phi"] = (phi_shape, phi_rate)
    om_shape, om_rate = K / 2 + 0.5, 1.0 + st["e_phi"].sum()
    st.update(e_omega=om_shape / om_rate, e_log_omega=digamma(om_shape) - np.log(om_rate))
    st["q"]["omega"] = (om_shape, om_rate)
    return st


def _e_log_gamma(shape, rate, e_x, e_log_x, e_log_rate=None, e_rate=None):
    """``E[log Gamma(x | shape, rate)]`` with possibly random ``rate``."""
    e_log_rate = np.log(rate) if e_log_rate is None else e_log_rate
    e_rate = rate if e_rate is None else e_rate
    return shape * e_log_rate - gammaln(shape) + (shape - 1) * e_log_x - e_rate * e_x


def _gamma_entropy(shape, rate):
    return shape - np.log(rate) + gammaln(shape) + (1 - shape) * digamma(shape)


def vb_prior_bound(kind, state, w2_mean, mask, prior_params):
    """``E[log p(w | scales)] + E[log p(scales)] - E[log q(scales)]`` summed over the block."""
    pp = prior_params
    if w2_mean.size == 0:
        return 0.0
    m = mask.astype(float)
    half_log_2pi = 0.5 * np.log(2 * np.pi)
    if kind == "normal":
        v = pp["weight_var"]
        return float(np.sum(m * (-half_log_2pi - 0.5 * np.log(v) - 0.5 * w2_mean / v)))
    if kind == "student_t":
        al, be = state["q_shape"], state["q_rate"]
        e_lam, e_log_lam = al / be, digamma(al) - np.log(be)
        df, s = pp["df"], pp["scale"]
        lik = -half_log_2pi + 0.5 * e_log_lam - 0.5 * e_lam * w2_mean
        pri = _e_log_gamma(df / 2, df * s * s / 2, e_lam, e_log_lam)
        return float(np.sum(m * (lik + pri + _gamma_entropy(al, be))))
    a, b = pp["a"], pp["b"]
    st = state
    lik = -half_log_2pi - 0.5 * st["e_log_zeta"] - 0.5 * w2_mean * st["e_inv_zeta"]
    # zeta ~ Gamma(a, xi): E log p - E log q(zeta), q = GIG(a - 1/2, ga, gb)
    ga, gb = st["q"]["zeta"]
    p = a - 0.5
    log_q_norm = 0.5 * p * np.log(ga / gb) - np.log(2 * kve(p, np.sqrt(ga * gb))) \
        + np.sqrt(ga * gb)
    e_log_q_zeta = log_q_norm + (p - 1) * st["e_log_zeta"] \
        - 0.5 * (ga * st["e_zeta"] + gb * st["e_inv_zeta"])
    p_zeta = _e_log_gamma(a, None, st["e_zeta"], st["e_log_zeta"],
                          e_log_rate=st["e_log_xi"], e_rate=st["e_xi"])
    xs, xr = st["q"]["xi"]
    p_xi = _e_log_gamma(b, None, st["e_xi"], st["e_log_xi"],
                        e_log_rate=st["e_log_phi"], e_rate=st["e_phi"])
    total = np.sum(m * (lik + p_zeta - e_log_q_zeta + p_xi + _gamma_entropy(xs, xr)))
    ps, pr = st["q"]["phi"]
    p_phi = _e_log_gamma(0.5, None, st["e_phi"], st["e_log_phi"],
                         e_log_rate=st["e_log_omega"], e_rate=st["e_omega"])
    total += np.sum(p_phi + _gamma_entropy(ps, pr))
    os_, or_ = st["q"]["omega"]
    total += _e_log_gamma(0.5, 1.0, st["e_omega"], st["e_log_omega"]) + _gamma_entropy(os_, or_)
    return float(total)

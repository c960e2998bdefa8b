"""Pólya-Gamma augmented Gibbs sampling for deep (autoregressive) SBNs (Gan et al. 2015, Sec. 3.1).

One iteration, given the data and the current hidden units, weights and prior scales:

1. ``gamma_lj ~ PG(1, psi_lj)`` for every unit of every layer (Eq. 12), where ``psi`` is
   the unit's activation; :func:`skdgm.sbn._polya_gamma.draw_polya_gamma`, vectorised.
2. Hidden units one at a time, vectorised over samples, bottom layer first
   (:func:`pg_hidden_sweep`, the ``d_kn`` of Sec. 3.1; Cython with a NumPy twin).
3. Every unit's coefficient row ``[w_j, s_j, c_j]`` from its Gaussian conditional
   (Eq. 13-14). The data are read one chunk of rows at a time (a CSR input is never
   dense beyond one chunk): each chunk's terms of the rows' statistics are added as
   soon as its units are swept (:func:`accumulate_statistics`). The bias is drawn
   jointly with its row (a blocked Gibbs step; the paper
   draws it separately, which mixes more slowly and has the same stationary law).
4. The prior's latent scales (:func:`skdgm.sbn._priors.gibbs_update_prior`).
"""

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cholesky, solve_triangular
from scipy.linalg.blas import sgemm as _sgemm
from scipy.linalg.lapack import dpotrf as _dpotrf
from scipy.linalg.lapack import dtrtrs as _dtrtrs
from scipy.linalg.lapack import spotrf as _spotrf

from . import _model
from ._gibbs_fast import pg_hidden_sweep as _pg_hidden_sweep_fast
from ._polya_gamma import draw_polya_gamma
from ._priors import gibbs_update_prior, prior_precision

__all__ = [
    "ais_transition_pg",
    "draw_polya_gamma",
    "draw_rows",
    "draw_rows_fast",
    "gibbs_iteration",
    "accumulate_statistics",
    "accumulate_statistics_fast",
    "log_joint_mean",
    "pg_hidden_sweep",
    "pg_hidden_sweep_numpy",
    "row_conditional",
    "sample_rows",
]

_ROW_CHUNK = 32


def pg_hidden_sweep_numpy(h, a_self, x_below, psi_below, gamma_below, w, lateral,
                          gamma_self, rng):
    """NumPy reference of :func:`pg_hidden_sweep`; updates the arrays in place.

    ``h`` (n, K) units of the layer; ``a_self`` (n, K) their activations (kept current
    through the lateral weights); ``x_below``, ``psi_below``, ``gamma_below`` (n, J):
    the children's values, activations (kept current) and PG variables; ``w`` (J, K);
    ``lateral`` (K, K) or None; ``gamma_self`` (n, K) PG variables of the layer itself.
    """
    n, K = h.shape
    u = rng.random((K, n))
    xc = x_below - 0.5
    for k in range(K):
        wk = w[:, k]
        hk = h[:, k].copy()
        p0 = psi_below - hk[:, None] * wk
        d = a_self[:, k] + xc @ wk - 0.5 * ((gamma_below * (2.0 * p0 * wk + wk * wk)).sum(1))
        if lateral is not None and k + 1 < K:
            s = lateral[k + 1:, k]
            q0 = a_self[:, k + 1:] - hk[:, None] * s
            d = d + (h[:, k + 1:] - 0.5) @ s \
                - 0.5 * (gamma_self[:, k + 1:] * (2.0 * q0 * s + s * s)).sum(1)
        new = (u[k] < 1.0 / (1.0 + np.exp(-d))).astype(float)
        h[:, k] = new
        psi_below[...] = p0 + new[:, None] * wk
        if lateral is not None and k + 1 < K:
            a_self[:, k + 1:] = q0 + new[:, None] * s


def pg_hidden_sweep(h, a_self, x_below, psi_below, gamma_below, w, lateral, gamma_self,
                    rng):
    """Cython version of :func:`pg_hidden_sweep_numpy` (same arguments, same draws)."""
    use_lat = lateral is not None
    lat_t = np.ascontiguousarray(lateral.T) if use_lat else np.zeros((1, 1))
    g_self = np.ascontiguousarray(gamma_self, dtype=float) if use_lat else np.zeros((1, 1))
    g = np.ascontiguousarray(gamma_below, dtype=float)
    c1 = np.ascontiguousarray((x_below - 0.5) @ w)
    c2 = np.ascontiguousarray(g @ (w * w))
    gpsi = g * psi_below
    _pg_hidden_sweep_fast(h, a_self, c1, c2, psi_below, gpsi, g, np.ascontiguousarray(w.T),
                          lat_t, g_self, use_lat, rng)


def row_conditional(Z, x, gamma, prior_prec):
    """Precision and mean of one row's Gaussian conditional (Eq. 13-14, bias included).

    ``Z`` (n, d) regressors, ``x`` (n,) the unit's values, ``gamma`` (n,) its PG
    variables, ``prior_prec`` (d,). ``P = Z' diag(gamma) Z + diag(prior_prec)``,
    ``mean = P^-1 Z' (x - 1/2)``.
    """
    P = (Z.T * gamma) @ Z + np.diag(prior_prec)
    return P, np.linalg.solve(P, Z.T @ (x - 0.5))


def _gaussian_from_precision(P, b, eps):
    """``N(P^-1 b, P^-1)`` draw for one precision ``P``, using ``eps ~ N(0, I)``:
    ``P = L L'``, mean by two triangular solves, noise ``L'^-1 eps``."""
    L = cholesky(P, lower=True, check_finite=False)
    mean = solve_triangular(L, b, lower=True, check_finite=False)
    return solve_triangular(L, mean + eps, lower=True, trans="T", check_finite=False)


def sample_rows(Z, X, G, prior_prec, mask, rng):
    """Draw every row of a layer from its conditional (Eq. 13-14).

    ``Z`` (n, d) regressors, ``X`` (n, J) the layer's units, ``G`` (n, J) their PG
    variables, ``prior_prec`` (J, d), ``mask`` (J, d). Precisions of rows sharing the
    full mask are formed in chunks of ``_ROW_CHUNK``; autoregressive rows use their own
    coefficients. Normals: ``rng.standard_normal(d_j)`` row by row.
    """
    J, d = mask.shape
    theta = np.zeros((J, d))
    xc = X - 0.5
    if mask.all():
        B = xc.T @ Z                                              # (J, d)
        idx = np.arange(d)
        for s in range(0, J, _ROW_CHUNK):
            sl = slice(s, min(s + _ROW_CHUNK, J))
            P = np.matmul(Z.T[None] * G[:, sl].T[:, None, :], Z)  # (c, d, d)
            P[:, idx, idx] += prior_prec[sl]
            for j in range(sl.start, sl.stop):
                theta[j] = _gaussian_from_precision(P[j - s], B[j], rng.standard_normal(d))
        return theta
    for j in range(J):
        cols = np.flatnonzero(mask[j])
        Zj = Z[:, cols]
        P = (Zj.T * G[:, j]) @ Zj
        P[np.diag_indices_from(P)] += prior_prec[j, cols]
        theta[j, cols] = _gaussian_from_precision(P, Zj.T @ xc[:, j],
                                                  rng.standard_normal(len(cols)))
    return theta


def _rows(X, sl):
    """Rows ``sl`` of ``X`` as a dense float64 array (a CSR ``X`` densifies only them)."""
    part = X[sl]
    if sp.issparse(part):
        part = part.toarray()
    return np.asarray(part, dtype=float)


def _chunks(n, chunk_size):
    """Consecutive row slices of at most ``chunk_size`` rows covering ``range(n)``."""
    size = max(1, int(chunk_size or n))
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


def _sweep_chunk(params, Xc, hidden_c, rng, sweep):
    """Steps 1-2 of the module docstring on one chunk of rows; ``hidden_c`` in place.

    Returns the chunk's Pólya-Gamma variables, one ``(c, J_l)`` array per layer.
    """
    L = params.n_hidden_layers
    layers = [Xc] + hidden_c
    psi = [_model.activation(params, layers, l) for l in range(L + 1)]
    gam = [draw_polya_gamma(p, rng) for p in psi]
    for l in range(1, L + 1):
        lat = None if params.lateral is None else params.lateral[l]
        # psi[l - 1] is updated in place; it starts from the current units
        sweep(layers[l], psi[l], layers[l - 1], psi[l - 1], gam[l - 1],
              params.weights[l - 1], lat, gam[l], rng)
    return gam


def accumulate_statistics(P, B, Z, x, G):
    """Add one chunk's terms of the row conditionals (Eq. 13-14), in place.

    ``P[j] += Z' diag(G[:, j]) Z`` (a rank-``c`` update of every row's precision) and
    ``B[j] += Z' (x[:, j] - 1/2)``, for ``Z`` (c, d) regressors, ``x`` (c, J) the
    units and ``G`` (c, J) their Pólya-Gamma variables.
    """
    J = G.shape[1]
    for s in range(0, J, _ROW_CHUNK):
        sl = slice(s, min(s + _ROW_CHUNK, J))
        P[sl] += np.matmul(Z.T[None] * G[:, sl].T[:, None, :], Z)
    B += (x - 0.5).T @ Z


def accumulate_statistics_fast(P32, B, Z, x, G):
    """:func:`accumulate_statistics` with the precisions in float32, by one GEMM per chunk.

    ``P32`` (J, d, d) float32 gets ``G' (Z z')``: the chunk's outer products
    ``z_n z_n'`` (c, d * d) weighted by every row's Pólya-Gamma variables in a single
    ``sgemm`` accumulating in place (no per-row products, no temporaries of the
    statistics' size). ``B`` stays float64. float32 is enough here: the entries are
    sums of ``gamma z_i z_k`` with ``z`` binary, each within a relative ``6e-8``, far
    below the posterior's spread (the comparison test bounds the effect on the draws).
    """
    J, d = P32.shape[0], Z.shape[1]
    Z32 = Z.astype(np.float32)
    ZZ = (Z32[:, :, None] * Z32[:, None, :]).reshape(len(Z), d * d)
    # P32 viewed as (d*d, J) in Fortran order is its C-order (J, d*d) transposed
    C = P32.reshape(J, d * d).T
    out = _sgemm(1.0, ZZ.T, G.astype(np.float32), beta=1.0, c=C, overwrite_c=1)
    if not np.shares_memory(out, P32):      # f2py had to copy (never for these layouts)
        C[...] = out
    B += (x - 0.5).T @ Z


def draw_rows_fast(P32, B, prior_prec, rng):
    """:func:`draw_rows` for rows with every coefficient free (no lateral weights).

    The same normals in the same order (one ``(J, d)`` array, which a Generator fills
    exactly as ``J`` successive ``standard_normal(d)`` calls). Each row's precision is
    factorised in float32 by LAPACK's ``spotrf`` called directly (no per-call checks
    of :func:`scipy.linalg.cholesky`); the two triangular solves run in float64 on the
    factor. The draw is then exact for a precision within float32 rounding of ``P``
    (a relative ``6e-8``, far below the posterior's spread); a row whose float32
    factorisation fails (a nearly singular precision, e.g. under a strongly
    shrinking prior) is factorised in float64 instead.
    """
    J, d = B.shape
    eps = rng.standard_normal((J, d))
    theta = np.empty((J, d))
    idx = np.arange(d)
    for j in range(J):
        A = P32[j].copy()
        A[idx, idx] += prior_prec[j].astype(np.float32)
        c, info = _spotrf(A, lower=1, clean=0, overwrite_a=1)
        if info == 0:
            c = c.astype(np.float64)
        else:
            A = P32[j].astype(np.float64)
            A[idx, idx] += prior_prec[j]
            c, info = _dpotrf(A, lower=1, clean=0, overwrite_a=1)
            if info:
                raise np.linalg.LinAlgError(f"the precision of row {j} is not positive "
                                            f"definite")
        y, _ = _dtrtrs(c, B[j], lower=1)
        theta[j], _ = _dtrtrs(c, y + eps[j], lower=1, trans=1)
    return theta


def draw_rows(P, B, prior_prec, mask, rng):
    """``theta_j ~ N(P_j^-1 B_j, P_j^-1)`` on the free entries ``mask[j]`` (Eq. 13-14).

    ``P`` (J, d, d) likelihood precisions (the prior's diagonal ``prior_prec`` (J, d) is
    added here), ``B`` (J, d). Normals: ``rng.standard_normal(d_j)`` row by row.
    """
    J, d = mask.shape
    theta = np.zeros((J, d))
    full = mask.all()
    for j in range(J):
        if full:
            Pj = np.array(P[j], dtype=float)
            Pj[np.diag_indices(d)] += prior_prec[j]
            theta[j] = _gaussian_from_precision(Pj, B[j], rng.standard_normal(d))
            continue
        cols = np.flatnonzero(mask[j])
        Pj = np.array(P[j][np.ix_(cols, cols)], dtype=float)
        Pj[np.diag_indices_from(Pj)] += prior_prec[j, cols]
        theta[j, cols] = _gaussian_from_precision(Pj, B[j, cols],
                                                  rng.standard_normal(len(cols)))
    return theta


def gibbs_iteration(params, X, hidden, prior_states, prior, prior_params, rng, *,
                    frozen_layers=(), kernels="cython", chunk_size=None, workspace=None):
    """One full Gibbs iteration (module docstring); returns ``(params, hidden, states)``.

    Parameters
    ----------
    params : SBNParams
    X : ndarray or CSR matrix of shape (n, D)
        Binary data; a sparse ``X`` is densified ``chunk_size`` rows at a time.
    hidden : list of ndarray
        ``[h_1, ..., h_L]`` (n, K_l) binary floats, updated in place.
    prior_states : list of dict
        ``prior_states[l]`` belongs to the weight block of layer ``l`` (its
        ``[W | lateral]`` part of the rows).
    prior : {"normal", "student_t", "tpbn"}
    prior_params : dict
    rng : numpy.random.Generator
    frozen_layers : tuple of int
        Layers whose rows are kept (layer-wise pre-training).
    kernels : {"cython", "numpy"}
        The hidden-unit sweep: the Cython kernel or its NumPy twin (same draws).
    chunk_size : int, optional
        Rows per chunk (default: all). The draws depend on it, not on the input's
        format: dense and CSR ``X`` give identical results.
    workspace : dict, optional
        Buffers kept between iterations (the float32 statistics of
        ``kernels="cython"``, ``J x d x d`` per layer): a fresh 100 MB array costs
        more in page faults than the products that fill it.

    Returns
    -------
    params, hidden, states
        The candidate parameters as a new object, the hidden units, the prior states.

    Notes
    -----
    Each chunk of rows gets its Pólya-Gamma variables (Eq. 12) and its hidden-unit
    sweep, then adds its rank-``c`` terms to every row's precision and mean
    (:func:`accumulate_statistics`): the data and the variables are never held whole,
    only the per-row statistics ``(J, d, d)`` of each layer. With one chunk the draws
    are those of the unchunked iteration.
    """
    sweep = {"cython": pg_hidden_sweep, "numpy": pg_hidden_sweep_numpy}[kernels]
    fast = kernels == "cython"
    accumulate = accumulate_statistics_fast if fast else accumulate_statistics
    L = params.n_hidden_layers
    free = [l for l in range(L + 1) if l not in frozen_layers]
    masks = {l: _model.row_mask(params, l) for l in free}
    P = {}
    for l, m in masks.items():
        shape = (m.shape[0], m.shape[1], m.shape[1])
        if fast and workspace is not None:
            buf = workspace.get(l)
            if buf is None or buf.shape != shape:
                buf = workspace[l] = np.empty(shape, dtype=np.float32)
            buf.fill(0.0)
            P[l] = buf
        else:
            P[l] = np.zeros(shape, dtype=np.float32 if fast else np.float64)
    B = {l: np.zeros(m.shape) for l, m in masks.items()}
    for sl in _chunks(X.shape[0], chunk_size):
        Xc = _rows(X, sl)
        hidden_c = [h[sl] for h in hidden]
        gam = _sweep_chunk(params, Xc, hidden_c, rng, sweep)
        layers = [Xc] + hidden_c
        for l in free:
            accumulate(P[l], B[l], _model.layer_regressors(params, layers, l), layers[l],
                       gam[l])
    new = params.copy()
    states = list(prior_states)
    for l in free:
        mask = masks[l]
        J, d = mask.shape
        prec = np.empty(mask.shape)
        prec[:, :-1] = prior_precision(prior, states[l], prior_params, (J, d - 1))
        prec[:, -1] = 1.0 / prior_params["bias_var"]
        if fast and mask.all():
            theta = draw_rows_fast(P[l], B[l], prec, rng)
        else:
            theta = draw_rows(P[l], B[l], prec, mask, rng)
        _model.set_layer_rows(new, l, theta)
        states[l] = gibbs_update_prior(prior, states[l], theta[:, :-1], mask[:, :-1],
                                       prior_params, rng)
    return new, hidden, states


def log_joint_mean(params, X, hidden, chunk_size=None):
    """Mean over rows of ``log p(x, h)`` (Eq. 7-8), a sparse ``X`` densified by chunks."""
    n = X.shape[0]
    total = 0.0
    for sl in _chunks(n, chunk_size):
        total += float(np.sum(_model.log_joint(params, [_rows(X, sl)] +
                                               [h[sl] for h in hidden])))
    return total / max(n, 1)


def pg_hidden_sweeps(params, X, hidden, rng, beta=1.0, kernels="cython"):
    """Augmented Gibbs over the hidden units only (weights fixed), likelihood tempered by ``beta``.

    ``sigmoid(psi)^(beta x) (1 - sigmoid(psi))^(beta (1 - x))`` is, by Eq. 10 with
    ``b = beta``, a mixture over ``gamma ~ PG(beta, 0)`` of ``exp(beta (x - 1/2) psi -
    gamma psi^2 / 2)``: so ``gamma ~ PG(beta, psi)`` and the usual sweep with
    ``x - 1/2`` scaled by ``beta`` leave ``p(h) p(x | h)^beta`` invariant. Leading axes
    of ``hidden`` are flattened into one sample axis; returns new arrays.
    """
    L = params.n_hidden_layers
    lead = hidden[0].shape[:-1]
    Xb = np.broadcast_to(X, lead + X.shape[-1:])
    flat = [np.array(h, dtype=float).reshape(-1, h.shape[-1]) for h in hidden]
    Xf = np.ascontiguousarray(Xb.reshape(-1, X.shape[-1]), dtype=float)
    layers = [Xf] + flat
    psi = [_model.activation(params, layers, l) for l in range(L + 1)]
    gam = [draw_polya_gamma(psi[0], rng, beta)] + [draw_polya_gamma(p, rng) for p in psi[1:]]
    x_eff = [0.5 + beta * (Xf - 0.5)] + flat
    sweep = {"cython": pg_hidden_sweep, "numpy": pg_hidden_sweep_numpy}[kernels]
    for l in range(1, L + 1):
        lat = None if params.lateral is None else params.lateral[l]
        below = x_eff[l - 1] if l == 1 else layers[l - 1]
        sweep(layers[l], psi[l], below, psi[l - 1], gam[l - 1], params.weights[l - 1], lat,
              gam[l], rng)
    return [h.reshape(lead + h.shape[-1:]) for h in layers[1:]]


def ais_transition_pg(state, beta, rng, *, params, X):
    """AIS transition (for :func:`skdgm.sbn._model.log_marginal_ais`): one augmented sweep.

    Any ``beta`` in ``[0, 1]`` works: ``PG(beta, psi)`` is drawn right for tiny and
    fractional shapes (and is 0 at ``beta = 0``), so schedules of any length are valid.
    """
    return pg_hidden_sweeps(params, X, list(state), rng, beta=float(beta))

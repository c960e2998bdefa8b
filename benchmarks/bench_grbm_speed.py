"""CPU time of one GaussianBernoulliRBM update against the float32 GEMM floor (issue 15).

Two shapes, both in one run: 64 x 256 (batch 100, K = 100 sampler steps) and
784 x 4096 (batch 512, K = 10). For each, one modified-CD update (positive phase,
chains from noise, statistics, clipped Adam step) at the estimator's defaults
(``sampler="gibbs"``, ``objective="joint"``, ``negative_phase="noise"``) is timed
against the matrix products such an update cannot avoid: ``3K + 4`` products of
a (B x N) by (N x M) size (two per sampler step plus one for the statistics of
every state, two to start the chains and two for the positive phase), each
timed as the mean of its three layouts (``V W^T``, ``H W``, ``H^T V``). The
floor and every variant are timed in alternation in the same process (CPU
seconds of one BLAS thread; medians), so the ratios hold on a busy machine.

Variants: the defaults with the Cython kernels; the same with their NumPy twins
(``_samplers.KERNELS = "numpy"``: the same chain, the random numbers drawn into
NumPy arrays); and Gibbs-Langevin with the closed-form K-step move
(``sampler="gibbs_langevin"``, the paper's sampler at our default inner move).
At 784 x 4096 the Adam step alone is also timed: its NumPy twin on float64
gradient arrays against the fused Cython pass the update uses.

Usage (one core, niced)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_grbm_speed.py \\
        > benchmarks/results/grbm_speed.txt

``--quick`` runs the small shape only; ``--repeat R`` sets the alternating
repetitions (default 15 for the small shape, 5 for the large one).
``--input-dtype float32 float64`` also hands the estimator float64 data (what most
users pass) while the floor stays the float32 products (issue 26: a review read
2.01x at 64 x 256 where this file read 1.58x). The variants above build the model
in the input's dtype (a float64 model for float64 input); ``--public`` adds the
public path, ``partial_fit`` on 10 minibatches per call timed per update, at the
defaults (``dtype="float32"``: the data are converted once per call and the model
trains in float32 whatever the input) and with ``dtype=None`` (the model follows the
input, the rule before issue 26)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 nice python benchmarks/bench_grbm_speed.py \
        --quick --input-dtype float32 float64 --public \
        > benchmarks/results/grbm_speed_float64.txt
"""

import argparse

import numpy as np

import _common
from skdgm.grbm import GaussianBernoulliRBM
from skdgm.grbm import _samplers

VARIANTS = [
    ("defaults (gibbs), Cython kernels", dict(), True),
    ("defaults (gibbs), NumPy twins", dict(), False),
    ("gibbs_langevin closed_form", dict(sampler="gibbs_langevin"), True),
]
# With --public (issue 26): the public path, per update, at the defaults (the
# float32 training dtype whatever the input's) and with dtype=None (a float64
# model for float64 input, the rule before issue 26).
PUBLIC = [
    ("partial_fit, defaults", dict()),
    ("partial_fit, dtype=None", dict(dtype=None)),
]


def _estimator(N, M, B, K, dtype, kw):
    est = GaussianBernoulliRBM(n_components=M, cd_steps=K, batch_size=B, n_iter=1,
                               random_state=0, negative_phase="noise", **kw)
    X = np.random.default_rng(0).standard_normal((B, N)).astype(dtype)
    est._check_hyper()
    est._validate_input(X, reset=True)
    est._init_params(N, np.dtype(dtype))
    est._resolve_negative_phase()
    rng = np.random.default_rng(1)
    return lambda: est._update(X, rng)


PUBLIC_CALL_UPDATES = 10      # updates per timed partial_fit call


def _public(N, M, B, K, input_dtype, kw):
    """``partial_fit`` on ``PUBLIC_CALL_UPDATES`` minibatches of ``input_dtype`` data.

    What a user calls: validation, the conversion to the training dtype (once per
    call), the updates and the per-call records. Returns a function giving the CPU
    seconds of one call divided by its updates' count.
    """
    est = GaussianBernoulliRBM(n_components=M, cd_steps=K, batch_size=B, n_iter=1,
                               random_state=0, negative_phase="noise", **kw)
    X = np.random.default_rng(0).standard_normal((PUBLIC_CALL_UPDATES * B, N))
    X = X.astype(input_dtype)
    est.partial_fit(X)
    return lambda: est.partial_fit(X)


def one_shape(N, M, B, K, repeat, dtype=np.float32, input_dtype=None, public=False):
    rng = np.random.default_rng(0)
    V = rng.standard_normal((B, N)).astype(dtype)
    W = rng.standard_normal((M, N)).astype(dtype)
    H = (rng.random((B, M)) < 0.5).astype(dtype)
    n_gemm = 3 * K + 4
    products = [lambda: V @ W.T, lambda: H @ W, lambda: H.T @ V]
    runs = {name: _estimator(N, M, B, K, input_dtype or dtype, kw) for name, kw, _ in VARIANTS}
    fast = {name: f for name, _, f in VARIANTS}
    per_call = dict.fromkeys(runs, 1)
    if public:
        for name, kw in PUBLIC:
            runs[name] = _public(N, M, B, K, input_dtype or dtype, kw)
            fast[name], per_call[name] = True, PUBLIC_CALL_UPDATES
    times = {"gemm": []}
    times.update({name: [] for name in runs})
    for name, run in runs.items():                      # warm-up
        _samplers.KERNELS = "cython" if fast[name] else "numpy"
        run()
    # a small product is timed over back-to-back calls (warm caches, as in the
    # sampler's loop), so the floor is not inflated by one cold call
    inner = max(1, int(2e7 // (B * N * M)))
    for _ in range(repeat):
        t = 0.0
        for f in products:
            _, dt = _common.cpu_timed(lambda: [f() for _ in range(inner)])
            t += dt / inner
        times["gemm"].append(t / 3)
        for name, run in runs.items():
            _samplers.KERNELS = "cython" if fast[name] else "numpy"
            _, dt = _common.cpu_timed(run)
            times[name].append(dt / per_call[name])
    _samplers.KERNELS = "cython"
    gemm = float(np.median(times["gemm"]))
    floor = n_gemm * gemm
    print(f"{N} x {M}, batch {B}, K = {K}, {np.dtype(dtype).name} floor, "
          f"{np.dtype(input_dtype or dtype).name} input, {repeat} alternating "
          f"repetitions (medians of CPU seconds)")
    print(f"  one {B}x{N}x{M} product: {gemm * 1e3:.3f} ms "
          f"({2 * B * N * M / gemm / 1e9:.1f} GFLOP/s); floor = {n_gemm} products = "
          f"{floor * 1e3:.2f} ms")
    for name in runs:
        t = float(np.median(times[name]))
        print(f"  {name:34s} {t * 1e3:9.2f} ms/update  {t / floor:5.2f} x floor", flush=True)
    print(flush=True)


def adam_alone(N, M, repeat):
    """The update's optimiser step alone, on one model's statistics: Adam's NumPy
    twin on float64 gradient arrays (the textbook expressions, what the update ran
    before issue 15) against the fused kernel ``Adam.step_difference``, alternated."""
    from skdgm._core.optim import Adam

    rng = np.random.default_rng(0)
    shapes = [(M, N), (M,), (N,), (N,)]
    params = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
    pos = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
    neg = [rng.standard_normal(sh).astype(np.float32) for sh in shapes]
    twin, fused = Adam(params, maximize=True), Adam(params, maximize=True)

    def textbook():
        grads = [np.subtract(a, b, dtype=np.float64) * 0.5 for a, b in zip(pos, neg)]
        return [c.astype(np.float32) for c in twin.step(params, grads, learning_rate=0.01)]

    def one_pass():
        return fused.step_difference(params, pos, neg, scale=0.5, learning_rate=0.01)

    times = {"textbook": [], "fused": []}
    textbook(), one_pass()
    for _ in range(repeat):
        for name, f in (("textbook", textbook), ("fused", one_pass)):
            times[name].append(_common.cpu_timed(f)[1])
    t = {k: float(np.median(v)) for k, v in times.items()}
    print(f"Adam step alone, {M} x {N} weights and biases, float32 parameters, float64 moments "
          f"({repeat} alternating repetitions):\n  NumPy twin on float64 gradients "
          f"{t['textbook'] * 1e3:7.2f} ms; fused Adam.step_difference {t['fused'] * 1e3:7.2f} ms; "
          f"ratio {t['textbook'] / t['fused']:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 64 x 256 shape only")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--input-dtype", nargs="+", default=["float32"],
                        choices=["float32", "float64"])
    parser.add_argument("--public", action="store_true",
                        help="also time partial_fit per update (issue 26)")
    args = parser.parse_args()
    _common.header(["targets (issue 15): defaults <= 2.0 x floor at 64 x 256, "
                    "<= 1.1 x floor at 784 x 4096"])
    for inp in args.input_dtype:
        one_shape(64, 256, 100, 100, args.repeat or 15, input_dtype=np.dtype(inp),
                  public=args.public)
    if not args.quick:
        for inp in args.input_dtype:
            one_shape(784, 4096, 512, 10, args.repeat or 5, input_dtype=np.dtype(inp),
                      public=args.public)
        adam_alone(784, 4096, args.repeat or 15)


if __name__ == "__main__":
    main()

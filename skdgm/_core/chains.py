"""Independent Markov chains through joblib.

:func:`run_chains` is the one place where skdgm fans work out: AIS run groups,
posterior chains, chunks of documents. It calls a module-level function once per
task with that task's own generator, through :class:`joblib.Parallel`, so the
caller's ``n_jobs`` and whatever backend is active (``loky``, ``threading``, or
``dask`` inside ``joblib.parallel_config(backend="dask")``) decide where it runs,
while the streams, and so the results, do not depend on either.
"""

import numpy as np
from joblib import Parallel, delayed

from .random import as_generator, spawn_seeds

__all__ = ["run_chains", "even_chunks"]


def _call_with_stream(func, task, seed, kwargs):
    return func(task, as_generator(seed), **kwargs)


def run_chains(func, tasks, *, random_state=None, seeds=None, n_jobs=None, **kwargs):
    """Run ``func(task, rng, **kwargs)`` for every task, each with its own stream.

    Parameters
    ----------
    func : callable
        A picklable (module-level) function ``func(task, rng, **kwargs)``.
    tasks : int or sequence
        The tasks, or a count ``n`` for ``tasks = range(n)``.
    random_state : None, int, SeedSequence, Generator or RandomState
        Source of the per-task streams (``SeedSequence.spawn``), ignored when
        ``seeds`` is given.
    seeds : sequence of SeedSequence, optional
        Explicit per-task seeds, e.g. kept from an earlier call to continue chains.
    n_jobs : int, optional
        Passed to :class:`joblib.Parallel`; ``None`` means what the active
        ``joblib.parallel_config`` says (1 outside any such context).
    **kwargs
        Shared, read-only arguments (large arrays reach process workers as
        read-only memmaps: kernels take ``const`` memoryviews).

    Returns
    -------
    results : list
        ``func``'s return values, in task order.
    """
    if isinstance(tasks, (int, np.integer)):
        tasks = range(int(tasks))
    tasks = list(tasks)
    if seeds is None:
        seeds = spawn_seeds(random_state, len(tasks))
    elif len(seeds) != len(tasks):
        raise ValueError(f"got {len(seeds)} seeds for {len(tasks)} tasks")
    if len(tasks) == 0:
        return []
    if len(tasks) == 1 or n_jobs == 1:
        # Same calls, same streams, no scheduler overhead.
        return [_call_with_stream(func, t, s, kwargs) for t, s in zip(tasks, seeds)]
    return Parallel(n_jobs=n_jobs)(
        delayed(_call_with_stream)(func, t, s, kwargs) for t, s in zip(tasks, seeds)
    )


def even_chunks(n, n_chunks):
    """Split ``range(n)`` into ``n_chunks`` contiguous slices of near-equal size.

    The split depends only on ``n`` and ``n_chunks`` (never on ``n_jobs``), which
    is what keeps chunked work reproducible across schedulers.
    """
    n_chunks = max(1, min(int(n_chunks), int(n))) if n > 0 else 0
    bounds = np.linspace(0, n, n_chunks + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]

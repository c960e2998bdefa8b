"""Random streams: one ``random_state`` in, independent per-chain streams out.

Every chain (an AIS run group, a posterior chain, a chunk of documents) gets its
own :class:`numpy.random.Generator` built from a child of one
:class:`numpy.random.SeedSequence`. Children are spawned in a fixed order that
depends only on the seed and the number of chains, never on ``n_jobs`` or on the
joblib backend, so results are bit-identical however the chains are scheduled.
"""

import numbers

import numpy as np

__all__ = [
    "as_generator",
    "check_seed_sequence",
    "spawn_generators",
    "spawn_seeds",
]


def check_seed_sequence(random_state):
    """Turn a scikit-learn style ``random_state`` into a ``SeedSequence``.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
        ``None`` draws fresh OS entropy; an int is the entropy itself (so the same
        int always gives the same streams); a ``Generator`` or ``RandomState`` is
        advanced to draw the entropy, as scikit-learn does with instances.

    Returns
    -------
    seed_seq : numpy.random.SeedSequence
    """
    if random_state is None:
        return np.random.SeedSequence()
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return np.random.SeedSequence(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**63, size=4).tolist())
    if isinstance(random_state, np.random.RandomState):
        return np.random.SeedSequence(random_state.randint(0, 2**31, size=4).tolist())
    raise ValueError(
        f"random_state must be None, an int, a SeedSequence, a numpy Generator or "
        f"RandomState; got {random_state!r}"
    )


def seed_for(random_state, purpose=None):
    """The root ``SeedSequence`` an estimator derives from its ``random_state``.

    An int and a ``SeedSequence`` are seeds: the same value gives the same streams at
    every call (a ``SeedSequence`` is copied, so spawning from the result never
    advances the caller's object). A ``Generator`` or ``RandomState`` is advanced,
    as scikit-learn does with instances, and ``None`` draws fresh entropy.

    Parameters
    ----------
    random_state : None, int, SeedSequence, Generator or RandomState
    purpose : int, optional
        Appended to the spawn key of a seed, so that evaluation streams (AIS,
        sampling) never coincide with the training streams of the same seed.

    Returns
    -------
    seed_seq : numpy.random.SeedSequence
    """
    if isinstance(random_state, np.random.SeedSequence):
        key = tuple(random_state.spawn_key) + (() if purpose is None else (int(purpose),))
        return np.random.SeedSequence(random_state.entropy, spawn_key=key,
                                      pool_size=random_state.pool_size)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seq = check_seed_sequence(random_state)
        if purpose is None:
            return seq
        return np.random.SeedSequence(seq.entropy, spawn_key=(int(purpose),))
    return check_seed_sequence(random_state)


# Accepted by every estimator's ``random_state`` (its _parameter_constraints entry).
RANDOM_STATE_CONSTRAINT = ["random_state", np.random.Generator, np.random.SeedSequence]


def spawn_seeds(random_state, n):
    """``n`` independent child ``SeedSequence`` objects (cheap to pickle).

    Spawning from a ``SeedSequence`` that is kept (as estimators keep theirs
    between ``partial_fit`` calls) advances its child counter, so successive calls
    give fresh, still reproducible, streams.
    """
    if n < 0:
        raise ValueError(f"number of streams must be >= 0, got {n}")
    return check_seed_sequence(random_state).spawn(int(n))


def as_generator(seed):
    """A ``Generator`` (PCG64) from a ``SeedSequence``, an int or a Generator."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.Generator(np.random.PCG64(check_seed_sequence(seed)))


def spawn_generators(random_state, n):
    """``n`` independent ``Generator`` objects, one per chain."""
    return [as_generator(s) for s in spawn_seeds(random_state, n)]

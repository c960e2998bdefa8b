"""Random streams and chain parallelism: identical results for any n_jobs and backend."""

import sys

import numpy as np
import pytest
from joblib import parallel_config
import cloudpickle  # joblib >= 1.6 and dask both pickle functions with it

from skdgm._core import _random_fast
from skdgm._core.mcmc import bernoulli
from skdgm._core.ais import annealed_importance_sampling
from skdgm._core.chains import even_chunks, run_chains
from skdgm._core.random import (as_generator, check_seed_sequence, spawn_generators,
                                spawn_seeds)
from _rbm_reference import RBMPath, random_rbm

import _rbm_reference

# Workers of process backends must unpickle the tests' functions: ship them by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])
cloudpickle.register_pickle_by_value(_rbm_reference)


def test_cython_draws_equal_numpy_draws():
    r1, r2 = spawn_generators(11, 1) + spawn_generators(11, 1)
    np.testing.assert_array_equal(_random_fast.standard_normal(r1, 1000),
                                  r2.standard_normal(1000))
    shape = np.array([0.1, 0.5, 1.0, 2.5, 40.0])
    np.testing.assert_array_equal(_random_fast.standard_gamma(r1, shape),
                                  r2.standard_gamma(shape))
    p = np.random.default_rng(0).random((7, 9))
    np.testing.assert_array_equal(_random_fast.bernoulli(r1, p),
                                  bernoulli(p, r2, dtype=np.uint8))


def test_cython_kernels_accept_read_only_input():
    shape = np.array([1.0, 2.0])
    shape.setflags(write=False)  # what joblib's memmaps look like to a worker
    _random_fast.standard_gamma(as_generator(0), shape)


def test_seed_handling():
    a = [g.random() for g in spawn_generators(5, 3)]
    b = [g.random() for g in spawn_generators(5, 3)]
    assert a == b and len(set(a)) == 3
    assert spawn_generators(None, 1)[0].random() != spawn_generators(None, 1)[0].random()
    rs = np.random.RandomState(0)
    assert check_seed_sequence(rs).entropy != check_seed_sequence(rs).entropy
    ss = np.random.SeedSequence(1)
    first, second = spawn_seeds(ss, 1), spawn_seeds(ss, 1)  # a kept sequence advances
    assert first[0].spawn_key != second[0].spawn_key
    for bad in (-1, "seed", 1.5, True):
        with pytest.raises(ValueError):
            check_seed_sequence(bad)


def _chain(task, rng, scale):
    # A Cython draw and a NumPy draw from the same per-chain stream.
    return scale * np.concatenate([_random_fast.standard_normal(rng, 5), rng.random(3)]) + task


def _run_everything(n_jobs):
    chains = run_chains(_chain, 6, random_state=123, n_jobs=n_jobs, scale=2.0)
    W, a, b = random_rbm(10, 6, scale=1.0, seed=0)
    path = RBMPath(W, a, b)
    ais = annealed_importance_sampling(path.log_density, path.transition, path.sample_base,
                                       path.log_z0, 50, 24, n_groups=6, random_state=7,
                                       n_jobs=n_jobs)
    return np.concatenate([np.ravel(chains), ais.log_weights])


@pytest.fixture(scope="module")
def reference():
    return _run_everything(n_jobs=1)


@pytest.mark.parametrize("backend", ["loky", "threading"])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_identical_across_joblib_backends(reference, backend, n_jobs):
    with parallel_config(backend=backend):
        np.testing.assert_array_equal(_run_everything(n_jobs), reference)


def test_identical_on_a_dask_cluster(reference):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            with parallel_config(backend="dask"):
                np.testing.assert_array_equal(_run_everything(n_jobs=2), reference)
                np.testing.assert_array_equal(_run_everything(n_jobs=None), reference)


def test_run_chains_bookkeeping():
    assert run_chains(_chain, [], random_state=0) == []
    seeds = spawn_seeds(3, 2)
    out = run_chains(_chain, [0, 10], seeds=seeds, scale=1.0)
    again = run_chains(_chain, [0, 10], seeds=seeds, scale=1.0)
    np.testing.assert_array_equal(out, again)
    with pytest.raises(ValueError, match="seeds"):
        run_chains(_chain, [0, 1, 2], seeds=seeds, scale=1.0)


def test_even_chunks():
    parts = even_chunks(10, 3)
    assert [p.stop - p.start for p in parts] in ([3, 4, 3], [3, 3, 4], [4, 3, 3])
    assert parts[0].start == 0 and parts[-1].stop == 10
    assert len(even_chunks(2, 5)) == 2
    assert even_chunks(0, 3) == []

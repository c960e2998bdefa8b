"""Tests of the shared binary-state enumeration (``skdgm._core.exact``)."""

from itertools import product

import numpy as np
import pytest

from skdgm._core.exact import MAX_EXACT_UNITS, binary_states, iter_binary_states


@pytest.mark.parametrize("n", [0, 1, 3, 6])
def test_binary_states_is_lexicographic_product(n):
    expected = np.array(list(product((0.0, 1.0), repeat=n))).reshape(1 << n, n)
    got = binary_states(n)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


def test_bit_orders():
    # row i is the binary expansion of i: column j holds bit j (lsb_first) or bit n-1-j
    bits = 1 << np.arange(4)
    np.testing.assert_array_equal(binary_states(4, lsb_first=True) @ bits, np.arange(16))
    np.testing.assert_array_equal(binary_states(4) @ bits[::-1], np.arange(16))


@pytest.mark.parametrize("lsb_first", [False, True])
@pytest.mark.parametrize("chunk", [1, 5, 16, 100])
def test_chunks_concatenate_to_the_whole(chunk, lsb_first):
    blocks = list(iter_binary_states(4, chunk, lsb_first=lsb_first))
    assert all(len(b) <= chunk for b in blocks)
    np.testing.assert_array_equal(np.concatenate(blocks), binary_states(4, lsb_first=lsb_first))


def test_range_and_dtype():
    np.testing.assert_array_equal(binary_states(3, start=2, stop=5), binary_states(3)[2:5])
    assert binary_states(3, dtype=np.int8).dtype == np.int8


@pytest.mark.parametrize("kwargs", [dict(n=-1), dict(n=3, start=4, stop=2),
                                    dict(n=3, stop=9)])
def test_bad_arguments_raise(kwargs):
    with pytest.raises(ValueError, match="units|start"):
        binary_states(**kwargs)
    with pytest.raises(ValueError, match="chunk"):
        next(iter_binary_states(3, 0))


def test_every_wing_uses_the_shared_limit():
    from skdgm.dbm import _bounds as dbm_bounds
    from skdgm.grbm import _model as grbm_model
    from skdgm.sbn import _estimator as sbn_est
    assert MAX_EXACT_UNITS == 16
    assert dbm_bounds.MAX_EXACT_UNITS is MAX_EXACT_UNITS
    assert grbm_model.EXACT_MAX_HIDDEN is MAX_EXACT_UNITS
    assert sbn_est.MAX_EXACT_UNITS is MAX_EXACT_UNITS

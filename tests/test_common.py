"""Every public estimator through scikit-learn's common checks, with cheap settings."""

from sklearn.utils.estimator_checks import parametrize_with_checks

import skdgm

# Cheap settings per estimator: the common checks fit dozens of times.
CHEAP = {}

# Opt-outs need a reason, per estimator: {check_name: reason}.
EXPECTED_FAILED = {}


def _instances():
    return [getattr(skdgm, name)(**CHEAP.get(name, {})) for name in skdgm.__all__]


def _expected_failed(estimator):
    return EXPECTED_FAILED.get(type(estimator).__name__, {})


@parametrize_with_checks(_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

"""Every public estimator through scikit-learn's common checks, with cheap settings.

The binary models (``DBMCAST``, ``BayesianSBN``) run with ``binarize=0.5``, so the
continuous data many checks feed them is thresholded and every check runs for real.
The opted-out checks are listed in ``EXPECTED_FAILURES``, each with its reason; there
must be at most six across the four estimators.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

import skdgm

# Cheap settings per estimator: the common checks fit dozens of times.
CHEAP = {
    "GaussianBernoulliRBM": dict(n_components=4, cd_steps=3, langevin_steps=2, n_iter=2,
                                 batch_size=16, random_state=0),
    "BayesianSBN": dict(n_components=(3,), n_iter=2, burn_in=1, n_posterior_samples=2,
                        random_state=0, binarize=0.5),
    "DeepLDA": dict(n_components=(3, 2), n_iter=2, batch_size=50, local_burn_in=2,
                    local_samples=2, n_posterior_samples=2, random_state=0,
                    round_counts=True),
    "DBMCAST": dict(n_components=(6, 4), n_iter=2, n_chains=10, batch_size=50,
                    pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3,
                    random_state=0, binarize=0.5),
}


def _instances():
    return [getattr(skdgm, name)(**CHEAP.get(name, {})) for name in skdgm.__all__]


_CHUNKED_STREAMS = (
    "transform and score_samples are Monte Carlo estimates; their random streams are "
    "assigned per fixed chunk of rows (so that n_jobs never changes a result), hence a "
    "subset or a permutation of the rows gets other draws: equal in distribution, not "
    "bit for bit"
)
EXPECTED_FAILURES = {
    "DeepLDA": {"check_methods_subset_invariance": _CHUNKED_STREAMS,
                "check_methods_sample_order_invariance": _CHUNKED_STREAMS},
}


def _expected_failed(estimator):
    name = type(estimator).__name__
    return dict(EXPECTED_FAILURES.get(name, {}))


@parametrize_with_checks(_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_few_opt_outs_each_with_a_reason():
    reasons = [r for checks in EXPECTED_FAILURES.values() for r in checks.values()]
    assert len(reasons) <= 6
    assert all(isinstance(r, str) and len(r) > 20 for r in reasons)

"""Every public estimator through scikit-learn's common checks, with cheap settings.

Binary-only models (``DBMCAST``, ``BayesianSBN``) reject the continuous data many
checks feed them, by design: those checks are listed below with that reason, and
each wing's own test file runs the *whole* check suite on a test-only subclass that
binarises its input, so the API contract is still checked in full.
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

import skdgm

# Cheap settings per estimator: the common checks fit dozens of times.
CHEAP = {
    "GaussianBernoulliRBM": dict(n_components=4, cd_steps=3, langevin_steps=2, n_iter=2,
                                 batch_size=16, random_state=0),
    "BayesianSBN": dict(hidden_layer_sizes=(3,), n_iter=2, burn_in=1, n_posterior_samples=2,
                        batch_size=20, random_state=0),
    "DeepLDA": dict(n_components=(3, 2), n_iter=2, batch_size=50, local_burn_in=2,
                    local_samples=2, n_posterior_samples=2, random_state=0),
    "DBMCAST": dict(hidden_layer_sizes=(6, 4), n_iter=2, n_chains=10, batch_size=50,
                    pretrain_n_iter=1, n_temperatures=4, beta_min=0.6, swap_interval=3,
                    random_state=0),
}

_FEEDS_CONTINUOUS = (
    "the check feeds continuous data, which a binary-only model rejects by design with "
    "a ValueError; the full contract runs on a binarising subclass in the wing's tests"
)
_CONTINUOUS_DATA_CHECKS = [
    "check_fit_score_takes_y", "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
    "check_readonly_memmap_input", "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit", "check_estimators_dtypes",
    "check_dtype_object", "check_pipeline_consistency", "check_estimators_nan_inf",
    "check_estimators_pickle", "check_f_contiguous_array_estimator",
    "check_transformer_data_not_an_array", "check_transformer_general",
    "check_transformer_preserve_dtypes", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_fit2d_1sample", "check_fit2d_1feature",
    "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
    "check_n_features_in", "check_fit2d_predict1d",
]
BINARY_ONLY = {"DBMCAST", "BayesianSBN"}


def _instances():
    return [getattr(skdgm, name)(**CHEAP.get(name, {})) for name in skdgm.__all__]


_CHUNKED_STREAMS = (
    "transform and score_samples are Monte Carlo estimates; their random streams are "
    "assigned per fixed chunk of rows (so that n_jobs never changes a result), hence a "
    "subset or a permutation of the rows gets other draws: equal in distribution, not "
    "bit for bit"
)
OTHER_EXPECTED_FAILURES = {
    "DeepLDA": {"check_methods_subset_invariance": _CHUNKED_STREAMS,
                "check_methods_sample_order_invariance": _CHUNKED_STREAMS},
}


def _expected_failed(estimator):
    name = type(estimator).__name__
    failures = dict(OTHER_EXPECTED_FAILURES.get(name, {}))
    if name in BINARY_ONLY:
        failures.update({check: _FEEDS_CONTINUOUS for check in _CONTINUOUS_DATA_CHECKS})
    return failures


@parametrize_with_checks(_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)

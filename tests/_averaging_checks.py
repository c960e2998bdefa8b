"""The check every estimator's ``average`` option must pass (DBMCAST, the GRBM)."""

import numpy as np

from skdgm._core.averaging import ema_reference


def assert_fitted_is_the_average_of_the_iterates(make, X, raw_params, fitted, start=(),
                                                  decay=0.8, n_updates=12):
    """One update per ``partial_fit`` (batch = all rows), so every iterate is seen.

    ``make(**kw)`` builds the estimator, ``raw_params(est)`` reads its raw iterate,
    ``fitted(est)`` its fitted parameters; ``start`` holds the parameters the
    average is seeded with, if any. The fitted parameters must equal the reference
    exponential average of ``start`` and the iterates, and ``transform`` must read
    them (differ from the unaveraged fit's).
    """
    est = make(average=decay, batch_size=X.shape[0])
    iterates = []
    for _ in range(n_updates):
        est.partial_fit(X)
        iterates.append([a.copy() for a in raw_params(est)])
    assert est.n_updates_ == n_updates
    want = ema_reference(list(start) + iterates, decay)
    for got, ref in zip(fitted(est), want, strict=True):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14)
    raw = make(batch_size=X.shape[0])
    for _ in range(n_updates):
        raw.partial_fit(X)
    assert not np.allclose(est.transform(X), raw.transform(X))

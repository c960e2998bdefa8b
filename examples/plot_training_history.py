"""
=====================================
Reading ``history_``: training curves
=====================================

Every estimator records, per pass over the data, the figures its ``verbose=1`` line
prints, in ``history_`` (a dict of lists). This example plots them for two
estimators on the digits that ship with scikit-learn:

* a :class:`~skdgm.GaussianBernoulliRBM` with ``early_stopping=True``: its
  reconstruction error on the training rows and its held-out log-likelihood per
  pass (exact here: 16 hidden units are enumerated), with the pass whose
  parameters it kept;
* a :class:`~skdgm.DBMCAST`: its reconstruction error and the convergence
  diagnostics of its persistent negative-phase chains, the rank-normalised
  split-R-hat and the bulk effective sample size (Vehtari et al. 2021) of their
  energy over the last updates.

The settings are cheap (a few seconds each) so that the example builds with the
documentation; see :ref:`choosing` for what the defaults do.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from skdgm import DBMCAST, GaussianBernoulliRBM

warnings.simplefilter("ignore", ConvergenceWarning)
X = load_digits().data
rng = np.random.default_rng(0)
# dequantise (uniform noise on the integer pixels) and standardise for the GRBM
Z = X + rng.random(X.shape)
Z = (Z - Z.mean(0)) / Z.std(0)

grbm = GaussianBernoulliRBM(n_components=16, n_iter=40, early_stopping=True,
                            random_state=0).fit(Z)
dbm = DBMCAST(n_iter=30, binarize=7.5, random_state=0).fit(X)

fig, axes = plt.subplots(2, 2, figsize=(10, 7))
passes = np.arange(1, grbm.n_iter_ + 1)
axes[0, 0].plot(passes, grbm.history_["recon_error"])
axes[0, 0].set(title="GRBM: reconstruction error (training rows)", xlabel="pass")
axes[0, 1].plot(passes, grbm.history_["validation_score"], label="held-out log p(v)")
axes[0, 1].axvline(grbm.best_iter_, color="k", ls=":", label=f"kept: pass {grbm.best_iter_}")
axes[0, 1].set(title="GRBM: early stopping's validation score", xlabel="pass",
               ylabel="nats per row")
axes[0, 1].legend()

passes = np.arange(1, dbm.n_iter_ + 1)
axes[1, 0].plot(passes, dbm.history_["reconstruction_error"])
axes[1, 0].set(title="DBM: reconstruction error", xlabel="pass")
ax = axes[1, 1]
ax.plot(passes, dbm.history_["energy_split_rhat"], color="C0")
ax.axhline(1.01, color="C0", ls=":")
ax.set(title="DBM chains: R-hat (left) and bulk ESS (right)", xlabel="pass",
       ylabel="rank-normalised split-R-hat")
ax2 = ax.twinx()
ax2.plot(passes, dbm.history_["energy_ess"], color="C1")
ax2.set_ylabel("bulk ESS of the chains' energy")
fig.tight_layout()
plt.show()

print(f"GRBM: {grbm.n_iter_} passes, best held-out log p(v) {grbm.best_validation_score_:.2f} "
      f"at pass {grbm.best_iter_}")
print(f"DBM {'-'.join(map(str, (X.shape[1],) + dbm.n_components_))}: last R-hat "
      f"{dbm.history_['energy_split_rhat'][-1]:.3f}, bulk ESS {dbm.history_['energy_ess'][-1]:.0f}")

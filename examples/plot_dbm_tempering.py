"""
===================================================
DBM coupled adaptive simulated tempering, traced
===================================================

:class:`~skdgm.DBMCAST` (Salakhutdinov 2010) couples each persistent "slow" Gibbs
chain of the negative phase to a "fast" chain that performs adaptive simulated
tempering: it moves between inverse temperatures ``1 = beta_1 > ... > beta_K``,
and the Wang-Landau weights ``log g_k`` adapt until every temperature is visited
equally often. This example fits the default CAST sampler on binarised digits and
plots what ``sampler_history_`` and ``history_`` record per pass:

* the fraction of the fast chains' steps spent at each temperature (flat means
  the weights have adapted; the paper's target is a flat histogram);
* the adaptive log weights ``log g_k`` (``log g_1 = 0``) as they settle;
* the flatness figure (``K * min_k occupancy``, 1 when flat) and the number of
  slow/fast swaps per pass.

Cheap settings (a few seconds): 40 passes of 1,797 images.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from skdgm import DBMCAST

warnings.simplefilter("ignore", ConvergenceWarning)
X = load_digits().data
dbm = DBMCAST(n_iter=40, binarize=7.5, random_state=0).fit(X)

occupancy = np.array(dbm.sampler_history_["temperature_occupancy"])   # passes x K
log_g = np.array(dbm.sampler_history_["adaptive_log_weights"])
passes = np.arange(1, len(occupancy) + 1)

fig, axes = plt.subplots(2, 2, figsize=(10, 7))
im = axes[0, 0].imshow(occupancy.T, aspect="auto", origin="lower", cmap="viridis",
                       extent=(0.5, len(passes) + 0.5, 0.5, occupancy.shape[1] + 0.5))
axes[0, 0].set(title="fraction of fast-chain steps at each temperature",
               xlabel="pass", ylabel="temperature index k (1: beta = 1)")
fig.colorbar(im, ax=axes[0, 0])
axes[0, 1].plot(passes, log_g)
axes[0, 1].set(title="Wang-Landau log weights log g_k, one line per k", xlabel="pass")
axes[1, 0].plot(passes, dbm.history_["temperature_flatness"])
axes[1, 0].axhline(1.0, color="k", ls=":")
axes[1, 0].set(title="flatness K * min_k occupancy (1 = flat)", xlabel="pass")
axes[1, 1].plot(passes, dbm.history_["n_swaps"])
axes[1, 1].set(title="slow/fast swaps per pass", xlabel="pass")
fig.tight_layout()
plt.show()

print(f"{len(occupancy[0])} temperatures; occupancy in the last pass: "
      + " ".join(f"{v:.2f}" for v in occupancy[-1]))
print(f"flatness in the last pass: {dbm.history_['temperature_flatness'][-1]:.2f}")

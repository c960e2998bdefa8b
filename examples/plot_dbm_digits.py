"""
=========================================================
A deep Boltzmann machine on binarised digits, with CAST
=========================================================

A two-hidden-layer :class:`skdgm.DBMCAST` is pre-trained greedily (doubled
weights) and then trained by stochastic approximation whose negative phase is
Coupled Adaptive Simulated Tempering (Salakhutdinov 2010): slow Gibbs chains
drive the gradient while fast adaptive simulated tempering chains wander across
temperatures and hand temperature-1 states to their slow partners.

We compare it with plain persistent Gibbs chains (``sampler="sap"``) at the same
number of updates, then look at the temperature occupancy and the Wang-Landau
weights CAST recorded, and at samples from Gibbs and from adaptive ST.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skdgm.dbm import DBMCAST

X = (load_digits().data > 7).astype(np.float64)
X_train, X_test = train_test_split(X, test_size=0.25, random_state=0)

params = dict(n_components=(40, 20), n_chains=50, batch_size=50, n_iter=15,
              pretrain_n_iter=30, pretrain_learning_rate=0.1, learning_rate=0.01,
              n_temperatures=10, beta_min=0.8, swap_interval=20,
              n_ais_betas=500, n_ais_runs=50, random_state=0)
models = {s: DBMCAST(sampler=s, **params).fit(X_train) for s in ("sap", "cast")}
for name, m in models.items():
    print(f"{name}: test lower bound {m.score(X_test):.2f} nats "
          f"(log Z = {m.log_partition_:.2f} +- {m.log_partition_std_:.2f})")

# %%
# Progress while fitting
# ----------------------
# ``history_`` holds one scalar per pass for every figure of the ``verbose=1``
# line. ``reconstruction_error`` (nats per image, lower is better) is the cheap
# fit-quality figure; the likelihood itself needs ``log Z`` and is scored after
# the fit. ``time_left`` is the fit's own estimate of the time remaining.
fig, axes = plt.subplots(1, 2, figsize=(8, 3))
for name, m in models.items():
    axes[0].plot(m.history_["reconstruction_error"], label=name)
    axes[1].plot(m.history_["time"], m.history_["time_left"], label=name)
axes[0].set(xlabel="pass", ylabel="nats per image", title="reconstruction error")
axes[1].set(xlabel="elapsed (s)", ylabel="estimated time left (s)", title="time left")
axes[0].legend()
fig.tight_layout()

# %%
# What the Wang-Landau weights did
# --------------------------------
# The fast chains should spend about the same time at every temperature (a flat
# histogram); the adaptive weights ``log g_k`` track ``log Z_k - log Z_1``.
cast = models["cast"]
occ = np.array(cast.sampler_history_["temperature_occupancy"])
log_g = np.array(cast.sampler_history_["adaptive_log_weights"])
fig, axes = plt.subplots(1, 2, figsize=(8, 3))
axes[0].bar(np.arange(occ.shape[1]), occ[-1])
axes[0].axhline(1 / occ.shape[1], color="k", ls="--")
axes[0].set(xlabel="temperature index k", ylabel="fraction of steps",
            title="occupancy, last pass")
axes[1].plot(log_g[-1], "o-")
axes[1].set(xlabel="temperature index k", ylabel="log g_k", title="adaptive weights")
fig.tight_layout()

# %%
# Samples: Gibbs against adaptive simulated tempering
# ---------------------------------------------------
fig, axes = plt.subplots(2, 1, figsize=(8, 2.4))
for ax, sampler in zip(axes, ("gibbs", "adaptive_st")):
    S = cast.sample(12, sampler=sampler, n_steps=500, random_state=1)
    ax.imshow(S.reshape(12, 8, 8).transpose(1, 0, 2).reshape(8, 96), cmap="gray_r")
    ax.set_axis_off()
    ax.set_title(sampler, fontsize=9)
fig.tight_layout()
plt.show()

"""
=====================================================
Gaussian-Bernoulli RBM on the digits: fit and sample
=====================================================

Fit a :class:`~skdgm.GaussianBernoulliRBM` with modified contrastive divergence
and the Gibbs-Langevin sampler (its K-step inner move drawn in closed form, the
same kernel as simulating the steps, only faster) on scikit-learn's 8x8 digits
(standardised per pixel), print the held-out log-likelihood (``score``: exact ``log Z`` for at most
16 hidden units, annealed importance sampling above), and draw digits from
Gaussian noise with the same sampler.

Run as a script to also save the grid of samples as ``grbm_digits_samples.png``.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skdgm import GaussianBernoulliRBM

X, _ = load_digits(return_X_y=True)
X_train, X_test = train_test_split(X, test_size=0.2, random_state=0)
scaler = StandardScaler().fit(X_train)
# Pixels that are constant in the training set get a unit scale from
# StandardScaler; add a little noise so no variance collapses to its floor
# (which would make the log-likelihood a statement about those pixels only).
rng = np.random.default_rng(0)
Z_train = scaler.transform(X_train) + 0.05 * rng.standard_normal(X_train.shape)
Z_test = scaler.transform(X_test) + 0.05 * rng.standard_normal(X_test.shape)

t0 = time.perf_counter()
grbm = GaussianBernoulliRBM(
    n_components=64, sampler="gibbs_langevin", langevin_inner="closed_form",
    cd_steps=20, langevin_steps=5,
    learning_rate=0.05, optimizer="sgd", n_iter=10, batch_size=100, n_ais_runs=64,
    n_ais_betas=500,
    random_state=0,
).fit(Z_train)
print(f"fit: {time.perf_counter() - t0:.1f} s, mean log-variance "
      f"{grbm.history_['mean_log_var'][-1]:.2f}")

log_z, se = grbm.log_partition()
print(f"log Z = {log_z:.2f} +- {se:.2f} (AIS)")
print(f"train log-likelihood: {grbm.score(Z_train):.2f} nats per image")
print(f"test  log-likelihood: {grbm.score(Z_test):.2f} nats per image")

samples = scaler.inverse_transform(grbm.sample(48, n_steps=100, random_state=0))
fig, axes = plt.subplots(6, 8, figsize=(6, 4.5))
for ax, img in zip(axes.ravel(), samples):
    ax.imshow(np.clip(img, 0, 16).reshape(8, 8), cmap="gray_r", vmin=0, vmax=16)
    ax.set_axis_off()
fig.suptitle("GRBM samples drawn from noise (Gibbs-Langevin, 100 steps)")

if __name__ == "__main__":
    fig.savefig("grbm_digits_samples.png", dpi=100)
    print("saved grbm_digits_samples.png")

# %%
# The chain as it moves away from the noise
# -----------------------------------------
# Eight chains started in N(0, I) noise (the top row), after 1, 5, 20 and 100
# sampler steps (each row a fresh set of chains run for that many steps): the
# noise is pulled onto digit-like images within a few steps.
steps = [0, 1, 5, 20, 100]
fig2, axes2 = plt.subplots(len(steps), 8, figsize=(6, 4.2))
for row, n in zip(axes2, steps):
    if n == 0:
        chains = np.random.default_rng(1).standard_normal((8, X.shape[1]))
    else:
        chains = grbm.sample(8, n_steps=n, random_state=1)
    for ax, img in zip(row, scaler.inverse_transform(chains)):
        ax.imshow(np.clip(img, 0, 16).reshape(8, 8), cmap="gray_r", vmin=0, vmax=16)
        ax.set_axis_off()
    row[0].set_title(f"{n} steps", fontsize=8, loc="left")
fig2.suptitle("Eight Gibbs-Langevin chains started in N(0, I) noise")

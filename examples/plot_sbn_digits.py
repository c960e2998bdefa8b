"""
===========================================================
A Bayesian sigmoid belief net on binarised digits
===========================================================

A one-hidden-layer :class:`skdgm.BayesianSBN` with the three-parameter beta
normal (horseshoe) prior is trained on binarised 8x8 digits by mean-field VB
(Gan et al. 2015, Sec. 3.2). We watch the augmented variational bound rise
(it can never fall), count the hidden units the shrinkage prior kept, look at
the learned features and at ancestral samples, compute the exact test
log-likelihood (16 hidden units can be enumerated), and fill in the missing
lower half of test digits by posterior sampling (Sec. 5.2): ``impute`` returns
each missing pixel's probability, averaged over the sweeps (Rao-Blackwellised),
which we threshold at 1/2.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skdgm import BayesianSBN

X = (load_digits().data > 7).astype(np.float64)
X_train, X_test = train_test_split(X, test_size=0.25, random_state=0)

sbn = BayesianSBN((16,), inference="vb", prior="tpbn", n_iter=20, n_posterior_samples=3,
                  random_state=0)
sbn.fit(X_train)
print(f"active hidden units: {sbn.n_active_units_[0]} of 16")
print(f"exact test log-likelihood: {sbn.score(X_test):.2f} nats per digit")

# %%
# The bound per training digit, sweep by sweep
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(sbn.history_["bound"], label="augmented bound L' (exact)")
ax.plot(sbn.history_["elbo"], label="bound of Eq. 15 (Monte Carlo)")
ax.set_xlabel("VB sweep")
ax.set_ylabel("nats per digit")
ax.legend()
fig.tight_layout()

# %%
# Learned features (columns of W^(1)), ancestral samples, and imputations
X_missing = X_test[:8].copy()
X_missing[:, 32:] = np.nan
prob = sbn.impute(X_missing)
filled = (prob > 0.5).astype(float)
samples = sbn.sample(8, random_state=0)
order = np.argsort(-np.abs(sbn.coefs_[0]).max(axis=0))

fig, axes = plt.subplots(4, 8, figsize=(8, 4.4))
rows = [("features", sbn.coefs_[0][:, order[:8]].T), ("samples", samples),
        ("lower half hidden", np.nan_to_num(X_missing, nan=0.5)), ("P(pixel on)", prob)]
for r, (name, images) in enumerate(rows):
    for c in range(8):
        axes[r, c].imshow(images[c].reshape(8, 8), cmap="gray_r" if r else "RdBu")
        axes[r, c].set_xticks([])
        axes[r, c].set_yticks([])
    axes[r, 0].set_ylabel(name, fontsize=8)
fig.tight_layout()
acc = np.mean(filled[:, 32:] == X_test[:8, 32:])
print(f"imputed pixels correct: {acc:.1%}")
plt.show()

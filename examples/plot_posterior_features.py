"""
=================================================================
Posterior-averaged features for a downstream classifier
=================================================================

A :class:`skdgm.BayesianSBN` trained by Pólya-Gamma Gibbs sampling (Gan et al.
2015, Sec. 3.1) keeps ``n_posterior_samples`` thinned samples of its parameters,
and :meth:`~skdgm.BayesianSBN.transform` returns the posterior mean of the first
hidden layer, ``E[h | x]``, averaged over them (exact per sample: 12 hidden units
are enumerated). Here a :class:`~sklearn.linear_model.LogisticRegression` in a
:class:`~sklearn.pipeline.Pipeline` is fed either

* the features averaged over 10 posterior samples (``n_posterior_samples=10``), or
* the features of a single sample: the same Gibbs chain, same seed, keeping only
  its last sample (``n_posterior_samples=1``; the samples are taken without
  touching the chain, so both fits see the very same draws),

on binarised 8x8 digits, for three seeds of the sampler. We compare accuracy and
calibration: the log-loss, the (multi-class) Brier score, the expected
calibration error of the top label, and a reliability diagram. The figures are
those of this run; they are small models on a small data set, so read the
differences against the spread over seeds printed beside them.

``transform(X, return_std=True)`` also gives each feature's standard deviation
under the posterior; for a binary hidden unit it is ``sqrt(p (1 - p))`` of the
averaged probability ``p`` (the spread within a sample plus the spread between
samples), shown at the end.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from skdgm import BayesianSBN

t0 = time.process_time()
X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y,
                                                    random_state=0)


def brier(proba, y):
    """Multi-class Brier score: mean over rows of the squared error of the probability vector."""
    onehot = np.eye(proba.shape[1])[y]
    return float(np.mean(np.sum((proba - onehot) ** 2, axis=1)))


def reliability(proba, y, n_bins=10):
    """Top-label confidence and accuracy per bin, and the expected calibration error."""
    conf = proba.max(axis=1)
    correct = proba.argmax(axis=1) == y
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    mean_conf, acc, weight = [], [], []
    for b in range(n_bins):
        sel = bins == b
        if sel.any():
            mean_conf.append(conf[sel].mean())
            acc.append(correct[sel].mean())
            weight.append(sel.mean())
    mean_conf, acc, weight = map(np.asarray, (mean_conf, acc, weight))
    return mean_conf, acc, float(np.sum(weight * np.abs(acc - mean_conf)))


def pipeline(n_posterior_samples, seed):
    sbn = BayesianSBN((12,), n_iter=60, burn_in=20, n_posterior_samples=n_posterior_samples,
                      binarize=7.0, random_state=seed)
    return make_pipeline(sbn, LogisticRegression(max_iter=2000))


variants = {"posterior-averaged (10 samples)": 10, "single sample": 1}
results = {name: [] for name in variants}
curves = {}
for seed in range(3):
    for name, n in variants.items():
        model = pipeline(n, seed).fit(X_train, y_train)
        proba = model.predict_proba(X_test)
        conf, acc, ece = reliability(proba, y_test)
        results[name].append((accuracy_score(y_test, proba.argmax(axis=1)),
                              log_loss(y_test, proba), brier(proba, y_test), ece))
        if seed == 0:
            curves[name] = (conf, acc)
            if n == 10:
                kept = model

print(f"{'features':34s} {'accuracy':>16s} {'log-loss':>16s} {'Brier':>16s} {'ECE':>16s}")
for name, rows in results.items():
    r = np.array(rows)
    cells = " ".join(f"{m:8.4f} ± {s:.4f}" for m, s in zip(r.mean(0), r.std(0)))
    print(f"{name:34s} {cells}")
diff = np.array(results["posterior-averaged (10 samples)"]) - np.array(results["single sample"])
print("averaged minus single, per seed (accuracy, log-loss, Brier, ECE):")
for d in diff:
    print("   ", " ".join(f"{v:+.4f}" for v in d))

# %%
# Reliability diagram (seed 0): top-label confidence against accuracy
fig, ax = plt.subplots(figsize=(4.5, 4))
ax.plot([0, 1], [0, 1], color="0.7", lw=1, label="perfect calibration")
for name, (conf, acc) in curves.items():
    ax.plot(conf, acc, marker="o", label=name)
ax.set_xlabel("mean confidence in bin")
ax.set_ylabel("accuracy in bin")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Posterior standard deviation of the features of a few test digits
sbn = kept[0]
H, H_std = sbn.transform(X_test[:6], return_std=True)
fig, axes = plt.subplots(1, 2, figsize=(7, 2.6), sharey=True)
for ax, M, title in zip(axes, (H, H_std), ("E[h | x]", "posterior std")):
    im = ax.imshow(M, vmin=0, vmax=1 if title != "posterior std" else 0.5, cmap="viridis")
    ax.set_title(title)
    ax.set_xlabel("hidden unit")
    fig.colorbar(im, ax=ax, shrink=0.8)
axes[0].set_ylabel("test digit")
fig.tight_layout()
print(f"mean posterior std of the features on the test set: "
      f"{sbn.transform(X_test, return_std=True)[1].mean():.3f}")
print(f"CPU time: {time.process_time() - t0:.1f} s")

# %%
# What this shows
# ---------------
# In our run (the output above; 17 CPU-seconds on one core), averaging the
# features over 10 posterior samples lowered the log-loss (by 0.005 to 0.021) and
# the Brier score (by 0.003 to 0.010) for each of the three seeds, while the
# accuracy moved by less than a percentage point either way (+0.6, +0.8, -1.0)
# and the calibration error went up for one seed and down for two. So the
# averaged features are at least as accurate within the spread over seeds, and
# their probabilities somewhat better scored; they are not a calibration fix: the
# logistic regression's own over- or under-confidence dominates the reliability
# diagram. With a longer chain (more, less correlated samples) the gap may grow;
# we have not measured that here.

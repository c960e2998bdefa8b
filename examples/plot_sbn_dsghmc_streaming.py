"""
==========================================================
Streaming a deep SBN with doubly stochastic gradient MCMC
==========================================================

``BayesianSBN(inference="dsghmc_nais")`` trains a sigmoid belief net by SGHMC on
its parameters, estimating the gradient of each minibatch's log-likelihood with
self-normalised importance sampling from a recognition network that learns
alongside (Du, Zhu and Zhang 2018). Each ``partial_fit`` call costs the same
whatever the size of the stream; ``total_samples`` tells the sampler how large
the dataset is.

We stream binarised digits in minibatches of 50, and watch two numbers the
estimator records in ``history_``: the importance estimate of the minibatch
log-likelihood, and the recognition network's effective sample size (out of the
``L = 5`` proposals per digit). At the end we compare the two evaluations of
``score_samples``: importance sampling with the recognition network, and
annealed importance sampling from the prior.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from skdgm.sbn import BayesianSBN

X = (load_digits().data > 7).astype(float)
X_train, X_test = X[:1500], X[1500:]

sbn = BayesianSBN((20,), inference="dsghmc_nais", total_samples=len(X_train),
                  learning_rate=0.02, burn_in=150, n_posterior_samples=5,
                  n_is_samples=500, n_ais_betas=100, n_ais_runs=5, random_state=0)
rng = np.random.default_rng(0)
for epoch in range(8):
    for rows in np.array_split(rng.permutation(len(X_train)), len(X_train) // 50):
        sbn.partial_fit(X_train[rows])

lp_is = sbn.score_samples(X_test[:100], method="is")
lp_ais = sbn.score_samples(X_test[:100], method="ais")
print(f"test log p(x): IS {lp_is.mean():.2f}, AIS {lp_ais.mean():.2f} "
      f"(mean |IS - AIS| per digit {np.abs(lp_is - lp_ais).mean():.2f} nats)")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
ax1.plot(sbn.history_["log_px_is"], lw=0.8)
ax1.set(xlabel="minibatch", ylabel="log p(x) (IS, training batch)")
ax2.plot(np.asarray(sbn.history_["ess_ratio"]) * 5, lw=0.8)
ax2.set(xlabel="minibatch", ylabel="ESS of the 5 proposals")
fig.tight_layout()
plt.show()

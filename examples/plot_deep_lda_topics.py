"""
=================================================
Deep LDA: layer-1 topics and their parent topics
=================================================

:class:`skdgm.DeepLDA` learns topics at several layers: each layer-2 topic is a
distribution over layer-1 topics, so it groups related fine topics under a
broader theme. This example draws a small corpus from a known two-layer
hierarchy (two themes, "sport" and "science", each made of three fine topics),
fits a 6-2 network with TLASGR-MCMC, and prints every layer-1 topic with its
most probable words and its layer-2 parent. The figure shows ``Phi^(2)``, the
weights that connect the two layers, and the topic-layer-adaptive learning
rates of the paper's Fig. 2.
"""

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from skdgm import DeepLDA

# %%
# A corpus from a known hierarchy
# -------------------------------
fine_topics = {
    "football": "goal striker penalty pitch league referee keeper derby",
    "tennis": "serve racket set ace court volley deuce grass",
    "cycling": "peloton stage climb sprint jersey pedal tour descent",
    "physics": "quantum particle photon energy field boson laser spin",
    "biology": "cell gene protein enzyme dna species tissue membrane",
    "astronomy": "galaxy star planet telescope orbit comet nebula redshift",
}
names = list(fine_topics)
vocabulary = sorted({w for words in fine_topics.values() for w in words.split()})
index = {w: i for i, w in enumerate(vocabulary)}
V = len(vocabulary)

rng = np.random.default_rng(0)
phi1 = np.full((V, 6), 0.002)
for k, words in enumerate(fine_topics.values()):
    for w in words.split():
        phi1[index[w], k] = 1.0
phi1 /= phi1.sum(axis=0)
phi2 = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], dtype=float).T + 0.02
phi2 /= phi2.sum(axis=0)

n_docs = 600
theme = rng.gamma(0.3, 1.0, size=(n_docs, 2))
theta1 = rng.gamma(theme @ phi2.T * 3.0, 10.0)
X = sp.csr_matrix(rng.poisson(theta1 @ phi1.T))
print(f"{n_docs} documents, {V} words, {int(X.sum())} tokens")

# %%
# Fit a two-layer network
# -----------------------
# Over-complete layers let the gamma-process prior switch spare topics off.
model = DeepLDA(n_components=(8, 3), n_iter=8, batch_size=100, random_state=0)
model.fit(X)

layer1 = model.components_  # (8, V), rows on the simplex
usage = model.transform(X).mean(axis=0)
phi2_hat = model.topics_[1]  # (8, 3): column j = layer-2 topic j over layer-1 topics
parent = phi2_hat.argmax(axis=1)
for k in np.argsort(-usage):
    if usage[k] < 0.01:
        continue
    top = ", ".join(vocabulary[i] for i in np.argsort(-layer1[k])[:6])
    print(f"layer-1 topic {k} (usage {usage[k]:.2f}, parent: layer-2 topic {parent[k]}): {top}")

for j in range(phi2_hat.shape[1]):
    words = model.projected_topics(2)[:, j]
    top = ", ".join(vocabulary[i] for i in np.argsort(-words)[:8])
    print(f"layer-2 topic {j} in words: {top}")

# %%
# The weights between the layers and the adaptive learning rates
# --------------------------------------------------------------
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.imshow(phi2_hat, aspect="auto", cmap="Greys")
ax0.set(xlabel="layer-2 topic", ylabel="layer-1 topic", title=r"$\Phi^{(2)}$")
for name in ("rate_layer1", "rate_layer2"):
    ax1.semilogy(model.history_[name], label=name.replace("rate_", ""))
ax1.set(xlabel="minibatch", ylabel=r"mean $\epsilon_t / M_k^{(l)}$",
        title="topic-layer-adaptive rates")
ax1.legend()
fig.tight_layout()
plt.show()

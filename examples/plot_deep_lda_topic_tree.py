"""
================================================
Deep LDA: the topic hierarchy as a tree of words
================================================

:class:`skdgm.DeepLDA` learns topics at several layers: each topic of layer
``l + 1`` is a distribution over the topics of layer ``l``, so it groups related
fine topics under a broader theme. This example fits a small three-layer network
to 1,000 documents of 20 Newsgroups (the deep-LDA paper's 2,000-word version, read
with :func:`skdgm.datasets.fetch_20newsgroups_bow`; when the file is neither in
the data folder nor downloadable, a small corpus drawn from a known two-theme
hierarchy stands in), reads each topic as a word list
(:meth:`~skdgm.DeepLDA.topic_words`), scores the lists' coherence
(:meth:`~skdgm.DeepLDA.coherence`), draws the hierarchy from
:meth:`~skdgm.DeepLDA.topic_hierarchy` as a tree whose nodes show each topic's
most probable words, and plots the fit's progress from ``history_``.
"""

import matplotlib.pyplot as plt
import numpy as np
import scipy.sparse as sp

from skdgm import DeepLDA
from skdgm.datasets import fetch_20newsgroups_bow


# %%
# Data: 20 Newsgroups, or a small stand-in
# ----------------------------------------
def synthetic_corpus(rng):
    """Two themes, each made of three fine topics of eight words."""
    fine = ["goal striker penalty pitch league referee keeper derby",
            "serve racket set ace court volley deuce grass",
            "peloton stage climb sprint jersey pedal tour descent",
            "quantum particle photon energy field boson laser spin",
            "cell gene protein enzyme dna species tissue membrane",
            "galaxy star planet telescope orbit comet nebula redshift"]
    vocabulary = sorted({w for words in fine for w in words.split()})
    index = {w: i for i, w in enumerate(vocabulary)}
    phi1 = np.full((len(vocabulary), 6), 0.002)
    for k, words in enumerate(fine):
        phi1[[index[w] for w in words.split()], k] = 1.0
    phi1 /= phi1.sum(axis=0)
    phi2 = np.array([[1, 1, 1, 0, 0, 0], [0, 0, 0, 1, 1, 1]], dtype=float).T + 0.02
    phi2 /= phi2.sum(axis=0)
    theme = rng.gamma(0.3, 1.0, size=(1200, 2))
    theta1 = rng.gamma(theme @ phi2.T * 3.0, 10.0)
    return sp.csr_matrix(rng.poisson(theta1 @ phi1.T)), np.array(vocabulary)


rng = np.random.default_rng(0)
try:
    news = fetch_20newsgroups_bow()
    X = news.train[np.sort(rng.choice(news.train.shape[0], 1000, replace=False))]
    vocabulary = np.asarray(news.vocabulary)
    sizes, source = (32, 8, 4), "20 Newsgroups (1,000 training documents)"
except OSError as exc:      # not in the data folder and no download possible
    print(f"20 Newsgroups not available ({type(exc).__name__}); using a synthetic corpus")
    X, vocabulary = synthetic_corpus(rng)
    sizes, source = (8, 4, 2), "a synthetic two-theme corpus"
print(f"{source}: {X.shape[0]} documents, {X.shape[1]} words, {int(X.sum())} tokens")

# %%
# Fit a three-layer network
# -------------------------
# Eight passes keep the example to seconds (``n_iter="auto"``, the default,
# chooses the number from the data); ``verbose=1`` prints one line per pass with
# the training perplexity, the elapsed time and an estimate of the time left.
model = DeepLDA(n_components=sizes, n_iter=8, random_state=0, verbose=1).fit(X)
print(f"{model.n_iter_} passes, {model.n_updates_} global updates")

# %%
# Topics as word lists, and their coherence
# -----------------------------------------
# ``topic_words`` reads every layer in vocabulary space (an upper topic's words
# are those of the lower topics it combines). ``coherence`` scores each list on
# a corpus by how often its words occur in the same documents: ``"u_mass"`` is
# gensim's ``CoherenceModel(coherence="u_mass")``, ``"npmi"`` is in [-1, 1].
# Higher is more coherent.
for layer in range(1, len(sizes) + 1):
    words = model.topic_words(5, layer=layer, feature_names=vocabulary)
    u_mass = model.coherence(X, n_words=5, layer=layer)
    npmi = model.coherence(X, measure="npmi", n_words=5, layer=layer)
    best = np.argsort(-npmi)[:3]
    print(f"layer {layer}: mean u_mass {np.nanmean(u_mass):.2f}, "
          f"mean npmi {np.nanmean(npmi):.3f}; the most coherent topics:")
    for k in best:
        print(f"  topic {k:2d} (npmi {npmi[k]:.2f}): {' '.join(words[k])}")

# %%
# The hierarchy as a tree
# -----------------------
# ``topic_hierarchy`` returns the weighted graph between layers as a dict of
# dicts, ``graph[(l + 1, j)][(l, k)]["weight"] = Phi^(l+1)[k, j]``, which is
# also networkx's adjacency format (``networkx.DiGraph(graph)``). Each node is
# drawn with its top words; each edge joins a topic to the lower-layer topics it
# puts most weight on, thicker for a larger weight. Shown: the two most used
# top-layer topics, two children per node.
graph = model.topic_hierarchy()
usage_top = model.transform(X, all_layers=True)[-1].mean(axis=0)
L = len(sizes)
labels = {layer: model.topic_words(4, layer=layer, feature_names=vocabulary)
          for layer in range(1, L + 1)}
nodes, edges = [], []      # nodes: (layer, topic, x); edges: (parent i, child i, weight)


def grow(node, x, width):
    i = len(nodes)
    nodes.append((*node, x))
    children = sorted(graph[node].items(), key=lambda item: -item[1]["weight"])[:2]
    for c, (child, attrs) in enumerate(children):
        j = grow(child, x + (c - 0.5) * width, width / 2)
        edges.append((i, j, attrs["weight"]))
    return i


roots = np.argsort(-usage_top)[:2]
for r, root in enumerate(roots):
    grow((L, int(root)), (r + 0.5) / len(roots), 0.5 / len(roots))

fig, ax = plt.subplots(figsize=(11, 6.5))
for i, j, w in edges:
    (l0, _, x0), (l1, _, x1) = nodes[i], nodes[j]
    ax.plot([x0, x1], [l0, l1], color="tab:blue", lw=1 + 6 * w, alpha=0.6, zorder=1)
for layer, k, x in nodes:
    ax.text(x, layer, f"layer {layer}, topic {k}\n" + "\n".join(labels[layer][k]),
            ha="center", va="center", fontsize=7.5, zorder=2,
            bbox=dict(boxstyle="round", fc="white", ec="0.6"))
ax.set(ylim=(0.5, L + 0.5), xlim=(-0.02, 1.02), yticks=range(1, L + 1),
       ylabel="layer", title=f"DeepLDA {'-'.join(map(str, sizes))} on {source}")
ax.set_xticks([])
fig.tight_layout()

# %%
# Progress of the fit
# -------------------
# ``history_`` holds one entry per pass: the training perplexity (the pass's own
# words under their collected local samples, an in-sample figure), the step
# size of the last update, the time and the estimated time left.
h = model.history_
fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(9, 3.5))
ax0.plot(np.arange(1, len(h["train_perplexity"]) + 1), h["train_perplexity"], marker="o")
ax0.set(xlabel="pass", ylabel="training perplexity", title="history_['train_perplexity']")
ax1.plot(h["time"], h["step_size"], marker="o")
ax1.set(xlabel="time (s)", ylabel=r"$\epsilon_t$", title="step size of each pass's last update")
fig.tight_layout()
plt.show()

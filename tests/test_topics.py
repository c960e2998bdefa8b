"""DeepLDA read as topic-model users read it (issue 27): top words, coherence, the tree.

u_mass is compared with gensim's ``CoherenceModel`` (skipped without gensim) and both
measures with a direct, pair-by-pair computation of their definitions.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from skdgm import DeepLDA


def _corpus(n=120, V=15, seed=0):
    """Sparse counts with word-frequency spread, so co-occurrences differ by pair."""
    rng = np.random.default_rng(seed)
    rates = rng.gamma(0.3, 2.0, size=(n, 1)) * rng.dirichlet(np.full(V, 0.3), size=n) * 20
    return rng.poisson(rates).astype(float)


@pytest.fixture(scope="module")
def fitted():
    X = _corpus()
    return DeepLDA(n_components=(6, 3, 2), n_iter=3, batch_size=40, local_burn_in=2,
                   local_samples=2, random_state=0).fit(X), X


def _set_topics(est, topics):
    est.topics_ = [np.asarray(t, dtype=float) for t in topics]


# --- topic_words -----------------------------------------------------------------


def test_topic_words_are_the_projected_columns_sorted():
    est = DeepLDA(n_components=(3, 2), n_iter=1, random_state=0).fit(_corpus(V=5))
    phi1 = np.array([[0.1, 0.5, 0.2], [0.4, 0.1, 0.2], [0.3, 0.1, 0.2],
                     [0.0, 0.2, 0.2], [0.2, 0.1, 0.2]])
    phi2 = np.array([[1.0, 0.0], [0.0, 0.5], [0.0, 0.5]])
    _set_topics(est, [phi1, phi2])
    np.testing.assert_array_equal(est.topic_words(3), [[1, 2, 4], [0, 3, 1], [0, 1, 2]])
    # layer 2: topic 0 is layer-1 topic 0; topic 1 is the even mix of topics 1 and 2
    # (0.35, 0.15, 0.15, 0.2, 0.15): ties go to the lower index
    np.testing.assert_array_equal(est.topic_words(4, layer=2), [[1, 2, 4, 0], [0, 3, 1, 2]])
    names = np.array(["ant", "bee", "cat", "dog", "eel"], dtype=object)
    np.testing.assert_array_equal(est.topic_words(2, layer=2, feature_names=names),
                                  [["bee", "cat"], ["ant", "dog"]])
    assert est.topic_words(5).shape == (3, 5)


def test_topic_words_with_a_count_vectorizer_vocabulary():
    from sklearn.feature_extraction.text import CountVectorizer

    docs = ["apple banana apple", "banana cherry", "cherry date apple", "date date elder"] * 5
    vec = CountVectorizer()
    X = vec.fit_transform(docs)
    est = DeepLDA(n_components=(2,), n_iter=2, random_state=0).fit(X)
    words = est.topic_words(3, feature_names=vec.get_feature_names_out())
    assert words.shape == (2, 3)
    vocab = set(vec.get_feature_names_out())
    assert all(w in vocab for w in words.ravel())
    idx = est.topic_words(3)
    np.testing.assert_array_equal(vec.get_feature_names_out()[idx], words)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_words=0), "n_words"), (dict(n_words=16), "n_words"), (dict(n_words=2.0), "n_words"),
    (dict(layer=0), "layer"), (dict(layer=4), "layer"), (dict(layer=True), "layer"),
    (dict(feature_names=["a", "b"]), "feature_names"),
])
def test_topic_words_bad_arguments_name_the_problem(fitted, kwargs, match):
    est, _ = fitted
    with pytest.raises(ValueError, match=match):
        est.topic_words(**kwargs)


def test_reading_topics_before_fit_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    est = DeepLDA()
    for call in (lambda: est.topic_words(), lambda: est.coherence(np.ones((2, 3))),
                 lambda: est.topic_hierarchy()):
        with pytest.raises(NotFittedError):
            call()


# --- coherence ---------------------------------------------------------------------


def _direct(X, top, measure, eps=1e-12):
    """The definitions, pair by pair, from document counts."""
    B = np.asarray(X) > 0
    N = B.shape[0]
    out = []
    for words in top:
        terms = []
        if measure == "u_mass":
            pairs = [(words[i], words[j]) for i in range(1, len(words)) for j in range(i)]
        else:
            pairs = list(itertools.permutations(words, 2))
        for a, b in pairs:
            pab = np.sum(B[:, a] & B[:, b]) / N
            pa, pb = B[:, a].sum() / N, B[:, b].sum() / N
            if measure == "u_mass":
                terms.append(np.log((pab + eps) / pb))
            else:
                terms.append(np.log((pab + eps) / (pa * pb)) / -np.log(pab + eps))
        out.append(np.mean(terms))
    return np.array(out)


@pytest.mark.parametrize("measure", ["u_mass", "npmi"])
@pytest.mark.parametrize("layer", [1, 2, 3])
def test_coherence_is_its_definition(fitted, measure, layer):
    est, X = fitted
    got = est.coherence(X, measure=measure, n_words=6, layer=layer)
    top = est.topic_words(6, layer=layer)
    np.testing.assert_allclose(got, _direct(X, top, measure), rtol=1e-12, atol=1e-12)
    # sparse input, held-out corpus: the same numbers as dense
    Xh = _corpus(n=50, seed=3)
    np.testing.assert_allclose(est.coherence(sp.csr_matrix(Xh), measure=measure, n_words=6,
                                             layer=layer),
                               _direct(Xh, top, measure), rtol=1e-12, atol=1e-12)
    if measure == "npmi":
        assert np.all((got >= -1) & (got <= 1))
    else:
        assert np.all(got <= 1e-9)


def test_u_mass_equals_gensim_coherence_model(fitted):
    gensim = pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    est, X = fitted
    V = X.shape[1]
    vocab = [f"w{v}" for v in range(V)]
    dictionary = Dictionary([vocab])
    ids = [dictionary.token2id[w] for w in vocab]       # gensim sorts the tokens
    corpus = [[(ids[v], int(c)) for v, c in enumerate(row) if c > 0] for row in X]
    for layer, n_words in [(1, 10), (2, 5), (3, 15)]:
        words = est.topic_words(n_words, layer=layer, feature_names=np.array(vocab))
        cm = CoherenceModel(topics=[list(t) for t in words], corpus=corpus,
                            dictionary=dictionary, coherence="u_mass", topn=n_words)
        ours = est.coherence(X, measure="u_mass", n_words=n_words, layer=layer)
        np.testing.assert_allclose(ours, cm.get_coherence_per_topic(), rtol=0, atol=1e-6)
        assert abs(np.mean(ours) - cm.get_coherence()) < 1e-6
    assert gensim.__version__


def test_coherence_exact_on_a_hand_made_corpus():
    # four documents; words 0 and 1 always together, word 2 with 0 once
    X = np.array([[1, 2, 0, 0], [3, 1, 1, 0], [0, 0, 0, 5], [0, 0, 0, 1]], dtype=float)
    est = DeepLDA(n_components=(2,), n_iter=1, random_state=0).fit(X)
    _set_topics(est, [[[0.5, 0.0], [0.3, 0.1], [0.2, 0.1], [0.0, 0.8]]])
    # topic 0: words 0, 1, 2. u_mass pairs (1|0), (2|0), (2|1):
    # log(2/4 / (2/4)), log(1/4 / (2/4)) twice
    u = est.coherence(X, n_words=3)
    np.testing.assert_allclose(u[0], (0.0 + 2 * np.log(0.5)) / 3, atol=1e-11)
    # npmi of (0, 1): log(0.5 / 0.25) / -log(0.5) = 1, of (0, 2) and (1, 2):
    # log(0.25 / (0.5 * 0.25)) / -log(0.25) = 0.5
    n = est.coherence(X, measure="npmi", n_words=3)
    np.testing.assert_allclose(n[0], (1.0 + 0.5 + 0.5) / 3, atol=1e-11)
    # topic 1: words 3, 1, 2; the pair (1, 3) never co-occurs
    np.testing.assert_allclose(
        n[1], np.mean([np.log(1e-12 / (0.5 * 0.5)) / -np.log(1e-12),
                       np.log(1e-12 / (0.5 * 0.25)) / -np.log(1e-12),
                       np.log(0.25 / (0.5 * 0.25)) / -np.log(0.25)]), atol=1e-11)


def test_coherence_is_nan_for_a_topic_whose_word_never_occurs():
    X = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    est = DeepLDA(n_components=(2,), n_iter=1, random_state=0).fit(X + np.array([0, 0, 1]))
    _set_topics(est, [[[0.6, 0.1], [0.3, 0.3], [0.1, 0.6]]])
    # topic 1 ranks word 2 first: it conditions every pair and occurs in no document
    u = est.coherence(X, n_words=2)
    assert np.isfinite(u[0]) and np.isnan(u[1])
    assert np.isnan(est.coherence(X, n_words=2, measure="npmi")[1])


@pytest.mark.parametrize("kwargs, match", [
    (dict(measure="c_v"), "measure"), (dict(n_words=1), "at least 2"),
    (dict(layer=5), "layer"),
])
def test_coherence_bad_arguments_name_the_problem(fitted, kwargs, match):
    est, X = fitted
    with pytest.raises(ValueError, match=match):
        est.coherence(X, **kwargs)
    with pytest.raises(ValueError, match="features"):
        est.coherence(X[:, :5])
    with pytest.raises(ValueError, match="non-negative"):
        est.coherence(-X)


# --- topic_hierarchy ----------------------------------------------------------------


def test_topic_hierarchy_holds_phi_as_edge_weights(fitted):
    est, _ = fitted
    graph = est.topic_hierarchy()
    K = [t.shape[1] for t in est.topics_]
    assert set(graph) == {(l + 1, k) for l in range(3) for k in range(K[l])}
    for k in range(K[0]):
        assert graph[(1, k)] == {}
    for l in (1, 2):
        phi = est.topics_[l]
        for j in range(K[l]):
            children = graph[(l + 1, j)]
            assert set(children) == {(l, k) for k in range(K[l - 1])}
            for (lay, k), attrs in children.items():
                assert attrs == {"weight": phi[k, j]}
    pruned = est.topic_hierarchy(min_weight=0.3)
    for l in (1, 2):
        for j in range(K[l]):
            assert set(pruned[(l + 1, j)]) == {(l, int(k)) for k in
                                               np.flatnonzero(est.topics_[l][:, j] >= 0.3)}
    with pytest.raises(ValueError, match="min_weight"):
        est.topic_hierarchy(min_weight=np.nan)


def test_topic_hierarchy_reads_into_networkx(fitted):
    nx = pytest.importorskip("networkx")
    est, _ = fitted
    G = nx.DiGraph(est.topic_hierarchy())
    K = [t.shape[1] for t in est.topics_]
    assert G.number_of_nodes() == sum(K)
    assert G.number_of_edges() == K[0] * K[1] + K[1] * K[2]
    assert nx.is_directed_acyclic_graph(G)
    for l in (1, 2):
        for j in range(K[l]):
            w = [G.edges[(l + 1, j), (l, k)]["weight"] for k in range(K[l - 1])]
            np.testing.assert_allclose(w, est.topics_[l][:, j], rtol=0, atol=0)
            assert abs(sum(w) - 1.0) < 1e-9

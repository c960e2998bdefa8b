"""What ``"auto"`` means for DBMCAST's sizes and run lengths.

``DBMCAST(n_components="auto", n_iter="auto", pretrain_n_iter="auto")`` resolves
them here from the shape of the training data; the figures behind the rules are in
the user guide (``doc/user_guide/dbm.rst``, "Defaults").
"""

__all__ = ["AUTO_MIN_PASSES", "AUTO_PRETRAIN_UPDATES", "AUTO_UPDATES", "auto_n_components",
           "auto_passes"]

# ``"auto"`` sizes: h1 = n_features / 4 clipped to [16, 500], h2 = 2 h1 (the paper's
# 500-1000 ratio). 16 keeps log Z exact (enumerated) on small inputs such as 8x8
# digits; 500 is the paper's MNIST model, reached from 2,000 features up.
AUTO_H1_MIN, AUTO_H1_MAX = 16, 500
# ``n_iter="auto"``: enough passes for this many parameter updates (at least
# AUTO_MIN_PASSES passes). 2,400 updates took binarised digits (1,200 rows, auto
# sizes) from learning nothing to +5.7 nats over independent pixels (5.4 CPU-s);
# see doc/user_guide/dbm.rst, "Defaults".
AUTO_UPDATES = 2400
AUTO_MIN_PASSES = 5
# ``pretrain_n_iter="auto"``: CD-1 updates per RBM of the greedy stack.
AUTO_PRETRAIN_UPDATES = 600


def auto_n_components(n_features):
    """The ``n_components="auto"`` rule: ``(h, 2 h)``, ``h = n_features // 4`` in [16, 500]."""
    h = int(min(AUTO_H1_MAX, max(AUTO_H1_MIN, int(n_features) // 4)))
    return (h, 2 * h)


def auto_passes(n_samples, batch_size, n_updates, min_passes=1):
    """Passes over ``n_samples`` rows in minibatches of ``batch_size`` giving ``n_updates``."""
    per_pass = max(1, -(-int(n_samples) // max(1, int(batch_size))))
    return max(int(min_passes), -(-int(n_updates) // per_pass))

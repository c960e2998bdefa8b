"""Sphinx configuration for skdgm (builds offline: no intersphinx, no remote assets)."""

import os
import sys
import warnings

import skdgm

project = "skdgm"
author = "The skdgm developers"
copyright = "2026, The skdgm developers"
version = release = skdgm.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Ships MathJax into _static/ so equations render without a network (offline readers).
    "sphinx-mathjax-offline",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

autosummary_generate = True
# No "inherited-members" default: under Sphinx 9 it overrode the class template's
# ``:inherited-members: BaseEstimator``, and the methods the estimators inherit from
# skdgm's own mixins (``to_inference_data``, DeepLDA's ``topic_words`` ...) were
# missing from the API pages. scikit-learn's inherited methods are skipped below.
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

templates_path = ["_templates"]
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "sg_execution_times.rst"]

html_theme = "pydata_sphinx_theme"
html_title = "skdgm"
html_static_path = []
html_theme_options = {"navigation_with_keys": False}

os.environ.setdefault("MPLBACKEND", "Agg")
warnings.filterwarnings("ignore", category=UserWarning,
                        message="Matplotlib is currently using agg")

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    # Every example must stay fast; a slow one is a bug in the example.
    "abort_on_example_error": True,
}


def _skip_metadata_request_setters(app, what, name, obj, skip, options):
    # scikit-learn generates set_<method>_request for metadata routing; their
    # docstrings point into scikit-learn's own glossary, which is not part of these docs.
    if name.startswith("set_") and name.endswith("_request"):
        return True
    # the same for methods inherited from scikit-learn's mixins (set_output,
    # get_metadata_routing, fit_transform ...): documented by scikit-learn
    if what == "class" and (getattr(obj, "__module__", None) or "").startswith("sklearn."):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request_setters)

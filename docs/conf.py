"""Sphinx configuration of the skldp documentation."""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import skldp  # noqa: E402

project = "skldp"
author = "skldp developers"
copyright = "2026, skldp developers"
version = release = skldp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]
try:  # Markdown pages (docs/results/*.md) when myst-parser is installed
    import myst_parser  # noqa: F401
    extensions.append("myst_parser")
    source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
except ImportError:
    source_suffix = {".rst": "restructuredtext"}

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

templates_path = []
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "results/*.json"]

try:
    import pydata_sphinx_theme  # noqa: F401
    html_theme = "pydata_sphinx_theme"
except ImportError:
    html_theme = "alabaster"

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable", None),
    "scipy": ("https://docs.scipy.org/doc/scipy", None),
    "sklearn": ("https://scikit-learn.org/stable", None),
}
# The build must work offline: only use the inventories when asked to.
if not os.environ.get("SKLDP_DOCS_INTERSPHINX"):
    intersphinx_mapping = {}

# Examples train models on real graphs; they are slow on a CPU, so the gallery
# is rendered without running them unless SKLDP_DOCS_RUN_GALLERY=1.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "True" if os.environ.get("SKLDP_DOCS_RUN_GALLERY") else "False",
    "download_all_examples": False,
}


# --------------------------------------------------------------------------
# API pages: one per subpackage, listing the names of its ``__all__`` (other
# engineers add names there), rewritten at each build so they stay current.
API_PAGES = {
    "skldp": ("Core: data container and base classes", "skldp"),
    "mechanisms": ("Local DP mechanisms", "skldp.mechanisms"),
    "propagation": ("Propagation and denoising", "skldp.propagation"),
    "reconstruction": ("Reconstruction from local DP reports", "skldp.reconstruction"),
    "models": ("Models: heads, GNNs, link predictors", "skldp.models"),
    "central": ("Central DP training", "skldp.central"),
    "accounting": ("Privacy accounting", "skldp.accounting"),
    "baselines": ("Feature-free baselines and hybrids", "skldp.baselines"),
    "privacy": ("Saving without secrets", "skldp.privacy"),
    "audit": ("Empirical privacy audit", "skldp.audit"),
    "datasets": ("Datasets", "skldp.datasets"),
    "model_selection": ("Model selection: graph splits", "skldp.model_selection"),
    "utils": ("Utilities: validation and per-user randomness", "skldp.utils"),
    "metrics": ("Metrics", "skldp.metrics"),
}


def _write_api_pages():
    import importlib

    here = Path(__file__).resolve().parent / "api"
    here.mkdir(exist_ok=True)
    for fname, (title, modname) in API_PAGES.items():
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        names = [n for n in getattr(mod, "__all__", []) if not n.startswith("_")]
        lines = [f".. This page is written by docs/conf.py from {modname}.__all__.", "",
                 title, "=" * len(title), "", f".. automodule:: {modname}",
                 "   :no-members:", "", f".. currentmodule:: {modname}", ""]
        if names:
            lines += [".. autosummary::", "   :toctree: ../gen_modules/", ""]
            lines += [f"   {n}" for n in sorted(names, key=str.lower)]
        text = "\n".join(lines) + "\n"
        path = here / f"{fname}.rst"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    pages = [f for f, (_, m) in API_PAGES.items() if (here / f"{f}.rst").exists()]
    index = ("API reference\n=============\n\n.. toctree::\n   :maxdepth: 1\n\n"
             + "".join(f"   {p}\n" for p in pages))
    if not (here / "index.rst").exists() or (here / "index.rst").read_text() != index:
        (here / "index.rst").write_text(index)


_write_api_pages()


def _write_results_index():
    """Results pages are Markdown; without myst-parser they are shown as literal text."""
    here = Path(__file__).resolve().parent / "results"
    here.mkdir(exist_ok=True)
    pages = sorted(p.stem for p in here.glob("*.md") if not p.stem.endswith("_discussion"))
    head = ("Results\n=======\n\nReproductions of the papers' experiments: the paper's "
            "values, ours (mean ± std over seeds), a graph-only baseline and the exact "
            "command, written by the scripts in ``scripts/``.\n\n")
    if "myst_parser" in extensions:
        body = ".. toctree::\n   :maxdepth: 1\n\n" + "".join(f"   {p}\n" for p in pages)
    else:
        body = "".join(f"{p}\n{'-' * len(p)}\n\n.. literalinclude:: {p}.md\n   :language: text\n\n"
                       for p in pages)
    text = head + body
    index = here / "index.rst"
    if not index.exists() or index.read_text() != text:
        index.write_text(text)


_write_results_index()
exclude_patterns.append("results/*_discussion.md")

# Inherited scikit-learn methods (set_*_request, score) link to labels of the
# scikit-learn docs, which are not available offline.
suppress_warnings = ["ref.ref", "ref.term"]

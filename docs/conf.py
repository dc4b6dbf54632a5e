"""Sphinx configuration of the skldp documentation.

Build (warnings are errors, nitpicky references)::

    python -m sphinx -b html -W -n docs docs/_build/html

The build works offline (CI reaches only package registries):

* MathJax is served from the build itself (``sphinx-mathjax-offline``), never a CDN.
* Intersphinx inventories are probed with a short timeout (``_intersphinx_mapping``);
  reachable ones are cached under ``docs/_build/intersphinx`` and reused when the network
  is gone later. A reference to another project's name that no loaded inventory resolves
  is rendered as plain text instead of a link (``_unlinked_foreign_reference``), so the
  build neither fails offline nor hides an unresolved reference to a skldp name.
* The gallery runs by default; ``SKLDP_DOCS_SKIP_GALLERY=1`` renders it without
  running the examples, for quick local builds. ``SKLDP_DOCS_OFFLINE=1`` skips the
  intersphinx probe.
"""

import builtins
import importlib
import os
import pkgutil
import re
import sys
import threading
import urllib.request
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
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
    # a packaged MathJax 3 copied into _static/ (sets mathjax_path): no CDN request
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",  # Markdown results pages (docs/results/*.md)
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

autosummary_generate = True
# Every estimator page documents its inherited scikit-learn methods (fit, transform,
# predict, score, set_params, ...): see _templates/autosummary/class.rst.
# (set there, not in autodoc_default_options: on an automodule, inherited-members would
# document every member a second time)
autodoc_default_options = {}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

templates_path = ["_templates"]
exclude_patterns = ["_build", "_templates", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.json", "auto_examples/*.md5",
                    "results/*.json", "results/*.jsonl"]

# Results pages are Markdown written by the reproduction scripts; some start their
# sections at level 3 under the page title.
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_theme_options = {"navigation_with_keys": False}
html_static_path = []

# --------------------------------------------------------------------------
# Intersphinx that degrades gracefully offline.
INTERSPHINX = {
    "python": "https://docs.python.org/3",
    "numpy": "https://numpy.org/doc/stable",
    "scipy": "https://docs.scipy.org/doc/scipy",
    "sklearn": "https://scikit-learn.org/stable",
    "torch": "https://docs.pytorch.org/docs/stable",
    "pandas": "https://pandas.pydata.org/docs",
    "networkx": "https://networkx.org/documentation/stable",
}
# top-level module names -> the inventory that documents them
FOREIGN_MODULES = {"numpy": "numpy", "np": "numpy", "scipy": "scipy", "sklearn": "sklearn",
                   "torch": "torch", "pandas": "pandas", "pd": "pandas",
                   "networkx": "networkx", "nx": "networkx", "joblib": "python",
                   "matplotlib": "python"}
FOREIGN_MODULES.update({m: "python" for m in sys.stdlib_module_names})
FOREIGN_MODULES.update({n: "python" for n in dir(builtins) if not n.startswith("_")})
INVENTORY_CACHE = DOCS / "_build" / "intersphinx"


def _intersphinx_mapping(timeout):
    """Fetch each inventory in parallel (``timeout`` seconds); fall back to the cache."""
    INVENTORY_CACHE.mkdir(parents=True, exist_ok=True)

    def fetch(name, url):
        try:
            with urllib.request.urlopen(f"{url}/objects.inv", timeout=timeout) as resp:
                data = resp.read()
            if data.startswith(b"# Sphinx inventory version"):
                (INVENTORY_CACHE / f"{name}.inv").write_bytes(data)
        except Exception:  # offline, blocked or moved: the cached copy (if any) is used
            pass

    if not os.environ.get("SKLDP_DOCS_OFFLINE"):
        # daemon threads: a hanging DNS lookup must not outlive the timeout
        threads = [threading.Thread(target=fetch, args=item, daemon=True)
                   for item in INTERSPHINX.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout + 1)
    return {name: (url, str(INVENTORY_CACHE / f"{name}.inv"))
            for name, url in INTERSPHINX.items() if (INVENTORY_CACHE / f"{name}.inv").is_file()}


intersphinx_mapping = _intersphinx_mapping(
    float(os.environ.get("SKLDP_DOCS_INTERSPHINX_TIMEOUT", "3")))
intersphinx_timeout = 3


def _unlinked_foreign_reference(app, env, node, contnode):
    """Plain text for an unresolved foreign reference; None (a warning) for ours.

    Called only for references that neither our pages nor a loaded inventory resolve:
    a name of numpy, scipy, scikit-learn, torch, pandas, networkx or the standard library
    (linked when its inventory is available, plain text when it is not), a glossary term
    (these pages define no glossary: terms are scikit-learn's, copied by numpydoc from
    inherited properties such as ``n_features_in_``), or any reference written in a
    docstring that another project wrote. An unresolved skldp name stays a warning.
    """
    if node.get("reftype") == "term":
        return contnode
    source = str(node.source or contnode.source or "")
    if "docstring of " in source and not source.split("docstring of ", 1)[1].startswith("skldp"):
        return contnode
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "").lstrip("~.")
    if target.split(".", 1)[0] in FOREIGN_MODULES:
        return contnode
    return None


# --------------------------------------------------------------------------
# Gallery: executed by default (the published docs show outputs and figures).
# torch warns once per process when it wraps a read-only numpy array; the message (with
# the path of the build machine) would land in the output of whichever example runs first.
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "plot_gallery": "False" if os.environ.get("SKLDP_DOCS_SKIP_GALLERY") else "True",
    "download_all_examples": False,
    "abort_on_example_error": True,
    "write_computation_times": True,
    "min_reported_time": 0,
    "reference_url": {"skldp": None},
    "remove_config_comments": True,
}


# --------------------------------------------------------------------------
# API pages: one per subpackage, listing the names of its ``__all__`` (other
# engineers add names there), rewritten at each build so they stay current.
API_PAGES = {
    "skldp": ("Core: data container and base classes", "skldp"),
    "population": ("The privacy boundary: populations, collections, the ledger",
                   "skldp.population"),
    "device": ("The device encoder (numpy only)", "skldp.device"),
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
    "utils": ("Utilities: validation, per-user randomness and thread pools", "skldp.utils"),
    "metrics": ("Metrics", "skldp.metrics"),
    "experiments": ("Experiments: sweeps, graph cache, clusters", "skldp.experiments"),
}


def _home_page(obj, default, name=None):
    """The API page (module) that documents ``obj``: the deepest one containing its module
    that lists it in its ``__all__`` (a private helper shared with a light subpackage, as
    the per-user randomness of ``skldp.device``, stays on the page that exports it)."""
    module = getattr(obj, "__module__", None) or default
    homes = [m for _, m in API_PAGES.values() if module == m or module.startswith(m + ".")]
    if name is not None:
        homes = [m for m in homes
                 if name in getattr(importlib.import_module(m), "__all__", [])]
    return max(homes, key=len) if homes else default


def _write_api_pages():
    here = DOCS / "api"
    here.mkdir(exist_ok=True)
    for fname, (title, modname) in API_PAGES.items():
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        names = sorted((n for n in getattr(mod, "__all__", []) if not n.startswith("_")),
                       key=str.lower)
        own, elsewhere = [], []
        for n in names:
            home = _home_page(getattr(mod, n), modname, n)
            (own if home == modname else elsewhere).append((n, home))
        lines = [f".. This page is written by docs/conf.py from {modname}.__all__.", "",
                 title, "=" * len(title), "", f".. automodule:: {modname}",
                 "   :no-members:", "", f".. currentmodule:: {modname}", ""]
        if own:
            lines += [".. autosummary::", "   :toctree: ../gen_modules/", ""]
            lines += [f"   {n}" for n, _ in own]
            lines += [""]
        if elsewhere:  # re-exports are documented once, on their home page
            lines += ["Also importable from this module: "
                      + ", ".join(f":obj:`{modname}.{n} <{home}.{n}>`" for n, home in elsewhere)
                      + "."]
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
    """List every results page in the toctree of ``results/index.rst``.

    The text above the toctree (the question, the index table) is written by hand and
    kept as it is; only the toctree is rewritten, so a new page cannot be left out of it.
    """
    here = DOCS / "results"
    here.mkdir(exist_ok=True)
    pages = sorted(p.stem for p in here.glob("*.md"))
    index = here / "index.rst"
    old = index.read_text(encoding="utf-8") if index.exists() else "Results\n=======\n\n"
    head = old.split(".. toctree::")[0]
    text = head + ".. toctree::\n   :maxdepth: 1\n\n" + "".join(f"   {p}\n" for p in pages)
    if text != old:
        index.write_text(text, encoding="utf-8")


_write_results_index()


def _data_docstring(app, what, name, obj, options, lines):
    """Module constants (``DEFAULT_ORDERS``) re-exported from a private module.

    autodoc looks for their ``#:`` comment in the public module only and would show the
    docstring of their type (``numpy.ndarray``) instead; read it from the defining module.
    """
    if what != "data" or not name.startswith("skldp."):
        return
    package, attr = name.rsplit(".", 1)
    from sphinx.pycode import ModuleAnalyzer

    mod = importlib.import_module(package)
    for info in pkgutil.walk_packages(getattr(mod, "__path__", []), package + "."):
        try:
            docs = ModuleAnalyzer.for_module(info.name).find_attr_docs()
        except Exception:
            continue
        if ("", attr) in docs:
            lines[:] = list(docs["", attr])
            return


_STD_ROLE = re.compile(r":(?:ref|term|doc):`(?:([^`<]*?)\s*<[^>`]+>|([^`]+))`")


def _foreign_docstring(app, what, name, obj, options, lines):
    """Inherited scikit-learn docstrings refer to scikit-learn's labels and glossary.

    ``:ref:`User Guide <metadata_routing>``` or ``:term:`fit``` resolve through the
    scikit-learn inventory; without it they become plain text (they are not ours to fix).
    """
    func = getattr(obj, "fget", obj)
    module = getattr(func, "__module__", None) or ""
    if what in ("method", "property", "attribute") and not getattr(func, "__doc__", None):
        module = "sklearn"  # an override without a docstring shows its parent's (sklearn)
    top = module.split(".", 1)[0]
    if not module or top == "skldp" or FOREIGN_MODULES.get(top) in intersphinx_mapping:
        return
    text = _STD_ROLE.sub(lambda m: m.group(1) or m.group(2), "\n".join(lines))
    lines[:] = text.split("\n")  # a role may span lines; the line count is unchanged


_CDN_BLOCK = re.compile(r"^( *)\.\. raw:: html\n\n(?:\1 +.*\n|\n)*", re.M)


def _no_cdn_scripts(app, docname, source):
    """sphinx-gallery's computation-times tables load jQuery and DataTables from CDNs.

    Drop that raw HTML block (the table stays, without interactive sorting): the pages
    request no external URL.
    """
    if docname.endswith("sg_execution_times") and "https://" in source[0]:
        source[0] = _CDN_BLOCK.sub(
            lambda m: m.group(0) if "https://" not in m.group(0) else "", source[0])


def _skip_array_members(app, what, name, obj, skip, options):
    """A class that subclasses ``numpy.ndarray`` (``LabelReports``) documents its own
    members, not the sixty it inherits (their docstrings refer to numpy's own pages)."""
    import numpy as np

    if getattr(np.ndarray, name, None) is obj:   # ndarray's own (autodoc, autosummary)
        return True
    return None


def setup(app):
    app.connect("source-read", _no_cdn_scripts)
    app.connect("autodoc-skip-member", _skip_array_members)
    app.connect("autodoc-process-docstring", _foreign_docstring, priority=400)
    app.connect("missing-reference", _unlinked_foreign_reference)
    app.connect("autodoc-process-docstring", _data_docstring, priority=400)

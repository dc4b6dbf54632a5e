"""Every Python code block of the User Guide and the Design page runs.

The blocks of one page run in order in one namespace, as a reader would paste them.
Pages that train models on Cora or run searches take minutes and are marked slow.
"""

import re
import textwrap
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
FAST = ["design.rst", "user_guide/data_contract.rst", "user_guide/privacy_model.rst",
        "user_guide/mechanisms.rst", "user_guide/own_graph.rst", "user_guide/scaling.rst",
        "user_guide/deploying.rst"]
SLOW = ["user_guide/quickstart.rst", "user_guide/budgets.rst", "user_guide/models.rst"]
# Pages whose blocks are not run here, with the reason.
NOT_RUN = {
    # A full sweep (datasets x seeds x eps) writing to a results folder; the experiment
    # runner itself is tested in tests/experiments/.
    "user_guide/experiments.rst",
}
# Optional packages a page's code imports (the page skips without them).
NEEDS = {"user_guide/own_graph.rst": ["pandas"], "user_guide/data_contract.rst": ["pandas"]}


def python_blocks(text):
    """The bodies of the ``.. code-block:: python`` directives of an rst text, dedented."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if re.match(r"\s*\.\. code-block:: python\s*$", lines[i]):
            indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            while i < len(lines) and lines[i].strip().startswith(":"):
                i += 1                                   # directive options
            body = []
            while i < len(lines) and (not lines[i].strip()
                                      or len(lines[i]) - len(lines[i].lstrip()) > indent):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)))
        else:
            i += 1
    return blocks


def test_every_page_with_code_is_run():
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("user_guide/*.rst")
             if python_blocks(p.read_text(encoding="utf-8"))}
    if python_blocks((DOCS / "design.rst").read_text(encoding="utf-8")):
        pages.add("design.rst")
    covered = set(FAST) | set(SLOW) | NOT_RUN
    assert pages <= covered, sorted(pages - covered)


def test_optional_imports_are_declared():
    optional = ("pandas", "matplotlib", "dp_accounting", "pymetis", "tqdm", "dask", "ray")
    for page in FAST + SLOW:
        code = "\n".join(python_blocks((DOCS / page).read_text(encoding="utf-8")))
        used = {m for m in optional if re.search(rf"^\s*(import|from) {m}\b", code, re.M)}
        if re.search(r"""(transform(_output)?=["']pandas["']|\.to_pandas\()""", code):
            used.add("pandas")   # frames made by scikit-learn's set_output or GraphData
        assert used <= set(NEEDS.get(page, [])), (page, used)


def test_block_parser():
    text = ("Intro\n\n.. code-block:: python\n   :caption: x\n\n   a = 1\n\n   b = a + 1\n\n"
            "Text\n\n.. code-block:: text\n\n   not python\n")
    assert python_blocks(text) == ["\na = 1\n\nb = a + 1\n"]


def _run_page(page, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                          # blocks must not depend on the cwd
    blocks = python_blocks((DOCS / page).read_text(encoding="utf-8"))
    assert blocks, f"{page} has no Python code block"
    for module in NEEDS.get(page, []):
        pytest.importorskip(module)
    namespace = {"__name__": "__main__"}
    for k, code in enumerate(blocks):
        exec(compile(code, f"{page} (block {k})", "exec"), namespace)


@pytest.mark.parametrize("page", FAST)
def test_page_runs(page, monkeypatch, tmp_path):
    _run_page(page, monkeypatch, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", SLOW)
def test_slow_page_runs(page, monkeypatch, tmp_path):
    _run_page(page, monkeypatch, tmp_path)

"""The package and its documentation are self-contained.

They cite published works (see ``docs/bibliography.rst``) and the Design page of the
documentation, never the internal numbers or file names of the source texts, a design note
outside the repository, or paths of the machine they were written on.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Parts of the tree a user receives: the package, the documentation sources, the gallery
# scripts, the benchmark and study scripts and the top-level pages.
WALKED = ("skldp", "docs", "examples", "benchmarks", "scripts", "studies")
TOP_FILES = ("README.md", "CONTRIBUTING.md")
SUFFIXES = {".py", ".rst", ".md"}
# Build outputs and pages generated from the sources above (checked through their sources).
SKIPPED_DIRS = {
    Path("docs/_build"), Path("docs/auto_examples"), Path("docs/gen_modules"), Path("docs/api"),
}

FORBIDDEN = re.compile(
    r"paper 00[0-9]"                  # internal numbers of the source papers
    r"|DESIGN\.md"                    # a design note that is not part of the repository
    r"|\.\./shared"                   # folders next to the repository
    r"|\bshared/(datasets|papers|hooks)"  # their files, however reached
    r"|/work/"                        # machine paths
    r"|0[0-4][0-9]_[0-9a-f]{16}",     # file names of the source texts
    re.IGNORECASE,
)


def _files():
    for top in TOP_FILES:
        path = ROOT / top
        if path.exists():
            yield path
    for name in WALKED:
        base = ROOT / name
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(ROOT)
            if path.suffix not in SUFFIXES or not path.is_file():
                continue
            if any(parent in SKIPPED_DIRS for parent in rel.parents):
                continue
            yield path


def find_internal_references(paths, root=ROOT):
    """Return ``file:line: text`` for every forbidden string in ``paths``."""
    hits = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for lineno, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(root)}:{lineno}: {line.strip()[:120]}")
    return hits


def test_pattern_catches_internal_references(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("See paper 002, eq. (5).\nfine line\nshared/papers/003_5a1a374306e1d553.txt\n"
                   "read DESIGN.md\nSKLDP_DATASETS_DIR=/work/x ../shared/datasets\n"
                   "statistics from shared/datasets/README.md\n")
    hits = find_internal_references([bad], root=tmp_path)
    assert [h.split(":")[1] for h in hits] == ["1", "3", "4", "5", "6"]


def test_walk_covers_package_and_docs():
    files = {p.relative_to(ROOT).as_posix() for p in _files()}
    assert "skldp/base.py" in files
    assert "README.md" in files
    assert "benchmarks/bench_performance.py" in files and "studies/honest_utility.py" in files
    assert any(f.startswith("docs/") and f.endswith(".rst") for f in files)
    assert not any(f.startswith("docs/_build/") for f in files)


def test_no_internal_references():
    hits = find_internal_references(_files())
    assert not hits, "internal references found:\n" + "\n".join(hits)

"""studies.pages: generated blocks of a results page."""

import pytest

from studies.pages import command_block, fill_blocks


def test_fill_blocks_replaces_only_the_named_blocks(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# T\n\nhand\n<!-- generated: table -->\nold\n<!-- end generated -->\n"
                    "more hand\n<!-- generated: fig -->\nkeep\n<!-- end generated -->\n")
    fill_blocks(page, {"table": "| a |\n|---|\n"})
    text = page.read_text()
    assert "old" not in text and "| a |\n|---|\n<!-- end generated -->" in text
    assert "hand\n" in text and "more hand" in text and "keep" in text


def test_fill_blocks_refuses_a_block_without_markers(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# T\n")
    with pytest.raises(ValueError, match="no block"):
        fill_blocks(page, {"table": "x"})
    assert page.read_text() == "# T\n"


def test_fill_blocks_failing_midway_leaves_the_page_whole(tmp_path):
    # the page was truncated, then written: a writer that failed (or was killed) midway
    # left it empty, and a reader meanwhile found it short
    page = tmp_path / "p.md"
    old = "# T\n<!-- generated: table -->\nold\n<!-- end generated -->\nhand\n"
    page.write_text(old)
    page.chmod(0o640)
    with pytest.raises(UnicodeEncodeError):
        fill_blocks(page, {"table": "\udc80"})   # cannot be written as UTF-8
    assert page.read_text() == old
    assert [p.name for p in tmp_path.iterdir()] == ["p.md"]   # no temporary file left
    fill_blocks(page, {"table": "new"})
    assert "new\n<!-- end generated -->" in page.read_text()
    assert page.stat().st_mode & 0o777 == 0o640


def test_command_block_names_the_runs_file():
    text = command_block("planetoid", 240)
    assert "python -m skldp reproduce planetoid" in text
    assert "studies/runs/planetoid_runs.jsonl` (240 records" in text


def test_command_block_says_when_the_page_is_partial():
    text = command_block("planetoid", 150, partial=(150, 200))
    assert "Partial results: 150 of the 200 runs of this command are recorded" in text
    assert "Partial" not in command_block("planetoid", 200)


def test_fill_blocks_says_when_the_page_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="copy it from docs/results"):
        fill_blocks(tmp_path / "p.md", {"table": "x"})


def test_every_study_writes_its_own_page():
    import importlib

    import studies
    for name in studies.list_studies():
        module = importlib.import_module(f"studies.{name}")
        assert callable(module.make_study) and callable(module.write_page), name


# ---------------------------------------------------------------- every study's page
STUDIES = __import__("studies").list_studies()


def _records(name):
    from skldp.experiments import load_runs
    from studies import RUNS_DIR
    return load_runs(RUNS_DIR / f"{name}_runs.jsonl", name)


def _page(name):
    import importlib

    from studies import PAGES_DIR
    module = importlib.import_module(f"studies.{name}")
    return PAGES_DIR / getattr(module, "PAGE", f"{name}.md")


def _blank_blocks(text):
    """The page with every generated block emptied (its hand-written text kept)."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith("<!-- end generated"):
            inside = False
        if not inside:
            out.append(line)
        if line.startswith("<!-- generated:"):
            inside = True
    return "".join(out)


@pytest.mark.parametrize("name", STUDIES)
def test_write_page_gives_back_the_committed_page(name, tmp_path):
    # the committed page is what its runs give: a page cannot disagree with its runs
    import studies
    page = _page(name)
    committed = page.read_bytes()
    blank = _blank_blocks(committed.decode("utf-8"))
    assert blank != committed.decode("utf-8") and "<!-- generated: " in blank
    (tmp_path / page.name).write_text(blank, encoding="utf-8")
    paths = studies.write_page(name, _records(name), tmp_path)
    assert paths["page"] == tmp_path / page.name
    assert paths["page"].read_bytes() == committed
    if "figure" in paths:   # drawn where matplotlib is installed
        assert paths["figure"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("name", STUDIES)
def test_a_page_without_its_blocks_is_refused(name, tmp_path):
    import studies
    page = tmp_path / _page(name).name
    page.write_text("# a page with no generated block\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no block"):
        studies.write_page(name, _records(name), tmp_path)
    assert page.read_text(encoding="utf-8") == "# a page with no generated block\n"


@pytest.mark.parametrize("name", STUDIES)
def test_a_page_names_the_runs_file_it_was_written_from(name, tmp_path):
    # with --runs-dir elsewhere, the page named the repository's runs file
    import studies
    page = _page(name)
    (tmp_path / page.name).write_text(_blank_blocks(page.read_text(encoding="utf-8")),
                                      encoding="utf-8")
    elsewhere = tmp_path / "runs" / f"{name}_runs.jsonl"
    studies.write_page(name, _records(name), tmp_path, runs_file=elsewhere)
    text = (tmp_path / page.name).read_text(encoding="utf-8")
    assert f"Runs: `{elsewhere}` (" in text
    assert f"studies/runs/{name}_runs.jsonl" not in text


@pytest.mark.parametrize("name", STUDIES)
def test_write_page_without_records_leaves_the_page(name, tmp_path):
    # was matplotlib's "Number of columns must be a positive integer, not 0" (7 studies)
    # after the page's cells were rewritten with "—"
    import studies
    page = tmp_path / _page(name).name
    page.write_bytes(_page(name).read_bytes())
    with pytest.raises(ValueError, match=f"no run of study '{name}' is recorded"):
        studies.write_page(name, [], tmp_path)
    assert page.read_bytes() == _page(name).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [page.name]

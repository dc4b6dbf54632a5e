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


def test_command_block_names_the_runs_file():
    text = command_block("planetoid", 240)
    assert "python -m skldp reproduce planetoid" in text
    assert "studies/runs/planetoid_runs.jsonl` (240 records" in text


def test_fill_blocks_says_when_the_page_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="copy it from docs/results"):
        fill_blocks(tmp_path / "p.md", {"table": "x"})


def test_every_study_writes_its_own_page():
    import importlib

    import studies
    for name in studies.list_studies():
        module = importlib.import_module(f"studies.{name}")
        assert callable(module.make_study) and callable(module.write_page), name

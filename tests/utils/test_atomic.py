"""replace_text: a file rewritten whole, or left as it was."""

import os

import pytest

from skldp.utils._atomic import replace_text


def test_replace_text_writes_whole_or_not_at_all(tmp_path):
    path = tmp_path / "page.md"
    replace_text(path, "first\n")                  # a new file: created
    assert path.read_text() == "first\n"
    with pytest.raises(UnicodeEncodeError):
        replace_text(path, "\udc80")
    assert path.read_text() == "first\n"
    assert os.listdir(tmp_path) == ["page.md"]


def test_replace_text_keeps_the_mode_and_follows_a_link(tmp_path):
    target = tmp_path / "page.md"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    replace_text(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert target.stat().st_mode & 0o777 == 0o600

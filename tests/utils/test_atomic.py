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


def test_a_page_owned_by_another_user_keeps_its_owner(tmp_path, monkeypatch):
    # a group's shared page rewritten by a member became the member's: its owner could no
    # longer write it. This process cannot give a file away: the page is written in place.
    from skldp.utils import _atomic

    path = tmp_path / "page.md"
    path.write_text("old text, longer than the new\n")
    inode = path.stat().st_ino

    def not_permitted(*args):
        raise PermissionError("chown")

    monkeypatch.setattr(_atomic.os, "chown", not_permitted)
    monkeypatch.setattr(_atomic.os, "geteuid", lambda: path.stat().st_uid + 1)
    replace_text(path, "new\n")
    assert path.read_text() == "new\n" and path.stat().st_ino == inode
    assert os.listdir(tmp_path) == ["page.md"]
    monkeypatch.undo()
    replace_text(path, "ours\n")                   # our own page: replaced
    assert path.read_text() == "ours\n" and path.stat().st_ino != inode


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="gives a file to another user")
def test_a_page_replaced_by_root_keeps_its_owner_and_group(tmp_path):
    path = tmp_path / "page.md"
    path.write_text("old")
    os.chown(path, 1000, 5000)
    replace_text(path, "new")
    assert path.read_text() == "new"
    assert (path.stat().st_uid, path.stat().st_gid) == (1000, 5000)


def test_a_temporary_file_left_by_a_killed_writer_is_ignored_by_git():
    # a writer killed (SIGKILL) before its rename leaves .<page>.<hex>.tmp beside
    # the page: it showed in git status
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    left = "docs/results/.privge.md.0badc0de0000.tmp"
    out = subprocess.run(["git", "check-ignore", "-q", "--no-index", left], cwd=root)
    assert out.returncode == 0

"""Files rewritten whole: a reader, or a writer killed midway, never sees part of one."""

import contextlib
import os
import secrets
import stat

__all__ = ["replace_text", "replace_file"]


def replace_text(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` through a new file beside it, renamed over it.

    The rename is atomic: a reader finds the old text or the new, never a
    truncated file (two ``reproduce`` processes rewriting one results page,
    one of them killed midway). A page that exists keeps its permissions, and
    its owner and group where this process may set them (the new file is
    given them; a group it is not in is left as it gets). A page owned by
    another user that this process cannot give away its file to (a page shared
    by a group, rewritten by a member who does not own it) is rewritten in
    place instead: it keeps its owner, but is not replaced atomically. A
    symbolic link is followed (its target is replaced).

    Parameters
    ----------
    path : str or path-like
        The file.
    text : str
        Its new content.
    encoding : str, default="utf-8"
    """
    path = os.path.realpath(path)
    data = text.encode(encoding)   # (an encoding error leaves the page as it was)
    try:
        old = os.stat(path)
    except FileNotFoundError:
        old = None

    def write(tmp):
        # 0o666 less the umask, as a new file gets; an existing page's mode in replace_file
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())   # the data before the rename, or a crash may empty the page

    if not replace_file(path, write, like=old):
        _write_in_place(path, data)   # renamed over, another user's page would become ours


def replace_file(path, write, like=None):
    """``write(tmp)`` a new file beside ``path``, then rename it over ``path``.

    A reader sees the old file or the whole new one, and a failure leaves no
    partial file. ``like`` (an ``os.stat_result``) gives the new file its mode,
    and its owner and group where this process may; returns ``False``, renaming
    nothing, when ``like`` is another user's file this process cannot give its
    file away to. ``True`` once renamed.
    """
    folder, name = os.path.split(os.fspath(path))
    # (the name cut short: a long one plus the suffix could pass the system's limit)
    tmp = os.path.join(folder, f".{name[:64]}.{secrets.token_hex(6)}.tmp")
    try:
        write(tmp)
        if like is not None:
            try:
                os.chown(tmp, like.st_uid, like.st_gid)
            except PermissionError:
                if like.st_uid != os.geteuid():
                    os.remove(tmp)
                    return False
            os.chmod(tmp, stat.S_IMODE(like.st_mode))
        os.replace(tmp, path)
        return True
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _write_in_place(path, data):
    with open(path, "r+b") as f:
        f.write(data)
        f.truncate()   # (after the write: a reader finds no empty page meanwhile)
        f.flush()
        os.fsync(f.fileno())

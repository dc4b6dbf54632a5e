"""Files rewritten whole: a reader, or a writer killed midway, never sees part of one."""

import contextlib
import os
import secrets
import stat

__all__ = ["replace_text"]


def replace_text(path, text, encoding="utf-8"):
    """Write ``text`` to ``path`` through a new file beside it, renamed over it.

    The rename is atomic: a reader finds the old text or the new, never a
    truncated file (two ``reproduce`` processes rewriting one results page,
    one of them killed midway). A page that exists keeps its permissions; a
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
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # 0o666 less the umask, as a new file gets; an existing page's mode below
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding=encoding) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())   # the data before the rename, or a crash may empty the page
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise

"""Results pages: hand-written text around blocks that a study's ``write_page`` fills.

A block of a page is delimited by ``<!-- generated: NAME -->`` and
``<!-- end generated -->`` lines; :func:`fill_blocks` replaces what lies
between them and leaves every other line as it is, so that a page's question,
answer and discussion are written by hand and its tables come from the runs.
"""

import re
from pathlib import Path

from skldp.utils._atomic import replace_text

__all__ = ["fill_blocks", "command_block", "with_figure", "page_then_figure"]

_BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)"
                    r"(<!-- end generated -->)", re.DOTALL)


def fill_blocks(path, blocks):
    """Replace the generated blocks of the page ``path``.

    Parameters
    ----------
    path : path-like
        The page (markdown).
    blocks : dict of str -> str
        Name -> new content of each block.

    Returns
    -------
    path : pathlib.Path

    Raises
    ------
    FileNotFoundError
        The page does not exist.
    ValueError
        A block of ``blocks`` has no markers in the page (the text would be lost).

    Notes
    -----
    The page is written whole to a new file that replaces it: a reader (or a
    second ``reproduce`` filling the same page) never finds it truncated, and a
    writer killed midway leaves the old page.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such page. A study's page is written by hand "
                                "around its generated blocks: copy it from docs/results/ "
                                "into the pages folder first.")
    text = path.read_text(encoding="utf-8")
    found = {m.group("name") for m in _BLOCK.finditer(text)}
    missing = sorted(set(blocks) - found)
    if missing:
        raise ValueError(f"{path.name}: no block {missing} (lines '<!-- generated: NAME -->' "
                         "and '<!-- end generated -->' mark one); the page is unchanged.")

    def replace(m):
        body = blocks.get(m.group("name"))
        if body is None:
            return m.group(0)
        return m.group(1) + body.rstrip("\n") + "\n" + m.group(4)

    replace_text(path, _BLOCK.sub(replace, text))   # never half written
    return path


def command_block(name, n_records, command=None, runs_file=None, partial=None):
    """The lines that say how to reproduce a page and where its runs are.

    Parameters
    ----------
    name : str
        The study's name.
    n_records : int
        Records in its runs file.
    command : str or None, default=None
        The command (default: ``python -m skldp reproduce <name>``).
    runs_file : path-like or None, default=None
        The runs file the page was written from (default: the repository's,
        ``studies/runs/<name>_runs.jsonl``).
    partial : tuple of (int, int) or None, default=None
        ``(k, n)``: only ``k`` of the ``n`` runs of the command are recorded
        (the page then says so); None: all of them.

    Returns
    -------
    markdown : str
    """
    command = command or f"python -m skldp reproduce {name}"
    runs_file = runs_file or f"studies/runs/{name}_runs.jsonl"
    text = (f"From the root of a clone of the repository (resumable: recorded runs are "
            f"skipped; the page is rewritten from the runs file):\n\n```\n{command}\n```\n\n"
            f"Runs: `{runs_file}` ({n_records} records; one per run).\n")
    if partial is not None:
        k, n = partial
        text += (f"\n**Partial results: {k} of the {n} runs of this command are recorded**; "
                 "the tables show those only (the same command runs the others).\n")
    return text


def with_figure(page, draw):
    """``{"page": page, "figure": draw()}``, or the page alone without matplotlib.

    Parameters
    ----------
    page : pathlib.Path
        The page written.
    draw : callable
        Draws the page's figure and returns its path.

    Returns
    -------
    paths : dict of str -> pathlib.Path
    """
    try:
        import matplotlib  # noqa: F401
    except ImportError:   # the page is complete without its figure
        return {"page": page}
    return {"page": page, "figure": draw()}


def page_then_figure(page, blocks, draw):
    """Write the page ``page`` from ``blocks`` and its figure, the figure last in place.

    The figure's new file is written first, then the page, then the figure is
    renamed over the old one: a failure before that rename leaves the old
    figure, never a new one beside an old page.

    Parameters
    ----------
    page : pathlib.Path
        The page (see :func:`fill_blocks`).
    blocks : dict of str -> str
        Its blocks.
    draw : callable or None
        ``draw(then)`` draws the figure, calls ``then()`` once its new file is
        whole and before the rename, and returns its path (None when nothing is
        drawn); None: no figure.

    Returns
    -------
    paths : dict of str -> pathlib.Path
    """
    out = {}
    figure = None if draw is None else draw(
        lambda: out.setdefault("page", fill_blocks(page, blocks)))
    if "page" not in out:   # no figure drawn (no matplotlib)
        out["page"] = fill_blocks(page, blocks)
    if figure is not None:
        out["figure"] = figure
    return out

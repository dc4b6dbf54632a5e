"""Row blocks of a dense ``n x d`` array: bounded temporaries without a loop over nodes."""

__all__ = ["row_blocks"]


def row_blocks(n, d, entries):
    """Slices of consecutive whole rows, each of at most ``entries`` entries (at least one row).

    Parameters
    ----------
    n, d : int
        Rows and columns of the array.
    entries : int
        Budget of entries (``rows x d``) per block.

    Yields
    ------
    slice
    """
    step = max(1, entries // max(d, 1))
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))

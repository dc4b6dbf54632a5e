"""How skldp's commands end: a user error in one line, an interruption with 130."""

import os
import sys

__all__ = ["run_command"]

TRACEBACK_VARIABLE = "SKLDP_TRACEBACK"


def run_command(entry, argv, prog, interrupted="interrupted"):
    """Run ``entry(argv)`` as a command and return its exit status.

    A ``ValueError`` or ``OSError`` (a user error: an unknown dataset, a
    damaged runs file, a missing folder) ends with one line,
    ``<prog>: <message>``, and status 1; Ctrl-C ends with status 130. With
    the environment variable ``SKLDP_TRACEBACK=1`` the error propagates with
    its traceback instead, to see where an unexpected one was raised.
    """
    try:
        return entry(argv)
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130
    except (ValueError, OSError) as exc:   # RunsFileError is a ValueError
        if os.environ.get(TRACEBACK_VARIABLE, "") not in ("", "0"):
            raise
        text = " ".join(str(exc).split()) or type(exc).__name__
        sys.exit(f"{prog}: {text}")

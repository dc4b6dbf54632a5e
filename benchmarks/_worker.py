"""Run one side of a side-by-side benchmark in a subprocess on a given source tree.

The worker prints one line ``RESULT <json>`` (:func:`emit`); the parent runs it with
``PYTHONPATH`` set to the source tree it measures (:func:`run_worker`), so that two
versions of skldp are timed alternately under the same load.
"""

import json
import subprocess
import sys

PREFIX = "RESULT "


def emit(result):
    """Print the worker's result for :func:`run_worker` to read."""
    print(PREFIX + json.dumps(result), flush=True)


def run_worker(cmd, src, env, preexec_fn=None):
    """Run ``cmd`` in ``src`` and return the result it emitted; exit if it failed."""
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=src,
                         preexec_fn=preexec_fn)
    line = [x for x in res.stdout.splitlines() if x.startswith(PREFIX)]
    if res.returncode or not line:
        sys.stderr.write(res.stderr[-3000:])
        raise SystemExit(f"worker on {src} failed (rc={res.returncode})")
    return json.loads(line[-1][len(PREFIX):])

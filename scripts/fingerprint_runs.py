"""Add the configuration fingerprint to the records of a paper study that have none.

Records written before skldp fingerprinted runs carry none, and are taken as they
are (legacy). For a study whose records were made by its definition as it is now
(its page regenerates unchanged from them), this one-off migration adds to each
of them the fingerprint of its run, so that a later change of the study is found
(``python -m skldp reproduce`` then stops on the records it makes stale). It
rewrites the runs file whole, under its lock; run again, it changes nothing.

From the root of a clone, with the arguments of the command that writes the page::

    python scripts/fingerprint_runs.py budget_split --datasets cora citeseer facebook --seeds 10
    python scripts/fingerprint_runs.py lpgnn

Records of runs that the command does not declare are left without one (counted
as ``outside``).
"""

import argparse
import sys
from pathlib import Path

from skldp.experiments import fingerprint_legacy_runs


def main(argv=None):
    sys.path.insert(0, str(Path.cwd()))   # the studies package of the clone
    import studies

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("study", help=f"one of {studies.list_studies()}")
    p.add_argument("--datasets", nargs="+", default=None)
    p.add_argument("--seeds", type=int, default=None, help="number of seeds (0..N-1)")
    p.add_argument("--eps", type=float, nargs="+", default=None)
    p.add_argument("--kinds", nargs="+", default=None)
    p.add_argument("--runs-dir", default=None, help="default: studies/runs")
    args = p.parse_args(argv)
    kwargs = {k: v for k, v in (("datasets", args.datasets), ("eps", args.eps),
                                ("kinds", args.kinds)) if v}
    if args.seeds:
        kwargs["seeds"] = range(args.seeds)
    study = studies.get_study(args.study, **kwargs)
    counts = fingerprint_legacy_runs(study, args.runs_dir or studies.RUNS_DIR)
    print(f"{args.study}: {counts['stamped']} fingerprint(s) added, "
          f"{counts['fingerprinted']} record(s) had one, {counts['outside']} record(s) of "
          "runs that this command does not declare left without one")
    return 0


if __name__ == "__main__":
    sys.exit(main())

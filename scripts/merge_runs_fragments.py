"""Merge a study's old run fragments into its one runs file (``<study>_runs.jsonl``).

Each old record becomes a runner record (``skldp.experiments``) with the same
value; the per-cell means before (read from the fragments) and after (read
back from the merged file) are printed and compared exactly. The fragments
are left in place; delete them once the check passes. The PrivGE fragments
(``privge_runs_<dataset>.json``) and the 21 link-prediction fragments
(``link_prediction_runs_*.jsonl``, ``link_prediction_ablation_*.jsonl``), and the RGNN
(4), Solitude (2) and LPGNN (3) fragments named in ``FRAGMENTS`` were merged and deleted:
those modes now document how the runs files were made and need the fragments back from
git history.

The RGNN, Solitude and LPGNN fragments are merged by the same check: each record
keeps its fields and gains ``study``, the unique ``key`` that the study's script
appends under (its ``runner_record``) and ``source`` (the fragment it came from); a
run recorded twice keeps its first record, in the order the script's report read
the fragments (the values are compared after that).

Usage::

    python scripts/merge_runs_fragments.py privge
    python scripts/merge_runs_fragments.py link_prediction
    python scripts/merge_runs_fragments.py rgnn
"""

import argparse
import importlib.util
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

from skldp.experiments import RunSpec, load_runs

RESULTS = Path("docs/results")


def _eps_key(e):
    return "inf" if math.isinf(e) else f"{e:g}"


def privge_records(results=RESULTS):
    """Runner records of the PrivGE fragments, and the fragments' per-cell values."""
    records, before = [], defaultdict(list)
    for name in ("cora", "facebook"):
        src = results / f"privge_runs_{name}.json"
        data = json.loads(src.read_text())[name]
        for seed, acc in zip(data["graph_only_seeds"], data["graph_only"], strict=True):
            spec = RunSpec(name, "graph-only", "random", int(seed), ())
            records.append(_record(spec, acc, 0.0, src.name))
            before[(name, "graph-only", "")].append(acc)
        for key, cell in data.items():
            if key in ("graph_only", "graph_only_seeds"):
                continue
            eps = float(key)
            for seed, acc in zip(cell["seeds"], cell["acc"], strict=True):
                spec = RunSpec(name, "hds", "random", int(seed), (("hds__eps", eps),))
                records.append(_record(spec, acc, float(cell["eps_user"]), src.name))
                before[(name, "hds", _eps_key(eps))].append(acc)
    return records, before


def _record(spec, acc, eps_spent, source):
    return {"study": "privge", "key": spec.key, "dataset": spec.dataset, "method": spec.method,
            "split": spec.split, "seed": spec.seed, "params": spec.param_dict,
            "metrics": {"accuracy": float(acc)}, "eps_spent": eps_spent,
            "privacy": {"local_epsilon": eps_spent}, "info": {}, "wall_s": None,
            "cpu_s": None, "peak_rss_mb": None, "source": source}


LP_ABLATION = ("negative_ratio", "loss")


def link_prediction_records(results=RESULTS):
    """Runner records of the link-prediction fragments (every old field kept)."""
    records, before = [], defaultdict(list)
    files = sorted(results.glob("link_prediction_runs_*.jsonl")) + sorted(
        results.glob("link_prediction_ablation_*.jsonl"))
    for src in files:
        for line in src.read_text().splitlines():
            if not line.strip():
                continue
            r = json.loads(line)
            params = {"paper": r["paper"], "eps": r["eps"],
                      **{k: r[k] for k in LP_ABLATION if k in r}}
            spec = RunSpec(r["dataset"], r["method"], "edge-85/5/10", int(r["seed"]),
                           tuple(sorted(params.items())))
            records.append({"study": "link_prediction", "key": spec.key, **r,
                            "split": spec.split, "params": spec.param_dict,
                            "metrics": {"auc": r["auc"]}, "source": src.name})
            before[_lp_cell(r)].append(r["auc"])
    return records, before, files


def _lp_cell(r):
    abl = ",".join(f"{k}={r[k]}" for k in LP_ABLATION if k in r)
    eps = "" if r["eps"] is None else _eps_key(float(r["eps"]))
    return (r["dataset"], f"{r['paper']}/{r['method']}", f"{eps} {abl}".strip())


# Fragments of each study, in the order its report read them (the first record of a run
# is kept), the script that appends to the merged file, and the value compared.
FRAGMENTS = {
    "rgnn": (["rgnn_runs.jsonl", "rgnn_runs_lpgnn.jsonl", "rgnn_runs_k16.jsonl",
              "rgnn_runs_lpgnn_sound.jsonl"], "reproduce_rgnn.py", "acc"),
    "solitude": (["solitude_runs_base.jsonl", "solitude_runs_solitude.jsonl"],
                 "reproduce_solitude.py", "acc"),
    "lpgnn": (["lpgnn_runs_table2.jsonl", "lpgnn_runs_lpgnn.jsonl",
               "lpgnn_runs_facebook.jsonl"], "reproduce_lpgnn.py", "acc"),
    # already one file: its records only gain the study and a key
    "dpgnn": (["dpgnn_runs.jsonl"], "reproduce_dpgnn.py", "test"),
}
# Fields that describe how a run went, not which cell it belongs to.
NOT_CELL = {"study", "key", "source", "split", "params", "metrics", "seed", "seconds", "epochs",
            "label_agreement", "eps_x_sound", "eps_x_paper", "eps_x_total", "acc", "val",
            "test", "epsilon", "delta", "z", "selected_steps", "alpha"}


def _script(name):
    path = Path(__file__).resolve().parent / name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(r):
    return tuple(sorted((k, json.dumps(v)) for k, v in r.items() if k not in NOT_CELL))


def fragment_records(study, results=RESULTS):
    """Runner records of a study's fragments (every old field kept), first record per key."""
    names, script, value = FRAGMENTS[study]
    runner_record = _script(script).runner_record
    records, before, seen, repeated, n_old = [], defaultdict(list), set(), 0, 0
    for name in names:
        for line in (results / name).read_text().splitlines():
            if not line.strip():
                continue
            n_old += 1
            rec = {**runner_record(json.loads(line)), "source": name}
            if rec["key"] in seen:
                repeated += 1  # recorded by two processes: the report kept the first
                continue
            seen.add(rec["key"])
            records.append(rec)
            before[_cell(rec)].append(rec[value])
    print(f"{study}: {n_old} records in {len(names)} fragments, {repeated} repeated run(s) dropped")
    return records, before, [results / n for n in names]


def _cells_after(records):
    if records and records[0]["study"] in FRAGMENTS:
        value = FRAGMENTS[records[0]["study"]][2]
        after = defaultdict(list)
        for r in records:
            after[_cell(r)].append(r[value])
        return after
    if records and records[0]["study"] == "link_prediction":
        after = defaultdict(list)
        for r in records:
            after[_lp_cell(r)].append(r["metrics"]["auc"])
        return after
    after = defaultdict(list)
    for r in records:
        eps = r["params"].get("hds__eps")
        after[(r["dataset"], r["method"], "" if eps is None else _eps_key(eps))].append(
            r["metrics"]["accuracy"])
    return after


def merge(study, records, before, out, sources=()):
    if out.exists() and out not in sources:
        raise SystemExit(f"{out} exists; remove it to merge again.")
    keys = [r["key"] for r in records]
    if len(set(keys)) != len(keys):
        raise SystemExit("two fragments record the same run")
    out.write_text("".join(json.dumps(r) + "\n" for r in records))
    after = _cells_after(load_runs(out, study))
    ok = True
    print(f"{'cell':<32} {'n before':>8} {'mean before':>12} {'n after':>8} {'mean after':>12}")
    for cell in sorted(before, key=str):
        b, a = before[cell], after.get(cell, [])
        mb, ma = sum(b) / len(b), (sum(a) / len(a) if a else float("nan"))
        same = sorted(b) == sorted(a)
        ok &= same
        scale = 1 if study == "link_prediction" else 100  # AUC is stored in %
        name = ("/".join(f"{k}={v}" for k, v in cell) if study in FRAGMENTS
                else "/".join(c for c in cell if c))
        print(f"{name:<32} {len(b):>8} {scale * mb:>12.4f} "
              f"{len(a):>8} {scale * ma:>12.4f} {'' if same else 'DIFFERENT'}")
    ok &= set(after) == set(before)
    print(f"{len(records)} records -> {out}; values identical: {ok}")
    return ok


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("study", choices=["privge", "link_prediction", *FRAGMENTS])
    args = p.parse_args(argv)
    sources = ()
    if args.study == "privge":
        records, before = privge_records()
    elif args.study == "link_prediction":
        records, before, _ = link_prediction_records()
    else:
        records, before, sources = fragment_records(args.study)
    out = RESULTS / f"{args.study}_runs.jsonl"
    return 0 if merge(args.study, records, before, out, sources) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The committed records are the studies' runs as the studies are now: each record that a
page's command declares carries the fingerprint of its run. A change to a study's fixed
configuration (a factory's parameters, its configs, a data function) fails here until its
runs are done again (``python -m skldp reproduce <study> ... --redo-changed``)."""

import pytest

from skldp.experiments import load_runs, run_fingerprints
from skldp.experiments._runner import _is_stale
from studies import RUNS_DIR, get_study

# the arguments of each page's commands (the pages' "How to reproduce"); dpgnn's runs of
# its code version 1 are no run of the study now, and stay without a fingerprint
PAGE_COMMANDS = [
    ("budget_split", {"datasets": ["cora", "citeseer", "facebook"], "seeds": range(10)}),
    ("dpgnn", {}), ("honest_utility", {"seeds": range(5)}),
    ("label_scarce", {"datasets": ["cora", "citeseer", "facebook", "twitch_ENGB",
                                   "wiki_chameleon", "german"], "seeds": range(10),
                      "eps": [0.5, 1, 2, 4, 8]}),
    ("label_scarce", {"datasets": ["lastfm_asia_nofeatures"], "seeds": range(10)}),
    ("link_prediction", {}), ("lpgnn", {}), ("lpgnn_mae", {}), ("planetoid", {}),
    ("privge", {}), ("rgnn", {}), ("solitude", {}),
]


@pytest.mark.long
@pytest.mark.parametrize("name, kwargs", PAGE_COMMANDS)
def test_every_declared_record_carries_its_runs_fingerprint(name, kwargs, dataset_file):
    study = get_study(name, **kwargs)
    for dataset in study.datasets:
        dataset_file(dataset)   # (skips where a dataset is not available offline)
    fingerprints = run_fingerprints(study)
    assert None not in fingerprints.values()                  # every estimator built
    records = [r for r in load_runs(RUNS_DIR / f"{name}_runs.jsonl", name)
               if r["key"] in fingerprints]
    assert len(records) == len(fingerprints)                  # every run recorded
    assert all("fingerprint" in r for r in records)           # none left legacy
    stale = [r["key"] for r in records if _is_stale(r, fingerprints)]
    assert not stale, (f"{len(stale)} records of {name} were made under another "
                       f"configuration, e.g. {stale[0]}")

"""The RGNN authors' coding of Student and German (``studies.rgnn.authors_coding``)."""

import numpy as np
import pandas as pd
import pytest

from studies.rgnn import AUTHORS_CODING, CONFIG, authors_coding, categorical_data


def _toy(coding, **values):
    """Two rows holding every attribute the coding reads (its first code), then ``values``."""
    rules = AUTHORS_CODING[coding]
    first = {**{a: 0 for a in rules["keep"]}, **{a: 0 for a in rules["at_least"]},
             **{a: 0 for a in rules["bins"]}, **{a: min(v) for a, v in rules["one_hot"].items()}}
    frame = pd.DataFrame({a: [v, v] for a, v in first.items()})
    for a, v in values.items():
        frame[a] = v
    return frame


@pytest.mark.parametrize("name, d", [("student_rgnn", 60), ("german_rgnn", 46)])
def test_the_study_codes_the_datasets_as_table_1(dataset_file, name, d):
    from skldp.datasets import load_dataset
    dataset_file(name)
    bunch = load_dataset(name)
    G, _ = categorical_data(bunch.data, bunch.target, CONFIG[name])
    X = np.asarray(G.features)
    assert X.shape == (bunch.data.n_nodes, d)   # Table I's d (the raw files: 32 and 38)
    assert set(np.unique(X)) <= {0, 1}
    names = list(G.feature_names)
    for attribute in AUTHORS_CODING[name]["bins"]:   # each one-hot block: one 1 per user
        block = [j for j, n in enumerate(names) if n.startswith(attribute + "<=")
                 or n.startswith(attribute + ">")]
        assert len(block) == len(AUTHORS_CODING[name]["bins"][attribute]) + 1
        np.testing.assert_array_equal(X[:, block].sum(axis=1), 1)


def test_fixed_thresholds_and_bins_on_a_toy_frame():
    frame = _toy("student_rgnn", G1=[9, 10], age=[19, 20])
    X, names = authors_coding(frame.to_numpy(), frame.columns, "student_rgnn")
    assert X.shape[1] == 60
    np.testing.assert_array_equal(X[:, names.index("G1>=10")], [0, 1])   # a passing grade
    np.testing.assert_array_equal(X[:, names.index("age>18")], [1, 1])   # 20 joins 19
    frame = _toy("german_rgnn", Age=[30, 31], LoanAmount=[4000, 4001],
                 NumberOfLiableIndividuals=[1, 2])
    X, names = authors_coding(frame.to_numpy(), frame.columns, "german_rgnn")
    assert X.shape[1] == 46
    np.testing.assert_array_equal(X[:, names.index("Age<=30")], [1, 0])   # (.., 30], (30, 50]
    np.testing.assert_array_equal(X[:, names.index("Age<=50")], [0, 1])
    np.testing.assert_array_equal(X[:, names.index("LoanAmount>4000")], [0, 1])
    np.testing.assert_array_equal(X[:, names.index("NumberOfLiableIndividuals>=2")], [0, 1])


def test_bad_attributes_are_refused():
    frame = _toy("student_rgnn", Mjob=[0, 7])
    with pytest.raises(ValueError, match="'Mjob' holds 7, outside its codes"):
        authors_coding(frame.to_numpy(), frame.columns, "student_rgnn")
    frame = _toy("german_rgnn", Age=[30, np.nan])
    with pytest.raises(ValueError, match="'Age' holds NaN"):
        authors_coding(frame.to_numpy(), frame.columns, "german_rgnn")
    frame = _toy("german_rgnn").drop(columns="Gender")
    with pytest.raises(ValueError, match=r"needs the attributes \['Gender'\]"):
        authors_coding(frame.to_numpy(), frame.columns, "german_rgnn")
    with pytest.raises(ValueError, match="coding must be one of"):
        authors_coding(frame.to_numpy(), frame.columns, "cora")

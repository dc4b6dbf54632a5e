"""The RGNN authors' coding of Student and German (``studies.rgnn.authors_coding``)."""

import numpy as np
import pytest

from studies.rgnn import AUTHORS_CODING, CONFIG, authors_coding, categorical_data


def _toy(coding, drop=(), **values):
    """Two rows holding every attribute the coding reads (its first code), then ``values``:
    the array and its column names."""
    rules = AUTHORS_CODING[coding]
    first = {**{a: 0 for a in rules["keep"]}, **{a: 0 for a in rules["at_least"]},
             **{a: 0 for a in rules["bins"]}, **{a: min(v) for a, v in rules["one_hot"].items()}}
    columns = {a: values.get(a, [v, v]) for a, v in first.items() if a not in drop}
    return np.array(list(columns.values()), dtype=np.float64).T, list(columns)


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


def test_fixed_thresholds_and_bins_on_toy_rows():
    X, names = authors_coding(*_toy("student_rgnn", G1=[9, 10], age=[19, 20]), "student_rgnn")
    assert X.shape[1] == 60
    np.testing.assert_array_equal(X[:, names.index("G1>=10")], [0, 1])   # a passing grade
    np.testing.assert_array_equal(X[:, names.index("age>18")], [1, 1])   # 20 joins 19
    X, names = authors_coding(*_toy("german_rgnn", Age=[30, 31], LoanAmount=[4000, 4001],
                                    NumberOfLiableIndividuals=[1, 2]), "german_rgnn")
    assert X.shape[1] == 46
    np.testing.assert_array_equal(X[:, names.index("Age<=30")], [1, 0])   # (.., 30], (30, 50]
    np.testing.assert_array_equal(X[:, names.index("Age<=50")], [0, 1])
    np.testing.assert_array_equal(X[:, names.index("LoanAmount>4000")], [0, 1])
    np.testing.assert_array_equal(X[:, names.index("NumberOfLiableIndividuals>=2")], [0, 1])


def test_bad_attributes_are_refused():
    with pytest.raises(ValueError, match="'Mjob' holds 7, outside its codes"):
        authors_coding(*_toy("student_rgnn", Mjob=[0, 7]), "student_rgnn")
    with pytest.raises(ValueError, match="'Age' holds NaN"):
        authors_coding(*_toy("german_rgnn", Age=[30, np.nan]), "german_rgnn")
    with pytest.raises(ValueError, match=r"needs the attributes \['Gender'\]"):
        authors_coding(*_toy("german_rgnn", drop=("Gender",)), "german_rgnn")
    with pytest.raises(ValueError, match="coding must be one of"):
        authors_coding(*_toy("german_rgnn"), "cora")

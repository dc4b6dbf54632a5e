"""The suite's own configuration: the order of the tests on pytest-xdist's workers."""

from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture
def modify_items(request):
    """This folder's ``pytest_collection_modifyitems``, from the conftest plugin pytest
    loaded (``import conftest`` may find another folder's conftest.py)."""
    path = Path(__file__).with_name("conftest.py").resolve()
    for plugin in request.config.pluginmanager.get_plugins():
        if Path(getattr(plugin, "__file__", "") or "").resolve() == path:
            return plugin.pytest_collection_modifyitems
    raise AssertionError("tests/conftest.py is not loaded")


class _Item:
    def __init__(self, name, long):
        self.name, self.long = name, long

    def get_closest_marker(self, name):
        return object() if name == "long" and self.long else None


def _items():
    return [_Item("a", False), _Item("L1", True), _Item("b", False), _Item("c", False),
            _Item("L2", True), _Item("d", False)]


def test_long_tests_go_first_every_other_one_on_xdist_workers(modify_items):
    items = _items()
    modify_items(SimpleNamespace(workerinput={}), items)
    # handed out two to a worker: each of the first two workers starts with a long test
    assert [it.name for it in items] == ["L1", "a", "L2", "b", "c", "d"]


def test_order_is_pytests_without_workers(modify_items):
    items = _items()
    modify_items(SimpleNamespace(), items)
    assert [it.name for it in items] == ["a", "L1", "b", "c", "L2", "d"]


def test_a_forked_child_reports_its_code_and_a_hung_one_is_killed(forked_exit_code):
    import time
    assert forked_exit_code(lambda: None) == 0
    assert forked_exit_code(lambda: 3) == 3
    assert forked_exit_code(lambda: 1 / 0) == 1
    t0 = time.monotonic()
    assert forked_exit_code(lambda: time.sleep(30), timeout=0.3) == -9
    assert time.monotonic() - t0 < 10

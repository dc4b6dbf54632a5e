"""The suite's check without the optional packages (scripts/without_extras) hides them all."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "scripts" / "without_extras"


def _hidden():
    text = (TOOL / "sitecustomize.py").read_text(encoding="utf-8")
    return set(re.findall(r'"(\w+)"', text[text.index("_BLOCKED"):text.index("}")]))


def test_every_package_of_the_test_extra_is_hidden():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    line = re.search(r"^test = \[(.*?)\]$", text, re.M | re.S).group(1)   # Python 3.10: no tomllib
    extra = re.findall(r'"([^"]+)"', line)
    assert "pytest>=7" in extra and len(extra) > 5
    modules = set()
    for req in extra:
        name = re.match(r"[\w.-]+", req).group(0).replace("-", "_").lower()
        modules |= {name} | set(re.findall(r"\[(\w+)\]", req))   # dask[distributed]
    assert modules - {"pytest"} <= _hidden(), sorted(modules - {"pytest"} - _hidden())


def test_a_hidden_package_reads_as_not_installed():
    code = ("import importlib.util, sys\n"
            "assert importlib.util.find_spec('pandas') is None\n"
            "try:\n    import pandas\nexcept ModuleNotFoundError:\n    pass\n"
            "else:\n    raise AssertionError('pandas was imported')\n"
            "import sklearn.utils.validation\n"
            "assert 'pandas' not in sys.modules and importlib.util.find_spec('numpy')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(TOOL)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)

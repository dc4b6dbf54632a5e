"""README's commands are what CI runs: ``.ci/run`` holds them verbatim, and nothing else."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text):
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def _section(text, title):
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def test_ci_runs_exactly_the_readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = _bash_blocks(_section(readme, "Set-up (fresh machine)"))
    docs = _bash_blocks(_section(readme, "Documentation"))
    assert len(setup) == 2 and len(docs) == 1
    assert "python -m skldp" in setup[0] and "pytest" in setup[1]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line.strip() and not line.startswith("#")
                and line not in ("set -euo pipefail", 'cd "$(dirname "$0")/.."')]
    assert commands == setup + docs
    # no environment set beside them (e.g. a datasets folder the README does not name)
    assert not any(re.match(r"\s*(export\s+)?[A-Z_]+=", line) for line in ci)


def test_install_instructions_pin_the_same_torch():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pins = set(re.findall(r"torch==[0-9.]+", readme))
    assert len(pins) == 1
    guide = (ROOT / "docs" / "user_guide" / "installation.rst").read_text(encoding="utf-8")
    index = (ROOT / "docs" / "index.rst").read_text(encoding="utf-8")
    for text in (guide, index):
        assert set(re.findall(r"torch==[0-9.]+", text)) == pins
        assert not re.search(r"pip install torch(?!=)", text)  # no unpinned torch

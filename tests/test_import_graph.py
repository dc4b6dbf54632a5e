"""The package's modules import each other without cycles, lazy imports included.

A cycle hidden by an import inside a function (``_graph_data`` <-> ``utils.validation``
once) still ties two modules together; arrows must point one way.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules():
    mods = {}
    for path in (ROOT / "skldp").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    return mods


def import_graph(mods):
    """Module -> the package modules it imports (at any depth of its code)."""
    graph = {}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                deps.update(t for t in [target] + [f"{target}.{a.name}" for a in node.names]
                            if t in mods)
        graph[name] = deps - {name}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_detects_a_lazy_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    mods = _modules()
    graph = import_graph(mods)
    assert "skldp.utils.validation" in graph["skldp.base"]  # the graph is read
    assert cycles(graph) == []


def test_the_package_lists_its_public_names():
    import skldp
    names = dir(skldp)
    assert set(skldp.__all__) <= set(names)
    assert not [n for n in names if n.startswith("_") and n != "__version__"]
    assert "importlib" not in names   # the lazy loader's helper stays private

"""Package layout: no import cycles, modules under 600 lines, environments independent of the
retargeting and evaluation stages. Static (``ast``), so it sees function-level imports too."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "musclerl"
MAX_LINES = 600
#: Modules allowed over MAX_LINES, with the reason (empty: none today).
LONG_MODULES: dict[str, str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imported_modules(name: str, path: Path) -> set[str]:
    """musclerl modules that ``name`` imports anywhere in its source (module or function level,
    ``TYPE_CHECKING`` blocks included). ``from pkg import sub`` counts as importing ``pkg.sub``."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target:
                found.add(target)
    # a submodule importing its own package (or the package a child) is not a dependency here
    return {m for m in found if m != name and not name.startswith(m + ".")}


def import_graph() -> dict[str, set[str]]:
    return {name: imported_modules(name, path) for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_graph_builder_sees_function_level_and_relative_imports(tmp_path):
    source = "import os\n\ndef f():\n    from musclerl.retarget import batch\n    from . import report\n"
    path = PACKAGE / "retarget" / "x.py"
    tree_path = tmp_path / "x.py"
    tree_path.write_text(source)
    MODULES["musclerl.retarget.x"] = path
    try:
        found = imported_modules("musclerl.retarget.x", tree_path)
    finally:
        del MODULES["musclerl.retarget.x"]
    assert found == {"musclerl.retarget.batch", "musclerl.retarget.report"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_cycles():
    assert find_cycle(import_graph()) is None


def test_modules_stay_short():
    long = {
        name: len(path.read_text().splitlines())
        for name, path in MODULES.items()
        if len(path.read_text().splitlines()) > MAX_LINES
    }
    assert set(long) <= set(LONG_MODULES), f"modules over {MAX_LINES} lines: {long}"


def test_envs_do_not_import_later_stages():
    graph = import_graph()
    later = ("musclerl.retarget", "musclerl.evaluate")
    bad = {
        name: sorted(m for m in deps if m.startswith(later))
        for name, deps in graph.items()
        if name.startswith("musclerl.envs")
    }
    assert not {k: v for k, v in bad.items() if v}


def test_no_module_shadows_the_standard_library():
    shadowing = sorted(
        name for name in MODULES if name.rpartition(".")[2] in sys.stdlib_module_names and "__" not in name
    )
    assert not shadowing


def test_envs_docstring_lists_every_module():
    import musclerl.envs

    listed = musclerl.envs.__doc__
    missing = [
        p.name for p in (PACKAGE / "envs").glob("*.py") if p.name != "__init__.py" and p.name not in listed
    ]
    assert not missing

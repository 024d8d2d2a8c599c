"""Package layout: the packages in pipeline order with no upward import, no import cycles, modules
under 600 lines. Static (``ast``), so it sees function-level imports too."""

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


#: The packages (and top-level modules) of ``musclerl`` from the bottom of the pipeline to the top.
#: A module may import its own package and anything in a lower layer, never a higher one, and never
#: the other package of its layer: ``retarget`` and ``envs`` are siblings joined by the Trajectory
#: (``motion``). The first layer, the plain top-level modules, may import each other (no cycle).
#: ``cli``'s command table names the ``bench`` modules as strings (imported when the parser is built),
#: so the benchmarks sit above the commands they time (``bench so`` runs ``cli.reference``).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "fileio", "resources", "typed_config", "jax_setup"),
    ("geometry",),  # rotations (numpy, jax), numpy/jax array helpers
    ("motion",),  # motion files, Trajectory, datasets' manifests
    ("models",),  # registry, couplings, geoms, scaling
    ("ground",),  # foot contact, the ground measured on the model
    ("dynamics",),  # inverse dynamics, static optimisation, plausibility, dataset screening
    ("retarget", "envs"),
    ("rl",),
    ("evaluate",),
    ("cli",),
    ("bench",),
    ("musclerl", "__main__"),  # the package's public API and ``python -m musclerl``
)
#: Layers whose units may import each other.
OPEN_LAYERS = (0,)


def unit(module: str) -> str:
    """The layer unit of a musclerl module: its top-level package or module under ``musclerl``
    (``musclerl`` itself for the package's ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(name: str, layers=LAYERS) -> int:
    for i, units in enumerate(layers):
        if name in units:
            return i
    raise KeyError(name)


def upward_imports(graph: dict[str, set[str]], layers=LAYERS, open_layers=OPEN_LAYERS) -> list[str]:
    """Every import of ``graph`` (module -> modules it imports) that breaks the layer order, as
    ``"importer -> imported (layer i -> j)"`` lines; an undeclared unit is reported too."""
    bad = []
    for name, deps in sorted(graph.items()):
        for dep in sorted(deps):
            a, b = unit(name), unit(dep)
            if a == b:
                continue
            try:
                la, lb = layer_of(a, layers), layer_of(b, layers)
            except KeyError as err:
                bad.append(f"{name} -> {dep}: '{err.args[0]}' is in no layer of LAYERS")
                continue
            if lb > la or (lb == la and la not in open_layers):
                bad.append(f"{name} -> {dep} (layer {la} -> {lb})")
    return bad


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for name, deps in graph.items():
        units.setdefault(unit(name), set()).update(unit(d) for d in deps if unit(d) != unit(name))
    for deps in list(units.values()):
        for d in deps:
            units.setdefault(d, set())
    return units


def test_layer_checker_catches_upward_and_sibling_imports(tmp_path):
    # a function-level import of a higher stage, parsed from a file as the real modules are
    source = "def f():\n    from musclerl.evaluate import metrics\n    from musclerl.envs import config\n"
    tree_path = tmp_path / "x.py"
    tree_path.write_text(source)
    MODULES["musclerl.motion.x"] = PACKAGE / "motion" / "x.py"
    try:
        found = imported_modules("musclerl.motion.x", tree_path)
    finally:
        del MODULES["musclerl.motion.x"]
    assert found == {"musclerl.evaluate.metrics", "musclerl.envs.config"}
    assert upward_imports({"musclerl.motion.x": found}) == [
        "musclerl.motion.x -> musclerl.envs.config (layer 2 -> 6)",
        "musclerl.motion.x -> musclerl.evaluate.metrics (layer 2 -> 8)",
    ]
    # siblings may not import each other; downward and same-package imports pass
    assert upward_imports({"musclerl.retarget.a": {"musclerl.envs.b"}}) == [
        "musclerl.retarget.a -> musclerl.envs.b (layer 6 -> 6)"
    ]
    graph = {"musclerl.envs.a": {"musclerl.envs.b", "musclerl.motion.trajectory", "musclerl.errors"}}
    assert upward_imports(graph) == []
    assert upward_imports({"musclerl.fileio": {"musclerl.errors"}}) == []
    assert upward_imports({"musclerl.newpkg.a": {"musclerl.errors"}}) == [
        "musclerl.newpkg.a -> musclerl.errors: 'newpkg' is in no layer of LAYERS"
    ]
    assert package_graph({"musclerl.a.x": {"musclerl.b.y"}, "musclerl.b.y": {"musclerl.a.z"}}) == {
        "a": {"b"},
        "b": {"a"},
    }


def test_every_package_is_in_a_layer():
    declared = {u for units in LAYERS for u in units}
    assert {unit(name) for name in MODULES} == declared


def test_no_upward_package_imports():
    assert upward_imports(import_graph()) == []


def test_no_package_cycles():
    assert find_cycle(package_graph(import_graph())) is None


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

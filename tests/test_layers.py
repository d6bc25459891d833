"""The layering of app/, checked from the source (ast), so it stays true rather than being true.

    entry points (app.cli, app.server)
      -> app.api            GraphQL: strawberry types and resolvers; app.mcp, the same
                            operations as MCP tools; the two transports never import each
                            other
        -> app.request      what a request needs on every transport: session, ledger,
                            loaders, global ids, the check of client strings
        -> app.message_search (people's search), app.history_search (agents' recall),
           app.identity, app.changes, app.workspace_import, app.demo: the surfaces, live
           changes and the import tooling; app.access, which token kind may do what
          -> app.data       SQL; never strawberry, and asyncpg.Record never leaves it
            -> foundation   app.errors, app.settings, app.db, app.migrate, app.embedded_db,
                            app.observability (metrics, traces, logs, the HTTP middleware)

An import may only point down, or sideways within a layer (history_search uses
message_search's query parsing); never up, and no two packages or modules may import each
other, directly or round a loop. A new package fails here until it is given a layer in LAYERS.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

LAYERS = {
    "app.cli": 4,
    "app.server": 4,
    "app.api": 3,
    "app.web": 3,
    "app.mcp": 3,
    "app.request": 2,
    "app.live": 2,
    "app.access": 2,
    "app.message_search": 2,
    "app.history_search": 2,
    "app.identity": 2,
    "app.workspace_import": 2,
    "app.changes": 2,
    "app.demo": 2,
    "app.demo_live": 2,
    "app.data": 1,
    "app.errors": 0,
    "app.settings": 0,
    "app.db": 0,
    "app.migrate": 0,
    "app.embedded_db": 0,
    "app.observability": 0,
}
# Frameworks of the layers above the data layer.
_NOT_IN_DATA = ("strawberry", "graphql", "starlette", "aiodataloader")


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in sorted(APP.rglob("*.py")):
        parts = path.relative_to(APP.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(), str(path))
    return found


MODULES = _modules()


def _imports(tree: ast.Module) -> Iterator[str]:
    """Every module a module imports, anywhere in it (function bodies and TYPE_CHECKING too)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.level == 0, "app/ uses absolute imports"
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                yield submodule if submodule in MODULES else node.module


def _unit(module: str) -> str:
    """The layer unit of an app module: its top-level package or module (app.api, app.db)."""
    return ".".join(module.split(".")[:2])


def _graph() -> dict[str, set[str]]:
    return {
        name: {i for i in _imports(tree) if i in MODULES and i != name}
        for name, tree in MODULES.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_package_has_a_layer() -> None:
    units = {_unit(m) for m in MODULES if m != "app"}
    assert units - LAYERS.keys() == set(), "give each new app package a layer in LAYERS"


def test_no_import_points_up_a_layer() -> None:
    upward = [
        f"{name} imports {target}"
        for name, targets in _graph().items()
        if name != "app"
        for target in targets
        if target != "app"
        # A package without a layer fails test_every_package_has_a_layer instead.
        and LAYERS.get(_unit(target), -1) > LAYERS.get(_unit(name), 99)
    ]
    assert upward == []


def test_the_transports_are_independent() -> None:
    """GraphQL and MCP share what lies below both (app.request), never each other's code."""
    crossing = [
        f"{name} imports {target}"
        for name, targets in _graph().items()
        for target in targets
        if {_unit(name), _unit(target)} == {"app.api", "app.mcp"}
    ]
    assert crossing == []


def test_no_import_cycle_between_packages() -> None:
    units: dict[str, set[str]] = defaultdict(set)
    for name, targets in _graph().items():
        for target in targets:
            if _unit(target) != _unit(name) and "app" not in (name, target):
                units[_unit(name)].add(_unit(target))
    assert _cycles(units) == []


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(_graph()) == []


def test_the_data_layer_imports_no_api_framework() -> None:
    offending = [
        f"{name} imports {target}"
        for name, tree in MODULES.items()
        if _unit(name) == "app.data"
        for target in _imports(tree)
        if target.split(".")[0] in _NOT_IN_DATA
    ]
    assert offending == []


def test_asyncpg_records_stay_in_the_data_layer() -> None:
    """Nothing above app.data names asyncpg.Record: rows leave it as typed dataclasses."""
    offending = [
        name
        for name, tree in MODULES.items()
        if _unit(name) != "app.data"
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "Record")
        or (isinstance(node, ast.ImportFrom) and any(a.name == "Record" for a in node.names))
    ]
    assert offending == []


# What reads or writes the process's environment, as `os.<name>` or imported from os.
_ENVIRONMENT = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _environment_uses(tree: ast.Module) -> Iterator[int]:
    """The lines of a module that touch the environment through os."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in _ENVIRONMENT
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ) or (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in _ENVIRONMENT for alias in node.names)
        ):
            yield node.lineno


def test_only_settings_touches_the_environment() -> None:
    """app.settings reads the environment into Settings (and holds its one write); everything
    else is handed what it needs, so a variable is named, typed and documented in one place."""
    offending = [
        f"{name}:{line}"
        for name, tree in MODULES.items()
        if name != "app.settings"
        for line in _environment_uses(tree)
    ]
    assert offending == []
    assert list(_environment_uses(ast.parse("import os\nos.environ.get('X')"))) == [2]
    assert list(_environment_uses(ast.parse("from os import getenv"))) == [1]


def test_the_checks_would_catch_a_cycle() -> None:
    """The cycle finder itself: a loop of three is one component, a chain is none."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []

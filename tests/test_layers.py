"""The import graph of ``src/``: each module imports only its own layer and the layers below it, and no import
cycle runs through module-level imports.

The layer order is written once, here (:data:`LAYERS`), and docs/architecture.md draws it.  A module's layer
is its top-level package or module under ``agentfy`` (``agentfy.store.repos.agents`` is ``store``,
``agentfy.settings`` is ``settings``).  Which imports count:

* **the layer check** counts every import of an ``agentfy`` module: at module level, inside a function, and
  under ``if TYPE_CHECKING:``.  A late or type-only import of a layer above is still a dependency on it; being
  late only hides it from the interpreter.
* **the cycle check** counts module-level imports only (not under ``TYPE_CHECKING``): those run when a module
  is imported, so only they can leave a module half-initialised.  A lazily loaded optional driver (psycopg's
  listener, the OpenTelemetry SDK, pydantic behind ``agentfy.ids.EntityId``) is imported inside a function
  and so is not part of it.

The only modules allowed to import FastAPI or Starlette are those of the layers in :data:`FRAMEWORK_LAYERS`.

Run this file (``python tests/test_layers.py``) to print the graph between layers, the exceptions and the
cycle check.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter, defaultdict
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

SRC: Final = Path(__file__).resolve().parents[1] / "src"
ROOT_PACKAGE: Final = "agentfy"

#: Bottom first; a module may import its own layer and the layers before it, never one after it.  Layers
#: in one tuple share a rank.  ``__init__`` is the ``agentfy`` package itself (its version).
LAYERS: Final[tuple[tuple[str, ...], ...]] = (
    ("__init__",),
    ("ids",),                  # the ID format, standard library only
    ("identity",),             # typed IDs, agent keys, the tenant scope, the request context
    ("logs", "tracing", "schedule"),  # logging and spans; the cron schedule grammar (croniter, zoneinfo)
    ("store",),                # tables, transactions, repositories, the change feed
    ("cutover",),              # the ID cutover: the store's tables on a connection of its own
    ("events",),               # the outbox, workers, consolidation (writes memory through the store)
    ("agents",),               # the router, the loop, prompts, workspaces
    ("permissions",),          # who may do what, identities through wrappers
    ("runtime",),              # one message through an agent's loop; the agent events it publishes
    ("errors",),               # the API's error, raised by the channels and the gateway
    ("channels",),             # the chat platforms in front of the runtime (their webhooks, mounted by the gateway)
    ("settings", "keys"),      # the one settings object, composed of the components' sections; keys from it
    ("gateway",),              # the HTTP and WebSocket API, and the app that mounts everything
    ("cli", "__main__"),       # the commands
)

#: Upward imports that exist on purpose or for now, each with its reason: the one place they are listed.
#: (importer, imported) modules.  An entry no import needs any more fails the test: delete it then.
ALLOWED_UPWARD: Final[Mapping[tuple[str, str], str]] = {}

#: Third-party frameworks and the only layers that may import them.
FRAMEWORK_LAYERS: Final[Mapping[str, frozenset[str]]] = {
    "fastapi": frozenset({"channels", "gateway"}),
    "starlette": frozenset({"channels", "gateway"}),
}

MODULE: Final = "module"
FUNCTION: Final = "function"
TYPE_CHECKING_ONLY: Final = "type-checking"


@dataclass(frozen=True, slots=True)
class Import:
    """``importer`` imports ``imported`` (both dotted module names) at ``line``; ``kind`` says where:
    at module level, inside a function, or under ``if TYPE_CHECKING:``."""

    importer: str
    imported: str
    line: int
    kind: str

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.imported} ({self.kind})"


def module_names(src: Path) -> dict[str, Path]:
    """Every module under ``src`` by its dotted name (a package by its own name, not ``….__init__``)."""
    found: dict[str, Path] = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_statements(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement of a module with its kind (see :class:`Import`)."""

    def walk(node: ast.AST, kind: str) -> Iterator[tuple[ast.Import | ast.ImportFrom, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, kind
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, FUNCTION if kind == MODULE else kind)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]),
                                    TYPE_CHECKING_ONLY if kind == MODULE else kind)
                for statement in child.orelse:
                    yield from walk(ast.Module(body=[statement], type_ignores=[]), kind)
            else:
                yield from walk(child, kind)

    yield from walk(tree, MODULE)


def _targets(statement: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             modules: Container[str]) -> Iterator[str]:
    """The modules a statement imports: ``from a.b import c`` is ``a.b.c`` where that is a module, else ``a.b``."""
    if isinstance(statement, ast.Import):
        yield from (alias.name for alias in statement.names)
        return
    base = statement.module or ""
    if statement.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - (statement.level - 1)]
        base = ".".join([*package, *([statement.module] if statement.module else [])])
    for alias in statement.names:
        candidate = f"{base}.{alias.name}"
        yield candidate if candidate in modules else base


def all_imports_of(src: Path) -> list[Import]:
    """Every import by a module under ``src``: of ``agentfy`` modules, and of the frameworks of
    :data:`FRAMEWORK_LAYERS` (by the name imported)."""
    modules = module_names(src)
    found: list[Import] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for statement, kind in _import_statements(tree):
            targets = list(_targets(statement, module, path.name == "__init__.py", modules))
            found.extend(Import(module, target, statement.lineno, kind) for target in targets
                         if target.split(".")[0] in (ROOT_PACKAGE, *FRAMEWORK_LAYERS))
    return list(dict.fromkeys(found))  # ``from a import b, c`` of one module b and c: one import


def imports_of(src: Path) -> list[Import]:
    """Every import of an ``agentfy`` module by a module under ``src``."""
    return internal(all_imports_of(src))


def internal(found: Iterable[Import]) -> list[Import]:
    return [i for i in found if i.imported.split(".")[0] == ROOT_PACKAGE]


def layer_of(module: str) -> str:
    """The layer name of a dotted module name (see the module docstring)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def rank_of(layers: tuple[tuple[str, ...], ...] = LAYERS) -> dict[str, int]:
    return {name: rank for rank, group in enumerate(layers) for name in group}


def unplaced(found: Iterable[Import], modules: Iterable[str], layers: tuple[tuple[str, ...], ...] = LAYERS) -> set[str]:
    """Layers of modules that :data:`LAYERS` does not name (a new package must be given its place)."""
    ranks = rank_of(layers)
    names = {layer_of(m) for m in modules} | {layer_of(i.imported) for i in found}
    return {name for name in names if name not in ranks}


def upward(found: Iterable[Import], layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[Import]:
    """The imports of a layer above the importer's own."""
    ranks = rank_of(layers)
    return [i for i in found if layer_of(i.imported) in ranks and layer_of(i.importer) in ranks
            and ranks[layer_of(i.imported)] > ranks[layer_of(i.importer)]]


def violations(found: Iterable[Import], allowed: Mapping[tuple[str, str], str] = ALLOWED_UPWARD,
               layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[Import]:
    """The upward imports :data:`ALLOWED_UPWARD` does not list."""
    return [i for i in upward(found, layers) if (i.importer, i.imported) not in allowed]


def cycles(found: Iterable[Import]) -> list[list[str]]:
    """The import cycles among module-level imports: each strongly connected component of more than one
    module (or a module importing itself), its modules sorted; Tarjan's algorithm."""
    graph: dict[str, set[str]] = defaultdict(set)
    for i in found:
        if i.kind == MODULE:
            graph[i.importer].add(i.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph.get(node, ())):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(components)


def framework_violations(found: Iterable[Import]) -> list[Import]:
    """The imports of a framework by a layer :data:`FRAMEWORK_LAYERS` does not allow it in."""
    return [i for i in found if i.imported.split(".")[0] in FRAMEWORK_LAYERS
            and layer_of(i.importer) not in FRAMEWORK_LAYERS[i.imported.split(".")[0]]]


def report(src: Path = SRC) -> str:
    """The graph between layers (who imports whom, how many imports of each kind), the exceptions, and the
    cycle check: what ``python tests/test_layers.py`` prints."""
    everything = all_imports_of(src)
    found = internal(everything)
    ranks = rank_of()
    edges: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for i in found:
        if layer_of(i.importer) != layer_of(i.imported):
            edges[(layer_of(i.importer), layer_of(i.imported))][i.kind] += 1
    lines = ["layers, bottom first: " + " < ".join("/".join(group) for group in LAYERS), "",
             "imports between layers (importer -> imported: module / function / type-checking imports):"]
    for (importer, imported), kinds in sorted(edges.items(), key=lambda e: (-ranks.get(e[0][0], -1),
                                                                             -ranks.get(e[0][1], -1))):
        arrow = "->" if ranks.get(imported, -1) <= ranks.get(importer, -1) else "-> UPWARD"
        lines.append(f"  {importer:>11} {arrow} {imported:<11} {kinds[MODULE]} / {kinds[FUNCTION]} / "
                     f"{kinds[TYPE_CHECKING_ONLY]}")
    lines += ["", "upward imports:"]
    for i in upward(found):
        reason = ALLOWED_UPWARD.get((i.importer, i.imported))
        lines.append(f"  {i}: " + (f"allowed: {reason}" if reason else "NOT ALLOWED"))
    module_level = [i for i in found if i.kind == MODULE]
    found_cycles = cycles(found)
    lines += ["", f"cycle check: {len(module_names(src))} modules, {len(module_level)} module-level imports, "
              f"{len(found_cycles)} cycles"]
    lines += [f"  cycle: {' <-> '.join(c)}" for c in found_cycles]
    lines += [f"framework imports outside {sorted(set().union(*FRAMEWORK_LAYERS.values()))}: "
              f"{len(framework_violations(everything))}"]
    return "\n".join(lines)


# -- the checks on src/ ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def src_all_imports() -> list[Import]:
    return all_imports_of(SRC)


@pytest.fixture(scope="module")
def src_imports(src_all_imports: list[Import]) -> list[Import]:
    return internal(src_all_imports)


def test_every_module_belongs_to_a_layer(src_imports: list[Import]) -> None:
    assert not unplaced(src_imports, module_names(SRC)), "give the new package its place in LAYERS"


def test_no_module_imports_a_layer_above_its_own(src_imports: list[Import]) -> None:
    wrong = violations(src_imports)
    assert not wrong, "upward imports (move the thing down or invert the dependency):\n" + "\n".join(map(str, wrong))


def test_every_allowed_upward_import_is_still_needed(src_imports: list[Import]) -> None:
    used = {(i.importer, i.imported) for i in upward(src_imports)}
    stale = sorted(set(ALLOWED_UPWARD) - used)
    assert not stale, f"no longer imported upward, delete from ALLOWED_UPWARD: {stale}"


def test_no_import_cycle_among_module_level_imports(src_imports: list[Import]) -> None:
    assert cycles(src_imports) == []


def test_only_the_gateway_and_the_channels_import_the_web_framework(src_all_imports: list[Import]) -> None:
    assert framework_violations(src_all_imports) == []


# -- the checks catch what they are for ----------------------------------------------------------------------

def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A small ``agentfy`` tree whose store imports the gateway three ways (module level, inside a function,
    for types only) and whose gateway imports the store (allowed)."""
    return _tree(tmp_path, {
        "agentfy/__init__.py": "",
        "agentfy/store/__init__.py": "",
        "agentfy/store/db.py": "from agentfy.gateway.app import App\n",
        "agentfy/store/late.py": "def late():\n    from agentfy.gateway import app\n    return app\n",
        "agentfy/store/typed.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    from ..gateway.app import App\n"),
        "agentfy/gateway/__init__.py": "",
        "agentfy/gateway/app.py": "from agentfy.store import db\nclass App: ...\n",
    })


def test_the_layer_check_fails_on_a_planted_upward_import(planted: Path) -> None:
    wrong = violations(imports_of(planted), allowed={})
    assert {(i.importer, i.imported, i.kind) for i in wrong} == {
        ("agentfy.store.db", "agentfy.gateway.app", MODULE),
        ("agentfy.store.late", "agentfy.gateway.app", FUNCTION),
        ("agentfy.store.typed", "agentfy.gateway.app", TYPE_CHECKING_ONLY),
    }
    assert violations(imports_of(planted), allowed={("agentfy.store.db", "agentfy.gateway.app"): "planted",
                                                    ("agentfy.store.late", "agentfy.gateway.app"): "planted",
                                                    ("agentfy.store.typed", "agentfy.gateway.app"): "planted"}) == []


def test_the_layer_check_fails_on_a_package_without_a_layer(planted: Path) -> None:
    _tree(planted, {"agentfy/plugins/__init__.py": "from agentfy.store import db\n"})
    assert unplaced(imports_of(planted), module_names(planted)) == {"plugins"}


def test_the_cycle_check_fails_on_a_planted_cycle_and_ignores_late_imports(planted: Path) -> None:
    assert cycles(imports_of(planted)) == [["agentfy.gateway.app", "agentfy.store.db"]]
    _tree(planted, {"agentfy/store/db.py": "def late():\n    from agentfy.gateway.app import App\n    return App\n"})
    assert cycles(imports_of(planted)) == []


def test_the_framework_check_fails_on_fastapi_below_the_channels(planted: Path) -> None:
    _tree(planted, {"agentfy/store/web.py": "from fastapi import FastAPI\n",
                    "agentfy/gateway/web.py": "import fastapi.routing\n"})
    assert [(i.importer, i.imported) for i in framework_violations(all_imports_of(planted))] == [
        ("agentfy.store.web", "fastapi")]


if __name__ == "__main__":
    print(report())

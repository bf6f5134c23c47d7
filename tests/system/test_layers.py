"""The import layers the package docstring draws are the layers of the code.

Every module of `hudi_py_source` belongs to the first layer of the picture whose patterns name it, imports
only modules of its own layer or below, imports at the top of the module only (an import inside a function
or an `if` hides a cycle), takes no private name from another module, and no set of modules imports itself
round (a cycle). Only the spark layer imports pyspark.
"""

from __future__ import annotations

import ast
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import hudi_py_source

PACKAGE = Path(hudi_py_source.__file__).parent
ROOT = "hudi_py_source"
LAYER_LINE = re.compile(r"^    (\w+): (.+)$")


@dataclass
class Module:
    name: str
    path: Path
    imports: dict[str, int] = field(default_factory=dict)
    nested_imports: list[str] = field(default_factory=list)
    private_imports: list[str] = field(default_factory=list)
    external: set[str] = field(default_factory=set)


def layers() -> list[tuple[str, list[str]]]:
    """(layer, patterns) from the package docstring, top layer first; a layer's patterns go on in the lines right
    after it that start with `+`."""
    found: list[tuple[str, list[str]]] = []
    continues = False
    for line in (hudi_py_source.__doc__ or "").splitlines():
        match = LAYER_LINE.match(line)
        if match:
            found.append((match.group(1), match.group(2).split()))
        elif continues and line.strip().startswith("+ "):
            found[-1][1].extend(line.strip()[2:].split())
        else:
            continues = False
            continue
        continues = True
    return found


def _matches(name: str, pattern: str) -> bool:
    """A module name against a pattern: `x.*` is x and everything under it, other patterns are shell globs."""
    relative = name if name == ROOT else name.removeprefix(ROOT + ".")
    if pattern.endswith(".*"):
        return relative == pattern[:-2] or relative.startswith(pattern[:-1])
    return fnmatch.fnmatchcase(relative, pattern)


def layer_of(name: str) -> int:
    """Index of the module's layer, 0 at the top; -1 when no layer names it."""
    return next((i for i, (_, patterns) in enumerate(layers()) if any(_matches(name, p) for p in patterns)), -1)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _target(module: Module, node: ast.ImportFrom, known: set[str]) -> list[tuple[str, str]]:
    """(module imported, name imported) of a relative import; a name that is a module counts as one."""
    package = module.name if module.path.name == "__init__.py" else module.name.rsplit(".", 1)[0]
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    target = ".".join(base + ([node.module] if node.module else []))
    return [(f"{target}.{a.name}" if f"{target}.{a.name}" in known else target, a.name) for a in node.names]


def scan() -> dict[str, Module]:
    paths = [p for p in PACKAGE.rglob("*.py") if "discovery" not in p.parts]
    modules = {_module_name(p): Module(_module_name(p), p) for p in paths}
    for module in modules.values():
        tree = ast.parse(module.path.read_text())
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                module.external.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                module.external.add((node.module or "").split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                for target, imported in _target(module, node, set(modules)):
                    module.imports.setdefault(target, node.lineno)
                    if id(node) not in top:
                        module.nested_imports.append(f"line {node.lineno}: {target}")
                    if imported.startswith("_") and target != module.name:
                        module.private_imports.append(f"line {node.lineno}: {target}.{imported}")
    return modules


MODULES = scan()


def test_the_docstring_draws_ten_layers() -> None:
    assert [name for name, _ in layers()] == ["spark", "api", "client", "services", "writers", "access", "table",
                                             "timeline", "formats", "foundation"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_imports_no_layer_above_its_own(name: str) -> None:
    module = MODULES[name]
    own = layer_of(name)
    assert own >= 0, f"{name} is in no layer of the package docstring"
    above = {target: f"line {line} imports {target} ({layers()[layer_of(target)][0]})"
             for target, line in module.imports.items() if 0 <= layer_of(target) < own}
    assert not above, f"{name} ({layers()[own][0]}) imports a layer above it: {sorted(above.values())}"
    assert not module.nested_imports, f"{name} imports inside a function or block: {module.nested_imports}"
    assert not module.private_imports, f"{name} takes private names of other modules: {module.private_imports}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_spark_layer_imports_pyspark(name: str) -> None:
    if layers()[layer_of(name)][0] != "spark":
        assert "pyspark" not in MODULES[name].external, f"{name} imports pyspark outside the spark layer"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_no_modules_import_each_other_round() -> None:
    graph = {name: set(m.imports) & set(MODULES) for name, m in MODULES.items()}
    assert _cycles(graph) == []


def test_the_check_finds_a_cycle_and_an_upward_import() -> None:
    """The checks above can fail: a two-module cycle is found, and a writer importing a service is above."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert layer_of(f"{ROOT}.services.clean") < layer_of(f"{ROOT}.write.upsert")
    assert layer_of(f"{ROOT}.write.client") < layer_of(f"{ROOT}.services.clean") < layer_of(f"{ROOT}.write.rollback")

"""No import cycle among the project's modules, counting imports inside functions.

import-linter (make lint) holds the layers; it sees function-level imports too, but a cycle
inside one layer is not a layer violation. This test reads every module's imports, wherever
they stand, and fails on any cycle, naming its modules.
"""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotation", "crowd", "ranking", "maps", "dashboard", "rehearsal", "config")


def project_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {found for target in targets if (found := _resolve(target, modules)) not in (None, name)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_counts_imports_inside_functions(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "one.py").write_text("def f():\n    from pkg.two import g\n")
    (tmp_path / "pkg" / "two.py").write_text("from . import one\n")
    modules = {name: tmp_path / "pkg" / f"{name.split('.')[-1]}.py" for name in ("pkg.one", "pkg.two")}
    assert cycles(import_graph(modules)) == [["pkg.one", "pkg.two"]]


def test_no_import_cycle_among_the_project_modules():
    assert cycles(import_graph(project_modules())) == []


def test_the_url_configuration_loads_no_scikit_learn():
    """Every process the deployment starts (gunicorn, manage.py, Celery) loads config.urls or
    the modules it reaches: scikit-learn, with the SciPy it loads, would cost each about a
    second of CPU at start-up, so the suitability training and maps agreement import it where
    they call it."""
    code = "import sys, django; django.setup(); import config.urls, config.celery; sys.exit('sklearn' in sys.modules)"
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings", SALIENCE_ENV="development")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env).returncode == 0

"""The shape of the code: no import cycles (function-level imports count), a slim ReFrame test
class, and presentation code that reads results only through the result model."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "iolab"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    if node.level:
        base = package.split(".")
        base = base[:len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))
    return node.module or ""


def import_graph() -> dict[str, set[str]]:
    """module -> the iolab modules it imports anywhere in its text (inside functions too)."""
    modules = _modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.ImportFrom):
                base = _resolve(module, path, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            graph[module] |= {t for t in targets if t in modules and t != module}
        # a package that discovers its modules (iolab.benchmarks' registry) imports them all
        if path.name == "__init__.py" and "iter_modules" in path.read_text():
            graph[module] |= {m for m in modules if m.startswith(module + ".")}
    return graph


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 40 and graph["iolab.cli"], "the graph was read"
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_the_cycle_check_sees_function_level_imports(tmp_path):
    """The check itself: an import inside a function is an edge."""
    tree = ast.parse("def f():\n    from .matrix import defaults\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _resolve("iolab.benchmarks.h5bench", PACKAGE / "benchmarks" / "h5bench.py", node) == \
        "iolab.benchmarks.matrix"


def test_the_reframe_test_class_is_slim():
    from iolab.rfm.base import IolabTest

    lines, _ = inspect.getsourcelines(IolabTest)
    assert len(lines) < 150, f"IolabTest has {len(lines)} lines: its parts belong in rfm/plan.py and friends"


PRESENTATION = ("iolab.present.report", "iolab.present.plots", "iolab.analysis.compare",
                "iolab.present.publish", "iolab.results.importer", "iolab.analysis.published.studies",
                "iolab.analysis.published.compare", "iolab.present.darshan",
                "iolab.analysis.io500", "iolab.analysis.cost", "iolab.layers.software")
YAML_READERS = {"yaml", "iolab.experiment.yamlpos"}


def _imports(module: str) -> set[tuple[str, str]]:
    """(module, name) pairs a module imports anywhere in its text."""
    path = _modules()[module]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            out |= {(_resolve(module, path, node), a.name) for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {(a.name, "") for a in node.names}
    return out


def test_presentation_reads_no_yaml_and_runs_only_through_the_result_model():
    """Tables, plots, comparisons, pages and imports get the experiment from run.Run (which
    re-loads it through load.py); only the importer types --param values through load.py."""
    for module in PRESENTATION:
        imported = _imports(module)
        assert not {m for m, _ in imported} & YAML_READERS, module
        from_load = {name for m, name in imported if m == "iolab.experiment.load"}
        allowed = {"type_param_text"} if module == "iolab.results.importer" else set()
        assert from_load <= allowed, (module, from_load)
        assert ("iolab", "load") not in imported, module


def _hand_built_records(text: str) -> list[int]:
    """Lines of dict literals that look like a record (a case id and a status)."""
    lines = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if {"case_id", "status"} <= keys:
                lines.append(node.lineno)
    return lines


def test_records_are_built_only_by_the_result_model():
    assert _hand_built_records('x = 1\n{"case_id": "c", "status": "ok", "params": {}}') == [2]
    offenders = {m: lines for m, p in _modules().items() if m != "iolab.results.record"
                 for lines in [_hand_built_records(p.read_text())] if lines}
    assert offenders == {}

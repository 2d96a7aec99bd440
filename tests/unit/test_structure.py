"""The shape of the code: no import cycles (function-level imports count), a ReFrame test class
that applies a plan and knows no benchmark, layer or format, and presentation code that reads
results only through the result model."""

from __future__ import annotations

import importlib

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


def _side(module: str) -> str:
    """The folder of src/iolab/ a module belongs to (a top-level module is its own)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (_modules()[module].name == "__init__.py"
                                          and len(parts) == 2) else module


def test_the_sides_depend_one_way():
    """No two folders import each other: the map in docs/architecture.md has no arrow back."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, targets in import_graph().items():
        for target in targets:
            a, b = _side(module), _side(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {target}")
    both = {pair: edges[pair] + edges[pair[::-1]] for pair in edges
            if pair[::-1] in edges and pair[0] < pair[1]}
    assert both == {}


# The folders of src/iolab/ in the order docs/architecture.md stacks them: each imports only
# those before it (the modules at the top, errors, units, stats..., serve every folder). The
# runner (rfm) reads the continuation file campaigns/ writes, so campaigns/ comes after it, and
# after analysis/, whose comparisons it uses; present/ prints what campaigns/ answers.
FOLDERS = ("parsers", "layers", "benchmarks", "experiment", "results", "stack", "rfm", "analysis",
           "campaigns", "present", "cli")


def test_each_folder_imports_only_the_folders_before_it():
    assert set(FOLDERS) == {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    upward = sorted(f"{module} -> {target}" for module, targets in import_graph().items()
                    for target in targets if _side(module) in FOLDERS and _side(target) in FOLDERS
                    and FOLDERS.index(_side(target)) > FOLDERS.index(_side(module)))
    assert upward == []


def test_the_cycle_check_sees_function_level_imports(tmp_path):
    """The check itself: an import inside a function is an edge."""
    tree = ast.parse("def f():\n    from .matrix import defaults\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert _resolve("iolab.benchmarks.h5bench", PACKAGE / "benchmarks" / "h5bench.py", node) == \
        "iolab.benchmarks.matrix"


# What the ReFrame test class must never do itself: it applies a plan (rfm/plan.py), hands the
# outputs to observe.py and the record to recording.py. A name here in its code means a job of
# one of those (or of a benchmark, layer or parser) moved into it.
NOT_IN_THE_TEST_CLASS = {
    "modules": {"subprocess", "json", "re", "shlex", "yaml", "glob"},
    "calls": {"open", "read_text", "read_bytes", "loads", "load", "run", "Popen", "check_output",
              "system", "quote", "parse"},
    "words": ("lustre", "cephfs", "ceph", "mpiio", "romio", "darshan", "stripe", "cb_", "ior",
              "fio", "btio", "h5bench", "mdtest", "hdf5", "getfattr", "setfattr", "lfs "),
}


def _test_class_findings(source: str) -> list[str]:
    """What the test class's source does that NOT_IN_THE_TEST_CLASS forbids."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(f"imports at line {node.lineno}: imports belong to the module")
        elif isinstance(node, ast.Name) and node.id in NOT_IN_THE_TEST_CLASS["modules"]:
            found.append(f"uses the module {node.id} (line {node.lineno})")
        elif isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            owner = node.func.value if isinstance(node.func, ast.Attribute) else None
            if name in NOT_IN_THE_TEST_CLASS["calls"] and not (
                    isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super"):
                found.append(f"calls {name}() (line {node.lineno})")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.lower()
            for word in NOT_IN_THE_TEST_CLASS["words"]:
                if word in text:
                    found.append(f"names {word!r} in a string (line {node.lineno})")
        if isinstance(node, (ast.Name, ast.Attribute)):
            ident = (node.id if isinstance(node, ast.Name) else node.attr).lower()
            for word in NOT_IN_THE_TEST_CLASS["words"]:
                if word.strip() in ident.split("_") or ident.startswith(word.strip()):
                    found.append(f"names {word.strip()!r} in code: {ident} (line {node.lineno})")
    return found


def _code_only(source: str) -> str:
    """The class's source without its docstrings (prose may name what the code must not)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            body[0].value.value = ""
    return ast.unparse(tree)


def test_the_reframe_test_class_applies_a_plan_and_knows_no_benchmark_layer_or_format():
    from iolab.rfm.base import IolabTest

    source = inspect.getsource(IolabTest)
    assert _test_class_findings(_code_only(source)) == []


def test_the_test_class_check_finds_what_it_forbids():
    """The check itself, on a class that does three of the forbidden things."""
    bad = ("class T:\n    def f(self):\n        import subprocess\n"
           "        subprocess.run(['lfs', 'setstripe'])\n"
           "        self.stripe_count = json.loads(open('x').read())\n")
    found = " ".join(_test_class_findings(_code_only(bad)))
    for what in ("imports", "subprocess", "calls run()", "calls open()", "json", "stripe"):
        assert what in found, (what, found)


PRESENTATION = ("iolab.analysis.report", "iolab.present.plots", "iolab.analysis.compare",
                "iolab.present.publish", "iolab.results.importer", "iolab.analysis.published.studies",
                "iolab.analysis.published.compare", "iolab.present.darshan",
                "iolab.analysis.io500", "iolab.analysis.cost", "iolab.software", "iolab.present.search")
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


# --- the layers of the I/O stack ------------------------------------------------------------

import io  # noqa: E402
import re  # noqa: E402
import tokenize  # noqa: E402

# Names that belong to one layer: its parameters, its hints, the counters of its witness.
LAYER_NAMES = {
    "storage": re.compile(r"\b(?:over|dir_)?stripe_(?:count|size|offset)\b"),
    "mpiio": re.compile(r"\bcb_[a-z_]+\b|\bromio_[a-z_]+\b"),
    "darshan": re.compile(r"\b(?:POSIX|MPIIO|STDIO|LUSTRE|H5F|H5D|PNETCDF_FILE|PNETCDF_VAR|DXT_POSIX"
                          r"|DXT_MPIIO)_[A-Z0-9_]+\b"),
}
# Where each may be named: its layer, the parsers, and the other layers' modules that witness it,
# each with why.
LAYER_HOMES = {
    "storage": ("iolab.layers.storage",),
    "mpiio": ("iolab.layers.mpiio",),
    "darshan": ("iolab.layers.darshan",),
}
WITNESSES = {
    # Darshan's LUSTRE records are a second witness of the layout the storage layer asked for
    ("storage", "iolab.layers.darshan.layouts"), ("storage", "iolab.layers.darshan.summary"),
    ("storage", "iolab.layers.darshan.columns"),
    # Darshan's view of the aggregators the MPI-IO layer asked for, and its own log's hints
    ("mpiio", "iolab.layers.darshan.aggregators"), ("mpiio", "iolab.layers.darshan.findings"),
    ("mpiio", "iolab.present.darshan_logs"), ("mpiio", "iolab.layers.darshan.preload"),
}
# Modules that act on every layer and must know none by name.
LAYER_LOOPS = ("iolab.rfm.plan", "iolab.rfm.observe", "iolab.rfm.jobscript", "iolab.rfm.recording",
               "iolab.results.record", "iolab.results.digest", "iolab.analysis.report",
               "iolab.campaigns.search.space", "iolab.campaigns.search.observations",
               "iolab.campaigns.search.strategies", "iolab.campaigns.search.answer",
               "iolab.campaigns.search.rounds", "iolab.present.search", "iolab.present.plots",
               "iolab.experiment.matrix")
LAYER_FACE = {"iolab.layers.base", "iolab.layers.registry"}


def _code_words(text: str) -> list[tuple[int, str]]:
    """(line, word) of the names and of the one-word strings (keys, not prose) of a module;
    comments, docstrings and messages do not count."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.NAME:
            out.append((tok.start[0], tok.string))
        elif tok.type == tokenize.STRING and not re.search(r"\s", tok.string):
            out.append((tok.start[0], tok.string))
    return out


def _misplaced(module: str, text: str) -> list[str]:
    out = []
    for layer, pattern in LAYER_NAMES.items():
        if module.startswith(LAYER_HOMES[layer]) or module.startswith("iolab.parsers") \
                or (layer, module) in WITNESSES:
            continue
        out += [f"{module}:{line}: {word} ({layer})" for line, word in _code_words(text)
                if pattern.search(word)]
    return out


def test_each_layer_s_names_stay_in_the_layer():
    """stripe_*, cb_*/romio_* and Darshan's counters are named (as code or as keys) only in
    their layer, the parsers, and the witnesses listed above."""
    assert _misplaced("iolab.present.plots", 'x = p["lustre.stripe_count"]\n') == [
        "iolab.present.plots:1: \"lustre.stripe_count\" (storage)"]
    assert _misplaced("iolab.present.plots", '"""cb_nodes in prose"""\nmsg = "e.g. cb_nodes=4"\n') == []
    offenders = [m for module, path in _modules().items() for m in _misplaced(module, path.read_text())]
    assert offenders == []


def test_the_modules_that_loop_over_the_layers_import_none_of_them():
    for module in LAYER_LOOPS:
        inside = {f"{m}.{n}" if m == "iolab.layers" else m for m, n in _imports(module)
                  if m.startswith("iolab.layers")}
        assert inside <= LAYER_FACE, (module, inside - LAYER_FACE)


def _why_not_found(fs_base) -> str:
    """What the package holds and what became of the toy module, for a failure's message."""
    import pkgutil
    import sys

    listed = [m.name for m in pkgutil.iter_modules([str(Path(fs_base.__file__).parent)])]
    try:
        toy = importlib.import_module("iolab.layers.storage.toyfs")
    except ImportError as exc:
        return f"listed {listed}; importing toyfs: {exc!r}"
    base_now = sys.modules.get("iolab.layers.storage.base")
    kind = type(getattr(toy, "FILE_SYSTEM", None))
    return (f"listed {listed}; toyfs FILE_SYSTEM {kind!r} from {kind.__mro__[1].__module__}; "
            f"the base module asked is sys.modules' own: {base_now is fs_base}; "
            f"its FileSystem is the toy's base: {kind.__mro__[1] is fs_base.FileSystem}")


def test_a_file_system_is_one_module(tmp_path, monkeypatch):
    """A toy file system, written as one new module of layers/storage, is found, planned and
    observed with no other change: its request reaches the job's lines and the record."""
    from iolab.layers.storage import base as fs_base
    from iolab.layers.storage import layer as storage_layer

    # the package as imported (PYTHONPATH may name another checkout than this test's own)
    module = Path(fs_base.__file__).parent / "toyfs.py"
    assert not module.exists()
    module.write_text(
        "from .base import FileSystem\n\n\n"
        "class Toy(FileSystem):\n"
        "    name = 'toyfs'\n    prefix = 'toyfs.'\n    observed_key = 'toyfs'\n\n"
        "    def prerun(self, case_dir, req, stop_on_failure):\n"
        "        return [f\"toy-layout {req['width']} {case_dir}\"]\n\n"
        "    def observe(self, stage, req, out):\n"
        "        return {**out, 'applied': True}\n\n\n"
        "FILE_SYSTEM = Toy()\n")
    try:
        importlib.invalidate_caches()       # a module made while the interpreter runs
        fs_base.file_systems.cache_clear()
        names = [fs.name for fs in fs_base.file_systems()]
        assert names == ["cephfs", "lustre", "toyfs"], _why_not_found(fs_base)
        lines = storage_layer.prerun_lines("/s/case", {"toyfs.width": 3})
        assert lines[1] == "toy-layout 3 /s/case"
        (tmp_path / fs_base.FSTYPE_FILE).write_text("toyfs\n")
        toy = fs_base.file_systems()[2]
        assert storage_layer.observed_layout(toy, tmp_path, {"width": 3})["applied"] is True
        (tmp_path / fs_base.FSTYPE_FILE).write_text("ext4\n")
        assert storage_layer.observed_layout(toy, tmp_path, {"width": 3})["reason"] == "ext4: no striping"
    finally:
        module.unlink()
        fs_base.file_systems.cache_clear()

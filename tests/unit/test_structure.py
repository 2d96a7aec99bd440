"""The shape of the code: no import cycles (function-level imports count), a ReFrame test class
that applies a plan and knows no benchmark, layer or format, and presentation code that reads
results only through the result model."""

from __future__ import annotations

import dataclasses
import importlib
import json

import ast
import inspect
from pathlib import Path

import pytest

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


PRESENTATION = ("iolab.analysis.report", "iolab.analysis.columns", "iolab.present.plots",
                "iolab.present.plotspec", "iolab.present.progress", "iolab.analysis.compare",
                "iolab.present.publish", "iolab.results.importer", "iolab.analysis.published.studies",
                "iolab.analysis.published.compare", "iolab.layers.darshan.views",
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
    ("mpiio", "iolab.layers.darshan.views"), ("mpiio", "iolab.layers.darshan.preload"),
}
# Modules that act on every layer and must know none by name.
LAYER_LOOPS = ("iolab.rfm.plan", "iolab.rfm.observe", "iolab.rfm.jobscript", "iolab.rfm.recording",
               "iolab.results.record", "iolab.results.digest", "iolab.results.evidence",
               "iolab.analysis.report",
               "iolab.analysis.columns", "iolab.analysis.rules",
               "iolab.campaigns.search.space", "iolab.campaigns.search.observations",
               "iolab.campaigns.search.strategies", "iolab.campaigns.search.answer",
               "iolab.campaigns.search.rounds", "iolab.present.search", "iolab.present.plots",
               "iolab.present.plotspec",
               "iolab.experiment.matrix")
# what a layer is, and the registry; what a rule of thumb is (layers/rule.py), beside them
LAYER_FACE = {"iolab.layers.base", "iolab.layers.registry", "iolab.layers.rule"}


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
        "    name = 'toyfs'\n    prefix = 'toyfs.'\n    observed_key = 'toyfs'\n"
        "    schema_file = 'toyfs.json'\n\n"
        "    def prerun(self, case_dir, req, stop_on_failure):\n"
        "        return [f\"toy-layout {req['width']} {case_dir}\"]\n\n"
        "    def observe(self, stage, req, out):\n"
        "        return {**out, 'applied': True}\n\n\n"
        "FILE_SYSTEM = Toy()\n")
    fragment = module.with_suffix(".json")
    fragment.write_text(json.dumps({"properties": {"toyfs.width": {"type": "integer", "minimum": 1}}}))
    try:
        importlib.invalidate_caches()       # a module made while the interpreter runs
        _forget_what_the_layers_said()
        names = [fs.name for fs in fs_base.file_systems()]
        assert names == ["cephfs", "lustre", "toyfs"], _why_not_found(fs_base)
        lines = storage_layer.prerun_lines("/s/case", {"toyfs.width": 3})
        assert lines[1] == "toy-layout 3 /s/case"
        (tmp_path / fs_base.FSTYPE_FILE).write_text("toyfs\n")
        toy = fs_base.file_systems()[2]
        assert storage_layer.observed_layout(toy, tmp_path, {"width": 3})["applied"] is True
        (tmp_path / fs_base.FSTYPE_FILE).write_text("ext4\n")
        assert storage_layer.observed_layout(toy, tmp_path, {"width": 3})["reason"] == "ext4: no striping"
        # its keys are the experiment's to use, checked by its schema fragment
        from iolab.errors import IolabError
        from iolab.experiment.load import load_text

        text = TOY_EXPERIMENT.replace("toy.width", "toyfs.width")
        assert load_text(text, tmp_path / "toy.yaml").id == "toy"
        with pytest.raises(IolabError, match="toyfs.width"):
            load_text(text.replace("[1, 3]", "[0]"), tmp_path / "toy.yaml")
    finally:
        module.unlink()
        fragment.unlink()
        _forget_what_the_layers_said()


# --- no layer by name outside layers/ and parsers/ ------------------------------------------
#
# The rule: outside layers/ and parsers/, code names no layer. A layer is named by an identifier
# that holds one of its words in any case (uses_mpiio, MAX_DARSHAN_LOG_BYTES), or by a string
# that holds one as a key is written, in lower case ("darshan", "lustre.stripe_count",
# 'iolab darshan x'). Its words are read from the registry (each layer's name, prefixes, keys and
# parts of `observed`, so a new layer is covered without an edit here), plus the words of the
# parameters they own (stripe_*, cb_*, romio_*). Docstrings and comments may name them, and so
# may a message's prose that writes a title (Darshan, Lustre, CephFS, MPI-IO): words, not keys.
VOCABULARY = ("stripe", "cb", "romio")
# Where a layer's word is the benchmark's own, each with why. A module here that no longer names
# a layer fails the test: the list only shrinks.
NOT_A_LAYER = {
    # IOR's option modules (--mpiio.hintsFileName) and BTIO's io-method families: the benchmarks'
    # words for their MPI-IO backends, which happen to be the layer's name
    "iolab.benchmarks.ior": "IOR's option modules", "iolab.benchmarks.btio": "BTIO's families",
    "iolab.benchmarks.mdtest": "IOR's option modules (mdtest shares IOR's backends)",
}

# Findings (without their line) of another program's word that happens to be a layer's, each
# module's with why: left out of its findings, and one no longer found fails the test.
THEIR_WORDS = {
    # the configs import it by this name (reframe/config/*.py)
    "iolab.rfm.systems": ({"storage in storage", "'storage' in a string"},
                          "ReFrame's `storage` configuration section: its results database"),
}


def _layer_words() -> tuple[str, ...]:
    from iolab.layers.registry import registry

    words = set()
    for layer in registry():
        words |= {layer.name, *(p.rstrip(".") for p in layer.prefixes), *layer.keys,
                  *layer.observed_keys}
    return tuple(sorted(w for w in words if w))


def _docstrings(tree) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            out.add(id(body[0].value))
    return out


def _names_of(node) -> list[str]:
    """The identifiers a node writes: names, attributes, definitions, arguments, keywords and
    the modules and names it imports."""
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""] + [a.name for a in node.names]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return []


def layer_names_in(text: str, words: tuple[str, ...]) -> list[str]:
    """'line: word' for each place the module's code names a layer (see the rule above)."""
    tokens = "|".join(re.escape(w) for w in words)
    in_key = re.compile(rf"(?<![A-Za-z0-9])(?:{tokens})(?![A-Za-z0-9])"
                        rf"|(?<![A-Za-z0-9])(?:{'|'.join(VOCABULARY)})_[a-z]")
    tree = ast.parse(text)
    docs = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            out += [f"{node.lineno}: {m.group(0)!r} in a string" for m in in_key.finditer(node.value)]
        for name in _names_of(node):
            parts = re.split(r"[_.]", name.lower())
            joined = "_".join(parts)
            hit = [w for w in words if re.search(rf"(?:^|_){re.escape(w)}(?:_|$)", joined)]
            hit += [v for v in VOCABULARY if any(p.startswith(v) for p in parts if v != "cb") or
                    (v == "cb" and "cb" in parts)]
            out += [f"{node.lineno}: {w} in {name}" for w in hit]
    return out


def _without_line(finding: str) -> str:
    return finding.split(": ", 1)[1]


def _outside_offenders() -> dict[str, list[str]]:
    words = _layer_words()
    theirs = {module: found for module, (found, _why) in THEIR_WORDS.items()}
    return {module: found for module, path in _modules().items()
            if not module.startswith(("iolab.layers", "iolab.parsers"))
            for found in [[f for f in layer_names_in(path.read_text(), words)
                           if _without_line(f) not in theirs.get(module, ())]] if found}


def test_another_program_s_word_is_left_out_only_where_it_is_written(tmp_path, monkeypatch):
    """THEIR_WORDS leaves out only the findings it lists, of its module, and each is still there
    (a module that no longer writes it fails here: the list only shrinks)."""
    words = _layer_words()
    for module, (listed, _why) in THEIR_WORDS.items():
        found = {_without_line(f) for f in layer_names_in(_modules()[module].read_text(), words)}
        assert listed <= found, (module, listed - found)
    # the same words in another module, or another word in the listed one, are found
    fake = tmp_path / "leaky.py"
    fake.write_text('def storage():\n    return {"storage": 1}\n')
    listed = tmp_path / "systems.py"
    listed.write_text(_modules()["iolab.rfm.systems"].read_text() + 'X = "lustre.pool"\n')
    monkeypatch.setitem(globals(), "_modules", lambda: {
        **_real_modules(), "iolab.analysis.leaky": fake, "iolab.rfm.systems": listed})
    offenders = _outside_offenders()
    assert offenders["iolab.analysis.leaky"] == ["1: storage in storage", "2: 'storage' in a string"]
    assert [f for f in offenders["iolab.rfm.systems"] if "lustre" in f] == [
        f"{len(listed.read_text().splitlines())}: 'lustre' in a string"]


def test_the_layer_check_finds_a_layer_named_in_code_and_not_in_prose():
    words = ("darshan", "lustre", "mpiio", "mpiio_hints", "storage")
    bad = ('"""Darshan and lustre.* in a docstring."""\n'
           'x = rec.observed["darshan"]  # darshan in a comment\n'
           'def uses_mpiio(case):\n    return k.startswith("lustre.")\n'
           'MAX_DARSHAN_LOG_BYTES = 1\ny = p["stripe_count"] + p["cb_nodes"]\n'
           'z = "Darshan requested but not run"\n')
    found = layer_names_in(bad, words)
    assert sorted(found) == sorted([
        "2: 'darshan' in a string", "3: mpiio in uses_mpiio", "4: 'lustre' in a string",
        "5: darshan in MAX_DARSHAN_LOG_BYTES", "6: 'stripe_c' in a string", "6: 'cb_n' in a string"])


def test_the_layer_check_fails_on_a_module_that_names_a_layer(tmp_path, monkeypatch):
    """The check over the tree fails where a module outside the layers names one."""
    fake = tmp_path / "iolab" / "analysis" / "leaky.py"
    fake.parent.mkdir(parents=True)
    fake.write_text('COLUMNS = ("lustre.", "mpiio.")\n')
    monkeypatch.setitem(globals(), "_modules", lambda: {**_real_modules(), "iolab.analysis.leaky": fake})
    assert _outside_offenders()["iolab.analysis.leaky"] == ["1: 'lustre' in a string",
                                                            "1: 'mpiio' in a string"]


_real_modules = _modules


def test_no_module_outside_the_layers_names_a_layer():
    """Outside layers/ and parsers/, code asks the registry (layers/registry.py) by key or role;
    the modules listed above say why they still name one."""
    offenders = _outside_offenders()
    listed = NOT_A_LAYER
    assert {m: found for m, found in offenders.items() if m not in listed} == {}
    assert sorted(m for m in listed if m not in offenders) == [], "no longer needs its entry"


def _forget_what_the_layers_said():
    """Clear what was computed from the layers found (the registry, the schema built from their
    fragments, the column sources), so that the next call finds them again."""
    import functools

    from iolab.analysis import columns
    from iolab.experiment import matrix
    from iolab.experiment import schema
    from iolab.layers import registry
    from iolab.layers.storage import base as fs_base

    for value in [*vars(schema).values(), registry.registry, fs_base.file_systems,
                  columns.column_sources, matrix._is_size]:
        if isinstance(value, functools._lru_cache_wrapper):
            value.cache_clear()


TOY_EXPERIMENT = """id: toy
description: a toy layer's parameter beside IOR's
parts:
  main:
    benchmark: ior
    scale: {nodes: 1, tasks_per_node: 2}
    fixed: {transfer_size: 1MiB, block_size: 8MiB}
    matrix:
      toy.width: [1, 3]
"""


def test_a_layer_is_one_package(tmp_path, monkeypatch):
    """A toy layer, written as one new package on the layers' path, is found by the registry,
    its parameters are validated in an experiment through its schema fragment, its table
    columns and its verb are offered, with no other file edited."""
    import iolab.layers
    from iolab.analysis.columns import column_sources
    from iolab.errors import IolabError
    from iolab.experiment.load import load_text
    from iolab.experiment.matrix import expand
    from iolab.layers import registry

    package = tmp_path / "toylayer"
    package.mkdir()
    (package / "__init__.py").write_text('"""A toy layer."""\n')
    (package / "toy.json").write_text(json.dumps({"properties": {
        "toy.width": {"type": "integer", "minimum": 1, "title": "Toy Width"}}}))
    (package / "layer.py").write_text(
        "from iolab.layers.base import Layer\n\n\n"
        "class ToyLayer(Layer):\n"
        "    name = 'toy'\n    order = 60\n    prefixes = ('toy.',)\n    title = 'Toy'\n"
        "    schema_files = ((__package__, 'toy.json'),)\n\n"
        "    def column_help(self):\n        return {'width_seen': 'the width the toy saw'}\n\n"
        "    def verbs(self):\n        from . import verb\n\n        return (verb,)\n\n\n"
        "LAYER = ToyLayer()\n")
    (package / "verb.py").write_text(
        "VERB = 'toy'\nAFTER = 'runs'\nEXAMPLES = ['iolab toy quickstart']\n\n\n"
        "def add_parser(sub, services):\n    s = sub.add_parser(VERB, help='the toy')\n"
        "    s.add_argument('id')\n    services.add_include_imported(s)\n"
        "    s.set_defaults(func=lambda args: run(args, services))\n\n\n"
        "def run(args, services):\n    return 7 if services.is_experiment_id(args.id) else 3\n")
    monkeypatch.setattr(iolab.layers, "__path__", [*iolab.layers.__path__, str(tmp_path)])
    _forget_what_the_layers_said()
    try:
        assert [layer.name for layer in registry.registry()] == ["storage", "mpiio", "toy", "darshan"]
        assert registry.owner("toy.width").name == "toy"
        assert "toy." in registry.prefixes()
        exp = load_text(TOY_EXPERIMENT, tmp_path / "toy.yaml")
        assert sorted(c.params["toy.width"] for c in expand(exp)) == [1, 3]
        with pytest.raises(IolabError, match="toy.width"):
            load_text(TOY_EXPERIMENT.replace("[1, 3]", "[0]"), tmp_path / "toy.yaml")
        toy = [src for src in column_sources() if src.name == "toy"]
        assert toy and toy[0].parse_columns("width_seen") == ["width_seen"]
        # its verb is listed after the one it names, and runs with what the CLI lends it
        import argparse

        from iolab.cli import import_, runs, verify
        from iolab.cli.layer_verbs import with_layer_verbs

        verbs = with_layer_verbs((import_, runs, verify))
        assert [v.VERB for v in verbs] == ["import", "darshan", "runs", "toy", "verify"]
        sub = argparse.ArgumentParser().add_subparsers(dest="command")
        for verb in verbs:
            verb.add_parser(sub)
        args = sub.choices["toy"].parse_args(["quickstart", "--include-imported"])
        assert args.include_imported and args.func(args) == 7
    finally:
        monkeypatch.undo()
        _forget_what_the_layers_said()
    assert "toy" not in [layer.name for layer in registry.registry()]


TOY_HOOKS = """from iolab.errors import IolabError
from iolab.layers.base import Layer, ParamExample


class ToyLayer(Layer):
    name = 'toy'
    order = 5
    prefixes = ('toy.',)
    schema_files = ((__package__, 'toy.json'),)
    example_param = ParamExample('toy-exp', 'toy.width', '1', '3')
    example_columns = ('toy-exp', 'width_seen')

    def private_data(self, case):
        return "the toy's own data" if case.get('toy.width') == 3 else None

    def preflight(self, items, say, locate):
        say(f'toy: {len(items)} jobs asked')
        return [IolabError('the toy refuses', key='toy.width')]

    def site_properties(self):
        return {'scratch': {'pattern': '^/'}}

    def mpi_runtime(self, site):
        return 'toympi'


LAYER = ToyLayer()
"""


def test_a_layer_s_hooks_are_asked_through_the_registry(tmp_path, monkeypatch):
    """A toy layer that acts first is asked for what the verbs' examples show, whose data another
    job cannot read, what a session refuses, a system's settings and its MPI runtime: found,
    with no other file edited."""
    import iolab.layers
    from iolab.errors import IolabError
    from iolab.experiment import site
    from iolab.experiment.load import load_text
    from iolab.experiment.matrix import expand
    from iolab.layers import registry

    package = tmp_path / "toyhooks"     # not the other test's toylayer, which stays imported
    package.mkdir()
    (package / "__init__.py").write_text('"""A toy layer."""\n')
    (package / "toy.json").write_text(json.dumps({"properties": {
        "toy.width": {"type": "integer", "minimum": 1}}}))
    (package / "layer.py").write_text(TOY_HOOKS)
    monkeypatch.setattr(iolab.layers, "__path__", [*iolab.layers.__path__, str(tmp_path)])
    _forget_what_the_layers_said()
    site.schema.cache_clear()
    site._validator.cache_clear()
    try:
        assert registry.example_param().key == "toy.width"
        assert registry.example_columns() == ("--toy", "toy-exp", "width_seen")
        exp = load_text(TOY_EXPERIMENT, tmp_path / "toy.yaml")
        cases = expand(exp)
        assert [registry.private_data(c) for c in cases] == [None, "the toy's own data"]
        said, facts = [], site.SiteConfig(scratch=str(tmp_path))
        refused = registry.preflight(((exp, c, facts, {}) for c in cases), said.append, None)
        assert said == ["toy: 2 jobs asked"] and [str(e) for e in refused] == [
            "toy.width: the toy refuses"]
        assert site.SiteConfig().mpi_runtime == "toympi"
        with pytest.raises(IolabError, match="scratch"):
            site.load({"scratch": "relative/path"})
    finally:
        monkeypatch.undo()
        _forget_what_the_layers_said()
        site.schema.cache_clear()
        site._validator.cache_clear()
    assert registry.example_param().key != "toy.width"
    assert site.SiteConfig().mpi_runtime == "openmpi"
    assert site.load({"scratch": "relative/path"}).scratch == "relative/path"


def test_every_import_of_an_iolab_name_resolves():
    """Imports inside functions run only when the function does (a ReFrame session's, say): a
    name that moved must not wait for that run to fail. Each `from iolab... import name`
    anywhere in the package names something that exists."""
    missing = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _resolve(module, path, node)
            if not target.startswith("iolab"):
                continue
            imported = importlib.import_module(target)
            for alias in node.names:
                if alias.name == "*" or hasattr(imported, alias.name):
                    continue
                try:
                    importlib.import_module(f"{target}.{alias.name}")
                except ImportError:
                    missing.append(f"{path.relative_to(SRC)}:{node.lineno}: {target}.{alias.name}")
    assert missing == []


# What reads a run's own files (its manifest, its records) or finds it: results/ and the run
# object (results.run.Run, results.choose); what shows results asks them.
RUN_READERS = {("iolab.results.lookup", "find_run"), ("iolab.results.manifests", "read_manifest"),
               ("iolab.results.manifests", "read_manifest_shared"),
               ("iolab.results.decoding", "decode_records"),
               ("iolab.results.decoding", "read_records_bytes"), ("iolab.results.rundir", "RunDir")}
SHOWING = ("iolab.cli", "iolab.present", "iolab.analysis")


def test_what_shows_results_reads_runs_only_through_the_run_object():
    readers = {module: sorted(f"{m}.{name}" for m, name in _imports(module) & RUN_READERS)
               for module in _modules() if module.startswith(SHOWING)}
    assert {m: r for m, r in readers.items() if r} == {}


def test_the_run_reader_check_sees_a_direct_read(tmp_path, monkeypatch):
    module = "iolab.present.publish"
    fake = tmp_path / "publish.py"
    fake.write_text("def f():\n    from ..results.lookup import find_run\n")
    monkeypatch.setitem(_modules.__globals__, "_modules", lambda: {module: fake})
    assert ("iolab.results.lookup", "find_run") in _imports(module) & RUN_READERS


# Run is a small value: what a run is. What is derived from it is a function of it in the module
# that derives it (state.of, notes.of, asrun.of, run.kept_at, ...). A new name here is a design
# change, made on purpose: say why beside it.
RUN_NAMES = {
    "path": "its directory, results/<experiment>/<run-id>/: where every file of the run is",
    "manifest": "what was asked for, where and by which code, the plan and how it ended",
    "records": "every record, in file order (decoded on first use when read from the digest)",
    "digest": "the records folded by case: what tables and comparisons read",
    "reading": "what reading the records found: counts, plan gaps, bad lines, checks, cache key",
    "sources": "the runs a chain or a pool is read from (None: one run)",
    "project_root": "where the experiment is now, for runs whose own copy no longer loads",
    "run_id": "its name, as every message and page shows it",
    "experiment_id": "the experiment it ran, as every message and page shows it",
}


def test_run_has_the_public_names_its_design_says():
    from iolab.results.run import Run

    public = {n for n in dir(Run) if not n.startswith("_")}
    public |= {f.name for f in dataclasses.fields(Run) if not f.name.startswith("_")}
    assert public == set(RUN_NAMES)

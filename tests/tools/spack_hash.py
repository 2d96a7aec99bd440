"""Spack 1.1's `package_hash` of a recipe, recomputed without Spack.

The `package_hash` field of a node in `spack.lock` is what Spack 1.1 calls the package's content
hash (`PackageBase.content_hash`):

    base32(sha256(b"".join(sorted([source_id, *patches, recipe_hash])))), lower case, with padding

where `source_id` is what the version's fetcher identifies the source by (the `commit=` of a git
version, the `sha256=` of an archive, "" if none), `patches` are "<sha256>:<level>" of the patches
the concretizer applied (none here), and `recipe_hash` is base32(sha1(canonical source)), lower
case, of the recipe's canonical source (`spack.util.package_hash`):

1. parse package.py;
2. drop every string statement (docstrings and stray strings) from the bodies of the module,
   classes and functions;
3. in the module and the package class, but not inside functions or nested classes, drop the
   directive calls (`version(...)`, `depends_on(...)`, ...) and the assignments to metadata
   attributes (`homepage`, `git`, `url`, `parallel`, ...); a `for`/`while`/`with`/`if` left
   empty goes too (an `if` with an `else` keeps a `pass`), and an empty class gets `pass`;
4. resolve multi-methods: of the `def`s of one name, an undecorated one overrides the earlier
   ones; `@when(...)` ones depend on the spec (not done here: such a recipe is refused, since
   deciding `spec.satisfies` needs Spack);
5. unparse the tree as Spack's own unparser does in its "consistent across Python versions"
   mode, and end it with a newline. That unparser follows CPython's `ast.unparse` but for: a
   tuple is always in parentheses (except inside an f-string's {expression}), a starred tuple index
   too (`a[(1, *b)]`), a lambda without arguments keeps its space (`lambda : 0`), no `u` prefix,
   an f-string escapes its format spec and, when no one quote fits all its parts, falls back to
   triple single quotes.

Standard library only (the unparser adjusts CPython 3.11's `ast._Unparser`). Written from Spack's
rules, not from its code; checked on hashes Spack wrote (tests/data/spack/README.md).
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import json
import re
import sys
from pathlib import Path

# Spack 1.1's directives (spack.directives): calls of these names are package metadata, already
# part of the spec, and not hashed.
DIRECTIVES = frozenset({
    "build_system", "can_splice", "conflicts", "depends_on", "extends", "license", "maintainers",
    "patch", "provides", "redistribute", "requires", "resource", "variant", "version",
})
# Attributes that do not change a build: each fetch strategy's URL attribute, and metadata.
METADATA = frozenset({
    "url", "git", "hg", "svn", "cvs", "go",
    "homepage", "urls", "list_url", "extendable", "parallel", "make_jobs", "maintainers", "tags",
})


class RecipeError(ValueError):
    """A recipe this module cannot hash the way Spack does."""


def _b32(digest: bytes) -> str:
    return base64.b32encode(digest).decode("ascii").lower()


def _is_string_statement(node: ast.AST) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _drop_strings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):   # not async ones
            node.body = [s for s in node.body if not _is_string_statement(s)]


def _is_directive(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id in DIRECTIVES)


def _is_metadata(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Assign) and bool(node.targets)
            and isinstance(node.targets[0], ast.Name) and node.targets[0].id in METADATA)


def _prune(body: list[ast.stmt], in_class: bool) -> list[ast.stmt]:
    """Step 3 over one statement list; in_class: a class is open already (nested ones stay)."""
    kept = []
    for node in body:
        if _is_directive(node) or _is_metadata(node):
            continue
        if isinstance(node, ast.FunctionDef):          # (an async def is walked into)
            kept.append(node)
            continue
        if isinstance(node, ast.ClassDef):
            if not in_class:
                node.body = _prune(node.body, True) or [ast.Pass()]
            kept.append(node)
            continue
        if isinstance(node, ast.If):
            node.body = _prune(node.body, in_class)
            node.orelse = _prune(node.orelse, in_class)
            if not node.body:
                if not node.orelse:
                    continue
                node.body = [ast.Pass()]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            node.body = _prune(node.body, in_class)
            node.orelse = _prune(node.orelse, in_class)
            if not node.body:
                continue
        elif isinstance(node, ast.AsyncFunctionDef):
            node.body = _prune(node.body, in_class)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            node.body = _prune(node.body, in_class)
            if not node.body:
                continue
        elif isinstance(node, ast.Try):
            for part in ("body", "orelse", "finalbody"):
                setattr(node, part, _prune(getattr(node, part), in_class))
            for handler in node.handlers:
                handler.body = _prune(handler.body, in_class)
        kept.append(node)
    return kept


def _functions(node: ast.AST):
    """The `def`s Spack's multi-method pass sees, in document order: every one that is not
    inside another `def` (async ones are walked through, not seen)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef):
            yield child
        else:
            yield from _functions(child)


def _drop_overridden(node: ast.AST, keep: set[int]) -> None:
    for _field, value in ast.iter_fields(node):
        if isinstance(value, list):
            value[:] = [v for v in value if not isinstance(v, ast.FunctionDef) or id(v) in keep]
            for item in value:
                if isinstance(item, ast.AST) and not isinstance(item, ast.FunctionDef):
                    _drop_overridden(item, keep)
        elif isinstance(value, ast.AST) and not isinstance(value, ast.FunctionDef):
            _drop_overridden(value, keep)


def _resolve_multimethods(tree: ast.Module, path: str) -> None:
    """Step 4: of the `def`s of one name, an undecorated one overrides every earlier one (Spack
    keeps it and what follows it); a `@when(...)` one is refused."""
    live: dict[str, list[ast.FunctionDef]] = {}
    for func in _functions(tree):
        for deco in func.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                    and deco.func.id == "when" and len(deco.args) == 1):
                raise RecipeError(f"{path}:{deco.lineno}: @when multi-method: its hash "
                                  "depends on the spec, which only Spack can decide")
        if not func.decorator_list:
            live[func.name] = []
        live.setdefault(func.name, []).append(func)
    _drop_overridden(tree, {id(f) for funcs in live.values() for f in funcs})


class _Unparser(ast._Unparser):  # the standard library's unparser, adjusted below
    """ast.unparse as Spack 1.1's unparser writes it in its "consistent" mode (step 5)."""

    def __init__(self, consistent: bool = True, _avoid_backslashes: bool = False):
        super().__init__(_avoid_backslashes=_avoid_backslashes)
        self._consistent = consistent

    def visit_Tuple(self, node):
        with self.delimit_if("(", ")", self._consistent or not node.elts
                             or self.get_precedence(node) > ast._Precedence.TUPLE):
            self.items_view(self.traverse, node.elts)

    def visit_Subscript(self, node):
        # a[1, 2] bare, but a[(1, *b)] in parentheses (a syntax error before Python 3.11)
        self.set_precedence(ast._Precedence.ATOM, node.value)
        self.traverse(node.value)
        with self.delimit("[", "]"):
            index = node.slice
            if (isinstance(index, ast.Tuple) and index.elts
                    and not any(isinstance(e, ast.Starred) for e in index.elts)):
                self.items_view(self.traverse, index.elts)
            else:
                self.traverse(index)

    def visit_Constant(self, node):
        if self._consistent and getattr(node, "kind", None) == "u":
            node = ast.Constant(node.value)     # no u"" prefix
        super().visit_Constant(node)

    def visit_Lambda(self, node):
        with self.require_parens(ast._Precedence.TEST, node):
            with self.buffered() as args:
                self.traverse(node.args)
            self.write("lambda")
            if args or self._consistent:         # "lambda : x", as before Python 3.11
                self.write(" ", *args)
            self.write(": ")
            self.set_precedence(ast._Precedence.TEST, node.body)
            self.traverse(node.body)

    def visit_JoinedStr(self, node):
        # One quote for the whole f-string, chosen so that no part needs escaping it: literal
        # parts may escape whitespace, {expression} parts hold no backslash. When no quote fits
        # every part: triple single quotes, each part as repr() writes it in single quotes.
        self.write("f")
        if self._avoid_backslashes:
            self._write_str_avoiding_backslashes(self._fstring_text(node))
            return
        parts = [(self._fstring_text(v), isinstance(v, ast.Constant)) for v in node.values]
        quotes, written = list(ast._ALL_QUOTES), []
        for text, literal in parts:
            text, fitting = self._str_literal_helper(text, quote_types=quotes,
                                                     escape_special_whitespace=literal)
            if set(fitting).isdisjoint(quotes):
                quotes = ["'''"]
                written = [repr('"' + t)[2:-1] for t, _ in parts]
                break
            quotes = fitting
            written.append(text)
        self.write(f"{quotes[0]}{''.join(written)}{quotes[0]}")

    def _fstring_text(self, node, spec: bool = False) -> str:
        if isinstance(node, ast.JoinedStr):
            return "".join(self._fstring_text(v, spec) for v in node.values)
        if isinstance(node, ast.FormattedValue):
            inner = type(self)(consistent=False, _avoid_backslashes=True)
            inner.set_precedence(ast._Precedence.TEST.next(), node.value)
            expr = inner.visit(node.value)
            if "\\" in expr:
                raise RecipeError("a backslash in an f-string expression")
            out = "{" + (" " if expr.startswith("{") else "") + expr
            if node.conversion != -1:
                out += "!" + chr(node.conversion)
            if node.format_spec:
                out += ":" + self._fstring_text(node.format_spec, spec=True)
            return out + "}"
        text = node.value.replace("{", "{{").replace("}", "}}")
        if spec:                                 # a format spec is written escaped
            for old, new in (("\\", "\\\\"), ("'", "\\'"), ('"', '\\"'), ("\n", "\\n")):
                text = text.replace(old, new)
        return text


def _parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise RecipeError(f"{path}:{exc.lineno}: not Python: {exc.msg}") from None


def canonical_source(source: str, path: str = "package.py") -> str:
    tree = _parse(source, path)
    _drop_strings(tree)
    tree.body = _prune(tree.body, False)
    _resolve_multimethods(tree, path)
    return _Unparser().visit(tree) + "\n"


def recipe_hash(source: str, path: str = "package.py") -> str:
    """base32 sha1 of the canonical source: Spack's `spack.util.package_hash.package_hash`."""
    return _b32(hashlib.sha1(canonical_source(source, path).encode("utf-8")).digest())


def content_hash(source: str, source_id: str, patches: tuple[str, ...] = (),
                 path: str = "package.py") -> str:
    """What spack.lock records as a node's `package_hash`."""
    parts = [source_id.encode(), *(p.encode() for p in patches),
             recipe_hash(source, path).encode()]
    return _b32(hashlib.sha256(b"".join(sorted(parts))).digest())


def dag_hash(node: dict) -> str:
    """A concrete node's DAG hash as Spack 1.1 computes it from the node as spack.lock stores it:
    base32(sha1(compact JSON of the node without its own `hash`)), lower case. An external's
    recorded hash is Spack 1.1's without the `namespace` it records (a known quirk of that
    release), so an external's namespace is left out here too."""
    hashed = {k: v for k, v in node.items() if k != "hash"}
    if "external" in hashed:
        hashed.pop("namespace", None)
    return _b32(hashlib.sha1(json.dumps(hashed, separators=(",", ":")).encode("utf-8")).digest())


def source_id(recipe: Path, version: str, source: str | None = None) -> str:
    """What the fetcher of `version(<version>, ...)` identifies its source by: its checksum, else
    its commit, else "" (a branch or a tag gives no id)."""
    text = recipe.read_text() if source is None else source
    for node in ast.walk(_parse(text, _shown(recipe))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == "version" and node.args
                and isinstance(node.args[0], ast.Constant) and str(node.args[0].value) == version):
            kwargs = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            for key in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "checksum", "commit"):
                if key in kwargs:
                    return str(kwargs[key])
            return ""
    raise RecipeError(f"{_shown(recipe)}: no version({version!r}, ...), the version spack.lock has")


# -- The check of a recording (tests/data/spack) against the committed recipes ----------------

HOW = "re-record tests/data/spack (its README.md)"
HASH = re.compile(r"(?<![a-z0-9])[a-z2-7]{32}(?![a-z0-9])")


def _shown(path: Path) -> str:
    """A path as the user sees it: relative to the working directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


MAX_BYTES = 64 << 20


class Unreadable(Exception):
    """A recorded file that is not a regular file of text, said in one line."""


def _read(path: Path) -> str:
    """A recorded file's text: only a regular file (never a FIFO or a device, which would block or
    never end), of at most MAX_BYTES, in UTF-8."""
    try:
        if not path.is_file():
            raise Unreadable(f"{path.name}: not a regular file" if path.exists() or path.is_symlink()
                             else f"{path.name}: missing")
        if path.stat().st_size > MAX_BYTES:
            raise Unreadable(f"{path.name}: larger than {MAX_BYTES >> 20} MiB")
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise Unreadable(f"{path.name}: cannot be read ({exc.strerror})") from None


def _lock(data: Path) -> tuple[dict, list[str]]:
    path = data / "spack.lock"
    try:
        lock = json.loads(_read(path))
    except Unreadable as exc:
        return {}, [str(exc)]
    except json.JSONDecodeError as exc:
        return {}, [f"{path.name}:{exc.lineno}: not JSON: {exc.msg}"]
    nodes = lock.get("concrete_specs") if isinstance(lock, dict) else None
    if not isinstance(nodes, dict) or not all(isinstance(n, dict) for n in nodes.values()):
        return {}, [f"{path.name}: no concrete_specs of nodes: not a Spack lockfile"]
    return lock, []


def _node_problems(lock: dict) -> list[str]:
    nodes, out = lock["concrete_specs"], []
    for key, node in nodes.items():
        name = node.get("name", "?")
        if node.get("hash") != key:
            out.append(f"spack.lock: node {name} {key[:7]} says its hash is {node.get('hash')}")
        elif dag_hash(node) != key:
            out.append(f"spack.lock: node {name} {key[:7]} hashes to {dag_hash(node)[:7]}: "
                       "edited after Spack wrote it")
        for dep in node.get("dependencies", []):
            if dep.get("hash") not in nodes:
                out.append(f"spack.lock: {name} depends on {dep.get('name')} "
                           f"{str(dep.get('hash'))[:7]}, which the lock does not have")
    for root in lock.get("roots", []):
        if root.get("hash") not in nodes:
            out.append(f"spack.lock: root {root.get('spec')} {str(root.get('hash'))[:7]} "
                       "is not in the lock")
    return out


def recipe_problems(lock: dict, repo: Path) -> list[str]:
    """Each local package of the lock against its committed recipe, and the other way round."""
    out = []
    local = {k: n for k, n in lock["concrete_specs"].items() if n.get("namespace") == repo.name}
    recipes = {p.parent.name.replace("_", "-"): p for p in (repo / "packages").glob("*/package.py")}
    for _key, node in local.items():
        name = node.get("name")
        recipe = recipes.get(name)
        if recipe is None:
            out.append(f"spack.lock: {repo.name} package {name} has no recipe in {repo.name}/packages")
            continue
        try:
            text = _read(recipe)
            sid = source_id(recipe, str(node.get("version")), text)
            mine = content_hash(text, sid, path=_shown(recipe))
        except Unreadable as exc:
            out.append(f"{_shown(recipe.parent)}/{exc}")
            continue
        except RecipeError as exc:
            out.append(str(exc))
            continue
        if mine != node.get("package_hash"):
            out.append(f"{_shown(recipe)}: Spack's package_hash of it is {mine[:8]}, spack.lock has "
                       f"{str(node.get('package_hash'))[:8]}: the recipe changed after the "
                       f"recording; {HOW}")
    for name in sorted(set(recipes) - {n.get("name") for n in local.values()}):
        out.append(f"{_shown(recipes[name])}: not in spack.lock: the recipe is newer than the "
                   f"recording; {HOW}")
    return out


def _output_problems(lock: dict, data: Path) -> list[str]:
    nodes, out = lock["concrete_specs"], []
    try:
        found = json.loads(_read(data / "find-json.out"))
        if {s["hash"]: s for s in found} != nodes:
            out.append("find-json.out: its nodes are not spack.lock's")
    except Unreadable as exc:
        out.append(str(exc))
    except (ValueError, TypeError, KeyError) as exc:
        out.append(f"find-json.out: not the JSON list Spack prints ({exc.__class__.__name__})")
    for path in sorted([*data.glob("install*.out"), *data.glob("load-*.out"),
                        *data.glob("location-*.out")]):
        try:
            unknown = sorted(set(HASH.findall(_read(path))) - set(nodes))
        except Unreadable as exc:
            out.append(str(exc))
            continue
        if unknown:
            out.append(f"{path.name}: names {unknown[0]}, which spack.lock does not have")
    try:
        recorded = json.loads(_read(data / "index.json"))["environment"]["spack_lock_sha256"]
    except Unreadable as exc:
        return [*out, str(exc)]
    except (ValueError, TypeError, KeyError) as exc:
        return [*out, f"index.json: no environment.spack_lock_sha256 ({exc.__class__.__name__})"]
    if recorded != hashlib.sha256((data / "spack.lock").read_bytes()).hexdigest():
        out.append("index.json: spack_lock_sha256 is not the sha256 of spack.lock")
    return out


def check_recording(data: Path, repo: Path) -> list[str]:
    """Why the recording in `data` is not Spack's output for the recipes in `repo` (the package
    repository directory, e.g. spack-repo/spack_repo/iolab), one line each; [] if it is."""
    lock, out = _lock(data)
    if out:
        return out
    return [*_node_problems(lock), *recipe_problems(lock, repo), *_output_problems(lock, data)]


def main(argv: list[str]) -> int:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(
        prog="python -m tests.tools.spack_hash",
        description="Check that a Spack recording is Spack's output for the committed recipes.")
    parser.add_argument("--data", type=Path, default=root / "tests" / "data" / "spack")
    parser.add_argument("--repo", type=Path, default=root / "spack-repo" / "spack_repo" / "iolab")
    args = parser.parse_args(argv)
    problems = check_recording(args.data, args.repo)
    for line in problems:
        print(f"spack recording: error: {line}", file=sys.stderr)
    if not problems:
        nodes = len(json.loads((args.data / "spack.lock").read_text())["concrete_specs"])
        print(f"spack recording: {nodes} nodes, each with Spack's hashes for the committed recipes")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

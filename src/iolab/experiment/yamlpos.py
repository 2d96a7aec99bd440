"""Read YAML while remembering the line of every key, so errors can point at it.

Hostile input is refused before anything is built: bytes that are not UTF-8, nesting deeper than
MAX_DEPTH, a document that grows past MAX_NODES values once its aliases are expanded (a "billion
laughs"), an anchor used inside itself, and keys that are not strings.
"""

from __future__ import annotations

import codecs
import re

import yaml
from yaml.composer import Composer
from yaml.resolver import Resolver

from ..errors import IolabError

MAX_DEPTH = 64           # nested mappings and lists; experiments need fewer than 10
MAX_NODES = 100_000      # keys, items and scalars of a document, aliases expanded

# Characters that never belong in a value: C0 and C1 controls, DEL, the Unicode line and paragraph
# separators (YAML 1.1 line breaks in disguise), and lone surrogates (they cannot be written as UTF-8).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_NAMES = {"\0": "a NUL byte", "\t": "a tab", "\n": "a newline", "\r": "a carriage return",
          "\x1b": "an escape character", "\x7f": "a delete character", "\x85": "a next-line character",
          "\u2028": "a line separator", "\u2029": "a paragraph separator"}
_BOMS = {codecs.BOM_UTF32_LE: "UTF-32", codecs.BOM_UTF32_BE: "UTF-32",
         codecs.BOM_UTF16_LE: "UTF-16", codecs.BOM_UTF16_BE: "UTF-16"}


def char_name(char: str) -> str:
    """'a newline (U+000A)': how an error names a character nobody can see."""
    code = f"U+{ord(char):04X}"
    if char in _NAMES:
        return f"{_NAMES[char]} ({code})"
    if "\ud800" <= char <= "\udfff":
        return f"a lone surrogate ({code})"
    return f"the control character {code}"


class Located:
    """Data plus a map from key path (tuple) to 1-based line number."""

    def __init__(self, data, lines: dict[tuple, int], file: str):
        self.data = data
        self.lines = lines
        self.file = file

    def line(self, path) -> int | None:
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def error(self, path, message: str, hint: str | None = None) -> IolabError:
        return IolabError(message, file=self.file, line=self.line(path),
                          key=dotted(path) or None, hint=hint)


def dotted(path) -> str:
    out = ""
    for p in path:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            p = str(p)
            if CONTROL.search(p) or len(p) > BRIEF:
                p = brief(p)[1:-1] if len(p) <= BRIEF else brief(p)
            out += ("." if out else "") + p
    return out


BRIEF = 60


def brief(value) -> str:
    """repr() for messages: control characters escaped, and a 1 MB string cut short."""
    text = "null" if value is None else repr(value)
    if len(text) <= BRIEF:
        return text
    size = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return f"{text[:BRIEF]}...{size}"


def decode(raw: bytes, file: str) -> str:
    """The text of a YAML file, which must be UTF-8 (a UTF-8 byte-order mark is fine)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        bom = next((name for mark, name in _BOMS.items() if raw.startswith(mark)), None)
        hint = (f"it starts with a {bom} byte-order mark: save it as UTF-8" if bom
                else "save the file as UTF-8")
        raise IolabError(f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}",
                         file=file, line=line, hint=hint) from None


class _Replay(Composer, Resolver):
    """PyYAML's composer fed with events already parsed (and checked) by _checked_events."""

    def __init__(self, events):
        self._events = events
        self._next = 0
        Composer.__init__(self)
        Resolver.__init__(self)

    def check_event(self, *choices):
        if self._next >= len(self._events):
            return False
        return not choices or isinstance(self._events[self._next], choices)

    def peek_event(self):
        return self._events[self._next]

    def get_event(self):
        self._next += 1
        return self._events[self._next - 1]


# libyaml, where PyYAML was built with it: the same events, about ten times faster (100,000 values
# take 2 s in pure Python). On a syntax error PyYAML's own parser runs again: its words are better.
_FAST = getattr(yaml, "CSafeLoader", None)


def _checked_events(text: str, file: str) -> list:
    if _FAST is not None:
        try:
            return _check_events(yaml.parse(text, Loader=_FAST), file)
        except yaml.YAMLError:
            pass
    return _check_events(yaml.parse(text, Loader=yaml.SafeLoader), file)


def _check_events(parsed, file: str) -> list:
    """Parse to events (neither parser recurses) and refuse deep nesting, alias bombs and
    recursive anchors before any node is built: composing and building do recurse.

    Both limits count the document as it will be built, every alias expanded: an alias inside
    three levels of nesting to an anchor that is itself four levels deep reaches level seven."""
    events = []
    total = 0               # values so far, aliases expanded
    open_: list[list] = []  # per open collection: [anchor, total at its start, deepest level inside]
    sizes: dict[str, int] = {}      # anchor -> values it expands to
    heights: dict[str, int] = {}    # anchor -> levels of nesting it brings along (0: a scalar)
    where: dict[str, int] = {}      # anchor -> line

    def reach(level, line):
        if open_:
            open_[-1][2] = max(open_[-1][2], level)
        if level > MAX_DEPTH:
            raise IolabError(f"nested more than {MAX_DEPTH} levels deep"
                             + (" once its aliases are expanded" if sizes else ""), file=file,
                             line=line, hint="an experiment needs a few levels; is it generated?")

    for event in parsed:
        events.append(event)
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in sizes:
                total += sizes[event.anchor]
                reach(len(open_) + heights[event.anchor], line)
            elif any(entry[0] == event.anchor for entry in open_):
                raise IolabError(f"*{event.anchor} is used inside &{event.anchor} itself: a "
                                 "recursive structure cannot be an experiment", file=file, line=line)
            # else: an undefined alias, which the composer reports
        elif isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            total += 1
            if event.anchor is not None:
                if event.anchor in where:
                    raise IolabError(f"anchor &{event.anchor} is defined twice (first at line "
                                     f"{where[event.anchor]})", file=file, line=line)
                where[event.anchor] = line
                if isinstance(event, yaml.ScalarEvent):
                    sizes[event.anchor], heights[event.anchor] = 1, 0
            if isinstance(event, yaml.CollectionStartEvent):
                open_.append([event.anchor, total - 1, len(open_) + 1])
                reach(len(open_), line)
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, start, deepest = open_.pop()
            if anchor is not None:
                sizes[anchor], heights[anchor] = total - start, deepest - len(open_)
            if open_:
                open_[-1][2] = max(open_[-1][2], deepest)
        if total > MAX_NODES:
            raise IolabError(f"more than {MAX_NODES} values" + (" once its aliases are expanded"
                                                                if sizes else ""),
                             file=file, line=line,
                             hint="aliases (*name) that repeat anchors many times over, e.g. a "
                                  "'billion laughs', are refused" if sizes else None)
    return events


def _yaml_error(exc: yaml.YAMLError, text: str, file: str) -> IolabError:
    if isinstance(exc, yaml.reader.ReaderError):
        # A character YAML forbids (a NUL, most controls): its position is counted in characters.
        line = text[:exc.position].count("\n") + 1
        return IolabError(f"not valid YAML: {char_name(chr(exc.character))} is not allowed in a "
                          "YAML file", file=file, line=line)
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark else None
    problem = getattr(exc, "problem", None) or str(exc)
    # The problem is often found a line after the mistake (an unclosed '[' is noticed at the
    # next key): say where the construct being parsed started.
    context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    hint = f"{context} that started at line {cmark.line + 1}" if context and cmark else None
    return IolabError(f"not valid YAML: {problem}", file=file, line=line, hint=hint)


_STD = "tag:yaml.org,2002:"
_PLAIN = (_STD + "map", _STD + "seq")


def _describe_key(key) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", type(None): "null",
            list: "a list", dict: "a mapping"}.get(type(key), f"a {type(key).__name__}")
    return kind if isinstance(key, (list, dict, type(None))) else f"{kind} ({brief(key)})"


def load_yaml(text: str, file: str) -> Located:
    try:
        root = _Replay(_checked_events(text, file)).get_single_node()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, text, file) from None
    if root is None:
        raise IolabError("the file is empty", file=file, line=1)
    lines: dict[tuple, int] = {(): root.start_mark.line + 1}
    constructor = yaml.SafeLoader("")
    inherited: dict[int, int] = {}   # id(mapping node) -> how many of its pairs came from '<<'

    def construct(node):
        try:
            return constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError) as exc:
            # e.g. a date such as 2024-13-45, or an integer longer than Python converts
            problem = (f"an integer of {len(node.value)} digits is far too large"
                       if node.tag.endswith(":int") else f"cannot read this value: {exc}")
            raise IolabError(problem, file=file, line=node.start_mark.line + 1) from None

    def build(node, path):
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.CollectionNode) and node.tag not in _PLAIN:
            # !!set, !!omap, !!python/...: the builder below would quietly drop the tag
            tag = node.tag.replace(_STD, "!!")
            raise IolabError(f"the tag {tag if len(tag) < BRIEF else brief(tag)} is not allowed: an "
                             "experiment holds plain mappings, lists and values", file=file,
                             line=node.start_mark.line + 1, key=dotted(path) or None)
        if isinstance(node, yaml.MappingNode):
            if id(node) not in inherited:   # an alias visits the same node again
                own = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
                constructor.flatten_mapping(node)   # '<<: *anchor' merge keys, as yaml.safe_load
                inherited[id(node)] = len(node.value) - own
            # Merged pairs come first, own pairs last: the last pair of a key wins. Only the
            # winner is built, so an overridden value leaves no lines behind.
            winner: dict[str, tuple] = {}
            own_keys = set()
            for i, (knode, vnode) in enumerate(node.value):
                key = construct(knode)
                if not isinstance(key, str):
                    written = knode.value if isinstance(knode, yaml.ScalarNode) else ""
                    raise IolabError(f"keys must be strings, got {_describe_key(key)}", file=file,
                                     line=knode.start_mark.line + 1, key=dotted(path) or None,
                                     hint=f"quote it for text: '{written}':" if written else None)
                if i >= inherited[id(node)]:
                    if key in own_keys:
                        raise IolabError(f"duplicate key {brief(key)}", file=file,
                                         line=knode.start_mark.line + 1, key=dotted(path + (key,)))
                    own_keys.add(key)
                winner[key] = (knode, vnode)    # keeps the place of the key's first pair
            out = {}
            for key, (knode, vnode) in winner.items():
                lines[path + (key,)] = knode.start_mark.line + 1
                out[key] = build(vnode, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [build(item, path + (i,)) for i, item in enumerate(node.value)]
        return construct(node)

    try:
        data = build(root, ())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise IolabError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=file,
                         line=mark.line + 1 if mark else None) from None
    return Located(data, lines, file)

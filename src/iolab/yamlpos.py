"""Read YAML while remembering the line of every key, so errors can point at it."""

from __future__ import annotations

import yaml

from .errors import IolabError


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
            out += ("." if out else "") + str(p)
    return out


def load_yaml(text: str, file: str) -> Located:
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        # The problem is often found a line after the mistake (an unclosed '[' is noticed at the
        # next key): say where the construct being parsed started.
        context, cmark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        hint = f"{context} that started at line {cmark.line + 1}" if context and cmark else None
        raise IolabError(f"not valid YAML: {problem}", file=file, line=line, hint=hint) from None
    if root is None:
        raise IolabError("the file is empty", file=file, line=1)
    lines: dict[tuple, int] = {(): root.start_mark.line + 1}
    constructor = yaml.SafeLoader("")
    inherited: dict[int, int] = {}   # id(mapping node) -> how many of its pairs came from '<<'

    def build(node, path):
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            if id(node) not in inherited:   # an alias visits the same node again
                own = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
                constructor.flatten_mapping(node)   # '<<: *anchor' merge keys, as yaml.safe_load
                inherited[id(node)] = len(node.value) - own
            out = {}
            own_keys = set()
            for i, (knode, vnode) in enumerate(node.value):
                key = constructor.construct_object(knode, deep=True)
                if isinstance(key, (list, dict)):
                    raise IolabError("a key must be a plain value", file=file,
                                     line=knode.start_mark.line + 1)
                if key in own_keys:
                    raise IolabError(f"duplicate key {key!r}", file=file,
                                     line=knode.start_mark.line + 1, key=dotted(path + (key,)))
                if key in out:
                    # A key written here (or a later merge) overrides a merged one: forget its lines.
                    prefix = path + (key,)
                    for stale in [p for p in lines if p[:len(prefix)] == prefix]:
                        del lines[stale]
                if i >= inherited[id(node)]:
                    own_keys.add(key)
                lines[path + (key,)] = knode.start_mark.line + 1
                out[key] = build(vnode, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [build(item, path + (i,)) for i, item in enumerate(node.value)]
        return constructor.construct_object(node, deep=True)

    try:
        data = build(root, ())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise IolabError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=file,
                         line=mark.line + 1 if mark else None) from None
    return Located(data, lines, file)

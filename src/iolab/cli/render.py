"""`iolab render`: the ReFrame shims regenerated."""

from __future__ import annotations


from .common import error, project_dir

VERB = "render"
EXAMPLES = ["iolab render", "iolab render --check"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="(re)generate the ReFrame shims in reframe/generated/")
    s.add_argument("--check", action="store_true", help="only report stale shims (exit 1)")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..rfm.shims import sync_shims

    root = project_dir()
    changes = sync_shims(root / "experiments", root / "reframe" / "generated", check_only=args.check)
    for line in changes:
        print(line)
    if args.check and changes:
        error("shims are out of date: run `iolab render`")
        return 1
    if not changes:
        print("all shims up to date")
    return 0

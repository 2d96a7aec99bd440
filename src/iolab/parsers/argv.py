"""A benchmark's command line as its own option parser reads it (IOR 4's option.c, which mdtest
shares): short flags may be grouped (-wrk), a short option's value may be attached (-t64k), follow
as the next argument, or come after '=' (-e=0); long options are --name or --name=value."""

from __future__ import annotations


def options(args: list[str], valued: set[str]) -> list[tuple[str, str | None]]:
    """(option, value) in order: a short option as its letter, a long one as '--name'; a flag's
    value is None unless given with '='; an argument that is no option is ('', argument)."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--"):
            name, sep, value = arg.partition("=")
            out.append((name, value if sep else None))
            continue
        if not arg.startswith("-") or arg == "-":
            out.append(("", arg))
            continue
        letters, sep, value = arg[1:].partition("=")
        for n, letter in enumerate(letters):
            if letter not in valued:
                out.append((letter, value if sep and n == len(letters) - 1 else None))
                continue
            if sep:
                attached = value
            elif n + 1 < len(letters):
                attached = letters[n + 1:]
            else:
                attached = args[i] if i < len(args) else None
                i += 1
            out.append((letter, attached))
            break
    return out


def size(text: str | None) -> int | None:
    """A byte count as IOR and mdtest read one (string_to_bytes): digits with an optional k, m, g,
    t or p (powers of 1024); None if it is not one."""
    if not text:
        return None
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
    unit = scale.get(text[-1].lower(), 1)
    digits = text[:-1] if text[-1].lower() in scale else text
    return int(digits) * unit if digits.isdigit() else None

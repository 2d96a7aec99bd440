"""The figures a bench script prints, kept as data for the docs.

A script builds each table once (`Figures.table`), which prints it as aligned text; with
`--record FILE` (`Figures.write`) the same tables go to a JSON file with what produced them: the
command, the date, the commit and the machine. The docs' Performance page is generated from the
files in docs/perf/ when the docs are built (docs/_ext/iolab_reference.py), so a figure in the
docs is always one a script printed, never one typed by hand.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

FORMAT = 1                  # the layout of a figures file; the docs refuse another


def _commit(root: Path) -> str | None:
    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                         capture_output=True, text=True)
    if out.returncode:
        return None
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return out.stdout.strip() + ("+changes" if dirty else "")


def _machine() -> str:
    mem = ""
    try:
        kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                   if line.startswith("MemTotal:"))
        mem = f", {kib / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    return (f"{os.cpu_count()} cores{mem}, {platform.system()} {platform.machine()}, "
            f"Python {platform.python_version()}")


def _shown(path: Path, root: Path) -> str:
    """A path inside the repository relative to it; any other, its name only (a figures file
    names no directory of the machine it was measured on)."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return path.name


def _text(value) -> str:
    return "-" if value is None else str(value)


class Figures:
    """The tables and notes of one run of a bench script."""

    def __init__(self, script: str, root: Path, argv: list[str] | None = None):
        argv = list(sys.argv[1:] if argv is None else argv)
        for i, arg in enumerate(argv[:-1]):     # the file written, as the repository names it
            if arg == "--record":
                argv[i + 1] = _shown(Path(argv[i + 1]), root)
        self.data = {"format": FORMAT, "script": script, "command": " ".join([script, *argv]),
                     "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                     "commit": _commit(root), "machine": _machine(),
                     "load_average": round(os.getloadavg()[0], 1), "tables": [], "notes": []}

    def note(self, text: str) -> None:
        """A sentence about the whole run (printed; kept under the last table, or at the top)."""
        print(text)
        where = self.data["tables"][-1]["notes"] if self.data["tables"] else self.data["notes"]
        where.append(text)

    def table(self, title: str, header: list[str], rows: list[list], notes: list[str] = ()) -> None:
        """Print a table (first column left-aligned, the rest right-aligned) and keep it."""
        cells = [[_text(c) for c in row] for row in rows]
        widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(header)]
        print(title)
        for row in [header, *cells]:
            line = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
            print("  ".join(line).rstrip())
        for n in notes:
            print(n)
        print()
        self.data["tables"].append({"title": title, "header": list(header), "rows": cells,
                                    "notes": list(notes)})

    def write(self, path: str | None) -> None:
        """Write the figures to `path` whole (a temporary file renamed), if one was given."""
        if not path:
            return
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, target)
        print(f"figures written to {target}")

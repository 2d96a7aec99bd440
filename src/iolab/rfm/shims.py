"""The generated ReFrame shims (reframe/generated/<id>.py), one per experiment, each stamped with
its YAML's sha256 and rewritten when the YAML changes."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..experiment.load import class_name
from ..render import render_template

SHIM_TEMPLATE = "reframe/shim.py.j2"
_SHA_RE = re.compile(r"^IOLAB_YAML_SHA256 = \"([0-9a-f]{64})\"$", re.MULTILINE)


def shim_path(generated_dir: Path, experiment_id: str) -> Path:
    return generated_dir / f"{class_name(experiment_id)}.py"


def render_shim(yaml_path: Path, experiment_id: str, sha256: str, generated_dir: Path) -> str:
    rel = os.path.relpath(yaml_path.resolve(), generated_dir.resolve())
    return render_template(SHIM_TEMPLATE, experiment_id=experiment_id, yaml_relpath=rel,
                           sha256=sha256)


def shim_sha(path: Path) -> str | None:
    try:
        m = _SHA_RE.search(path.read_text())
    except OSError:
        return None
    return m.group(1) if m else None


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def ensure_current(target: Path, yaml_path: Path, experiment_id: str, sha256: str) -> bool:
    """Write an experiment's shim where it is missing or stamped with another sha256 of its
    YAML; True when it was written."""
    if target.is_file() and sha256 in target.read_text():
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, render_shim(yaml_path, experiment_id, sha256, target.parent))
    return True


def sync_shims(experiments_dir: Path, generated_dir: Path, check_only: bool = False) -> list[str]:
    """Write a shim for every experiment whose shim is missing or stale; drop orphans.

    Returns a line per change. With check_only, changes nothing and reports what would change.
    """
    from ..experiment.load import load_experiment

    changes = []
    generated_dir.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for yaml_path in sorted(experiments_dir.glob("*.yaml")):
        exp = load_experiment(yaml_path)
        target = shim_path(generated_dir, exp.id)
        wanted.add(target.name)
        current = shim_sha(target)
        if current == exp.sha256:
            continue
        what = "new" if current is None else "stale"
        changes.append(f"{what}: {target} (from {yaml_path})")
        if not check_only:
            write_atomic(target, render_shim(yaml_path, exp.id, exp.sha256, generated_dir))
    for orphan in sorted(generated_dir.glob("*.py")):
        if orphan.name not in wanted and orphan.name != "__init__.py" and shim_sha(orphan):
            changes.append(f"orphan: {orphan} (its YAML is gone)")
            if not check_only:
                orphan.unlink()
    return changes

"""The site facts of a ReFrame partition: its extras['iolab'], checked once per partition and
content (experiment/site.py types them), with the line of the configuration file that holds a
wrong key where one line does."""

from __future__ import annotations

import json
import os
import sys

from ..errors import IolabError
from ..experiment.site import SiteConfig, load
from .internals import config_files

_OF: dict[str, tuple[str, SiteConfig]] = {}


def config_file(argv: list[str] | None = None, environ=None) -> tuple[str, str] | None:
    """The ReFrame configuration file of this session (its last, which defines the system): as
    the user wrote it (-C, --config-file, RFM_CONFIG_FILES), and its absolute path. ReFrame
    imports a file from inside its directory, so the working directory cannot tell."""
    try:
        sources = [s for s in config_files() if s and not s.startswith("<")]
    except Exception:  # noqa: BLE001 - outside a ReFrame session
        return None
    return shown_source(sources[-1], argv, environ) if sources else None


def shown_source(source: str, argv: list[str] | None = None, environ=None) -> tuple[str, str]:
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    typed = [*environ.get("RFM_CONFIG_FILES", "").split(":")]
    for i, arg in enumerate(argv):
        if arg in ("-C", "--config-file") and i + 1 < len(argv):
            typed.append(argv[i + 1])
        elif arg.startswith("--config-file="):
            typed.append(arg.split("=", 1)[1])
        elif arg.startswith("-C") and len(arg) > 2:
            typed.append(arg[2:])
    real = os.path.normpath(source)
    for name in reversed([t for t in typed if t]):
        norm = os.path.normpath(name)
        if real == norm or (not os.path.isabs(norm) and real.endswith(os.sep + norm)):
            return name, source
    return source, source


def of(partition) -> SiteConfig:
    """The site facts of a ReFrame partition (checked once per partition and content)."""
    extras = (partition.extras or {}).get("iolab")
    key = json.dumps(extras, sort_keys=True, default=repr)
    cached = _OF.get(partition.fullname)
    if cached is None or cached[0] != key:
        shown, source = config_file() or (None, None)
        cached = _OF[partition.fullname] = (key, load(extras, file=shown, source=source))
    return cached[1]


def problem(partitions) -> IolabError | None:
    """What is wrong with the site facts of these partitions (the session's system), if anything:
    the experiments cannot run there until it is fixed."""
    for part in partitions:
        try:
            of(part)
        except IolabError as exc:
            return exc
    return None

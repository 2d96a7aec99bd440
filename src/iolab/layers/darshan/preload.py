"""Darshan around one case: preloaded into the benchmark alone (through the launcher's policy),
its log at a fixed path in the stage directory, summarised before the next case starts."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..storage import lustre
from ...errors import IolabError
from ..base import RuntimeLibrary

LOG = "darshan.log"
OBSERVED = "darshan"                 # its part of a record's `observed`
# Darshan 3.4.x's default log hints (romio_no_indep_rw=true;cb_nodes=4) intermittently corrupt
# logs under Open MPI's ompio (darshan issues #1000, #1064; fixed upstream by cb_nodes=1).
LOGHINTS = "cb_nodes=1"
# What each Darshan instance prints when DARSHAN_LOGFILE already exists: every process of a
# benchmark that forks its workers (fio) has its own instance, and only the first to finish can
# write the one log file.
LOST_LOG = re.compile(r"darshan_library_warning: unable to create log file")


@dataclass
class Preload:
    info: dict                                  # observed.darshan's start: status, lib, dxt, env
    env: dict = field(default_factory=dict)     # variables for the benchmark
    launcher_options: list[str] = field(default_factory=list)
    prefix: str | None = None                   # for the command, where the launcher cannot


# Darshan's runtime as the stack supplies it, with the libraries its recipe links
# (darshan-runtime +hdf5 +parallel-netcdf)
RUNTIME = RuntimeLibrary(module="darshan", package="darshan-runtime", file="libdarshan.so",
                         links=("hdf5", "parallel-netcdf"), config_key="darshan_lib",
                         env_var="DARSHAN_LIB", config_tool=("darshan-config", "--dyn-ld-flags"),
                         module_roots=("DARSHAN_RUNTIME_ROOT", "DARSHAN_ROOT"))


def preload(conf, stack, spec, stage: Path, policy) -> Preload | None:
    """How the case runs under Darshan (None: the experiment and the system do not ask)."""
    if not conf.enabled:
        return None
    found = stack.preload(RUNTIME)
    if found is None:
        return Preload({"status": "not available",
                        "reason": f"no darshan-runtime in the {stack.provider} stack "
                                  f"(set extras['iolab']['stack']['darshan_lib'])"})
    lib, lib_word = found
    env = {"DARSHAN_LOGFILE": str(stage / LOG), "DARSHAN_LOGHINTS": LOGHINTS}
    if not spec.mpi:
        env["DARSHAN_ENABLE_NONMPI"] = "1"
    if conf.dxt:
        env["DARSHAN_MOD_ENABLE"] = "DXT_POSIX,DXT_MPIIO"
    out = Preload({"status": "enabled", "lib": lib, "dxt": conf.dxt, "env": env}, env)
    out.launcher_options, out.prefix = policy.preload_options(lib_word)
    return out


def lost_logs(stderr: str | None) -> int:
    """How many processes of the job could not write their Darshan log (see LOST_LOG)."""
    return len(LOST_LOG.findall(stderr or ""))


def observe(info: dict, stage: Path, own_files: list[str], case, observed: dict,
            stderr: str | None = None) -> dict:
    """Summary, findings and observed aggregators from the case's log; its Lustre records are a
    second witness of the layout, next to lfs getstripe.

    A job that forks its workers (fio) leaves one log of several processes. One lost log is the
    parent's (fio's set-up: its job file, its output); more mean workers whose I/O is missing, so
    the log is `incomplete` and none of its figures are recorded."""
    from .. import darshan
    from ..mpiio.layer import MpiioLayer

    info = dict(info)
    if info["status"] != "enabled":
        return info
    log = stage / LOG
    if not log.is_file():
        return {**info, "status": "no log",
                "reason": f"the job wrote no {LOG} (was libdarshan.so preloaded?)"}
    try:
        summary = darshan.summarize(log, own_files=[str(stage / n) for n in own_files])
    except IolabError as exc:          # PyDarshan itself is missing
        return {**info, "status": "unreadable", "reason": str(exc)}
    if summary["status"] != "ok":
        return {**info, "status": "unreadable", "reason": summary.get("reason")}
    lost = lost_logs(stderr)
    if lost > 1:
        return {**info, "status": "incomplete", "lost_logs": lost,
                "reason": f"{lost} processes of the job wrote no Darshan log (the benchmark forks "
                          f"its workers, each with its own Darshan, and only the first to finish "
                          f"can write {LOG}): it holds one process's I/O"}
    cb_nodes, effective = MpiioLayer().aggregators(observed)
    requested = {"collective": case.get("collective"), "cb_nodes": cb_nodes, "api": case.get("api")}
    out = {**info, "status": "ok", "summary": summary, "findings": darshan.findings(summary, requested),
           "aggregators": darshan.observed_aggregators(summary, cb_nodes, effective)}
    if lost:
        out["lost_logs"] = lost         # the forking parent's
    req = lustre.requested(case.params)
    layouts = darshan.lustre_layouts(summary)
    if req and layouts:
        osts = observed.get(lustre.FILE_SYSTEM.observed_key, {}).get("ost_count")
        out["lustre_witness"] = lustre.compare_layout(req, layouts, osts)
    return out

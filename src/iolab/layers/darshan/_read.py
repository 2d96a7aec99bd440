"""Child process: read Darshan logs with PyDarshan and write plain JSON (see reader.py).

Runs alone and imports nothing from iolab, so a crash in the C reader takes down only this
process: `python _read.py LOG OUT` reads one log; `python _read.py --serve` reads one request per
line on stdin ({"log", "out", "cwd"}), answers {"code"} on stdout, and so imports PyDarshan once
for many logs. Each request runs in its own working directory with the C library's stderr
(file descriptor 2) sent to cwd/stderr.txt, which the parent reads. Counters are written
sparsely (zeros left out) and DXT segments as length histograms, which keeps the JSON small for
logs with millions of records or segments.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

GENERIC = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")
DXT = ("DXT_POSIX", "DXT_MPIIO")


def _plain(value):
    """numpy scalars -> int/float (json cannot write them)."""
    return value.item() if hasattr(value, "item") else value


def _counters(values: dict) -> dict:
    return {k: _plain(v) for k, v in values.items() if v}


def _dxt(rec: dict) -> dict:
    out = {"id": int(rec["id"]), "rank": int(rec["rank"]), "hostname": rec["hostname"],
           "write_count": int(rec["write_count"]), "read_count": int(rec["read_count"])}
    for op in ("write", "read"):
        lengths = Counter(int(seg["length"]) for seg in rec[f"{op}_segments"])
        out[f"{op}_lengths"] = sorted(lengths.items())
    return out


def _lustre(rec: dict) -> dict:
    comps = [{"counters": {k: _plain(v) for k, v in c["counters"].items()},
              "pool": c.get("pool_name") or "", "osts": [int(o) for o in c["ost_ids"]]}
             for c in rec["components"]]
    return {"id": int(rec["id"]), "rank": int(rec["rank"]), "components": comps}


def read(path: str) -> dict:
    import darshan
    from darshan.backend import cffi_backend

    with darshan.DarshanReport(path, read_all=False) as report:
        job = report.metadata["job"]
        raw = {
            "reader": {"pydarshan": darshan.__version__, "darshan_util": cffi_backend.get_lib_version()},
            "job": {"nprocs": int(job["nprocs"]), "jobid": int(job["jobid"]),
                    "run_time": float(job["run_time"]), "log_ver": job["log_ver"],
                    "start_time": int(job["start_time_sec"]), "end_time": int(job["end_time_sec"]),
                    "metadata": dict(job.get("metadata") or {}), "exe": report.metadata.get("exe")},
            "modules": {}, "names": {}, "mounts": [list(m) for m in report.mounts],
            "records": {}, "dxt": {}, "lustre": [],
        }
        for mod, info in report.modules.items():
            if mod in GENERIC:
                report.mod_read_all_records(mod, dtype="dict", warnings=False)
                raw["records"][mod] = [
                    {"id": int(r["id"]), "rank": int(r["rank"]), "counters": _counters(r["counters"]),
                     "fcounters": _counters(r["fcounters"])} for r in report.records[mod]]
            elif mod in DXT:
                report.mod_read_all_dxt_records(mod, dtype="dict", warnings=False)
                raw["dxt"][mod] = [_dxt(r) for r in report.records[mod]]
            elif mod == "LUSTRE":
                report.mod_read_all_lustre_records(dtype="dict", warnings=False)
                raw["lustre"] = [_lustre(r) for r in report.records[mod]]
            elif mod == "HEATMAP":
                report.read_all_heatmap_records()  # not summarised: read so that damage shows
            raw["modules"][mod] = {"version": int(info["ver"]), "partial": bool(info["partial_flag"]),
                                   "records": int(info.get("num_records", 0) or 0),
                                   "read": mod in GENERIC + DXT + ("LUSTRE", "HEATMAP")}
        raw["names"] = {str(k): v for k, v in report.name_records.items()}
    return raw


def serve() -> int:
    import os

    saved = os.dup(2)
    for line in sys.stdin:
        request = json.loads(line)
        os.chdir(request["cwd"])
        err = os.open("stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(err, 2)
        try:
            code = main([sys.argv[0], request["log"], request["out"]])
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(err)
        sys.stdout.write(json.dumps({"code": code}) + "\n")
        sys.stdout.flush()
    return 0


def main(argv: list[str]) -> int:
    if argv[1:] == ["--serve"]:
        return serve()
    log, out = argv[1], argv[2]
    try:
        raw = read(log)
    except ImportError as exc:
        result, code = {"error": f"PyDarshan is not importable: {exc}", "kind": "no-reader"}, 3
    except (RuntimeError, ValueError, OSError, KeyError, IndexError) as exc:
        # What PyDarshan raises on logs it cannot open or decode (RuntimeError "Failed to open
        # file.", KeyError for a module table from another format version, ...).
        result, code = {"error": f"{type(exc).__name__}: {exc}", "kind": "unreadable"}, 4
    else:
        result, code = {"raw": raw}, 0
    with open(out, "w") as fh:
        json.dump(result, fh)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))

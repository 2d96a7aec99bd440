"""fio --output-format=json."""

from __future__ import annotations

import json

from ..errors import ParseError
from . import Metric, Parsed, number

SOURCE = "fio-json"
MIB = 1024 * 1024


def parse(text: str, source: str = SOURCE) -> Parsed:
    start = text.find("{")
    if start < 0:
        raise ParseError(f"{source}: no fio JSON output")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise ParseError(f"{source}: fio output is not valid JSON, truncated or corrupt "
                         f"({exc.msg} at line {exc.lineno})") from None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not jobs:
        raise ParseError(f"{source}: fio output has no jobs")
    failed = [j.get("jobname") for j in jobs if j.get("error")]
    if failed:
        raise ParseError(f"{source}: fio job(s) failed: {', '.join(map(str, failed))}")
    metrics: list[Metric] = []
    for direction in ("write", "read"):
        stats = [j.get(direction) for j in jobs]
        if any(not isinstance(s, dict) for s in stats):
            raise ParseError(f"{source}: fio job lacks '{direction}' statistics")
        io_bytes = sum(number(s.get("io_bytes"), f"{direction} io_bytes", source) for s in stats)
        if io_bytes == 0:
            continue
        bw = sum(number(s.get("bw_bytes"), f"{direction} bw_bytes", source) for s in stats) / MIB
        iops = sum(number(s.get("iops"), f"{direction} iops", source) for s in stats)
        if bw <= 0:
            raise ParseError(f"{source}: {direction} bandwidth is 0 although {io_bytes:.0f} bytes moved")
        lat = [s.get("clat_ns", {}).get("mean") for s in stats]
        metrics += [Metric(f"{direction}_bw", bw, "MiB/s", SOURCE),
                    Metric(f"{direction}_iops", iops, "ops/s", SOURCE),
                    Metric(f"{direction}_bytes", io_bytes, "B", SOURCE)]
        if all(isinstance(v, (int, float)) for v in lat):
            metrics.append(Metric(f"{direction}_clat_mean", sum(lat) / len(lat) / 1000, "us", SOURCE))
    if not metrics:
        raise ParseError(f"{source}: fio moved no data in either direction")
    version = doc.get("fio version")
    return Parsed(metrics, version=version.removeprefix("fio-") if version else None,
                  details={"jobs": len(jobs)}, echo=_echo(doc, jobs))


def _echo(doc: dict, jobs: list) -> dict:
    """fio's options as it read them (global then job section), typed, and the bytes it moved.
    fio lists only the options its job file gives: one it does not give ran at fio's default
    (fio's HOWTO: numjobs 1, iodepth 1, direct 0, end_fsync 0)."""
    from ..units import parse_duration, parse_size

    options = {"numjobs": "1", "iodepth": "1", "direct": "0", "end_fsync": "0", "runtime": "0",
               "time_based": "0",
               **(doc.get("global options") or {}), **(jobs[0].get("job options") or {})}
    out: dict = {}
    for key in ("rw", "ioengine"):
        if key in options:
            out[key] = options[key]
    for key in ("bs", "size"):
        try:
            out[key] = parse_size(options[key])
        except (KeyError, ValueError):
            pass
    for key in ("numjobs", "iodepth"):
        if str(options.get(key, "")).isdigit():
            out[key] = int(options[key])
    for key in ("direct", "end_fsync", "time_based"):
        if key in options:
            out[key] = str(options[key]) not in ("0", "false")
    try:      # fio reads a bare number as seconds
        text = str(options["runtime"]).strip()
        out["runtime"] = parse_duration(int(text) if text.isdigit() else text)
    except ValueError:
        pass
    runs = [j.get("job_runtime") for j in jobs]
    if out.get("runtime") and all(isinstance(r, (int, float)) for r in runs):
        # fio stops a time-based job once runtime has passed: each ran at least that long
        # (1% slack for the timer's granularity)
        out["ran_runtime"] = min(runs) >= 0.99 * 1000 * out["runtime"]
    out["io_bytes"] = int(sum(j.get(d, {}).get("io_bytes", 0) for j in jobs for d in ("read", "write")))
    return out

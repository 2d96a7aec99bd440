#!/usr/bin/env python3
"""File real benchmark runs as recordings for the test stand-ins (tests/bin).

    python tests/tools/record_replays.py [--replace] [--out tests/data/replay] RESULTS...

RESULTS are results directories (or any directory above them) of runs made with the REAL
binaries: every records.jsonl below them is read. For each IOR, mdtest, BTIO and h5bench case whose
benchmark exited 0, the replay key is computed from what the case stored (the command line, the
exported environment, the hints files, the BTIO deck, the h5bench config; tests/tools/replays.py,
the same functions the stand-ins use) and the outputs the benchmark printed and wrote (stdout,
stderr, IOR's JSON summary, mdtest's per-rank CSV, h5bench's CSV) are copied unchanged to
<out>/<benchmark>/<key id>/, with <out>/index.json mapping key ids to the key, the files and
where they came from.

A key already recorded is kept (the first run found, preferring runs without Darshan) unless
--replace is given. Not filed, with the reason: runs made with a stand-in (they are replays),
cases that did not run or failed, keys that name the recording's own directories (they could
never match another run), and outputs that name this checkout's path.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replays  # noqa: E402

BENCHMARKS = ("ior", "mdtest", "btio", "h5bench")


def _reader(stage: Path):
    def read(name: str) -> str | None:
        path = stage / name
        return path.read_text() if path.is_file() else None
    return read


def _argv(command: str, binary: str) -> list[str]:
    """The benchmark's own arguments: what follows its name on the stored command line."""
    words = shlex.split(command)
    for i, word in enumerate(words):
        if Path(word).name == binary:
            return words[i + 1:]
    raise ValueError(f"{binary!r} is not on the command line {command!r}")


def candidate(rec: dict, run: Path) -> tuple[dict, Path, dict] | str:
    """(key, stage, files by role) for a record, or why it cannot be a recording."""
    prov = rec.get("provenance") or {}
    raw = (rec.get("raw") or {}).get("dir")
    binary = (prov.get("binary") or {}).get("name")
    if not (raw and prov.get("command") and binary):
        return "the benchmark did not run"
    stage = run / raw
    read = _reader(stage)
    code = (read("iolab-exit-code.txt") or "").strip()
    if code != "0":
        return f"the benchmark exited {code or 'without an exit code'}"
    out, err = read("rfm_job.out"), read("rfm_job.err")
    if out is None or err is None:
        return "stdout or stderr was not stored"
    if any(line.startswith(replays.MARK) for line in f"{out}\n{err}".splitlines()):
        return "it is a stand-in's replay, not a real run"
    argv = _argv(prov["command"], binary)
    env = prov.get("env") or {}
    params = rec["params"]
    nodes = params["scale.nodes"]
    ranks = nodes * params["scale.tasks_per_node"]
    files = {"stdout": "rfm_job.out", "stderr": "rfm_job.err"}
    if rec["benchmark"] == "ior":
        key = replays.ior_key(argv, env, ranks, read, nodes)
        summary = [a.split("=", 1)[1] for a in argv if a.startswith("summaryFile=")]
        files["summary"] = summary[-1]
    elif rec["benchmark"] == "mdtest":
        key = replays.mdtest_key(argv, env, ranks, read)
        csv = [a.split("=", 1)[1] for a in argv if a.startswith("--saveRankPerformanceDetails=")]
        files["csv"] = csv[-1]
    elif rec["benchmark"] == "btio":
        key = replays.btio_key(argv, env, ranks, read, nodes)
    else:
        kernel = binary.removeprefix("h5bench_")
        if kernel not in ("write", "read"):
            return f"no stand-in replays h5bench_{kernel}"
        key = replays.h5bench_key(kernel, argv, env, ranks, read, nodes)
        csv = [line.split("=", 1)[1] for line in read(argv[0]).splitlines()
               if line.startswith("CSV_FILE=")]
        if csv and (stage / csv[-1]).is_file():
            files["csv"] = csv[-1]
    missing = [name for name in files.values() if not (stage / name).is_file()]
    if missing:
        return f"{', '.join(missing)} was not stored"
    return key, stage, files


def collect(roots: list[Path]) -> tuple[dict, list[str]]:
    """Key id -> (key, stage, files, record), the first per key; and what was not filed."""
    found, skipped = {}, []
    for root in roots:
        root = root.resolve()
        for records in sorted(root.rglob("records.jsonl")):
            for line in records.read_text().splitlines():
                rec = json.loads(line)
                if rec.get("benchmark") not in BENCHMARKS:
                    continue
                where = f"{records.parent}: {rec['experiment']} {rec['case_id']} rep{rec['repetition']}"
                got = candidate(rec, records.parent)
                if isinstance(got, str):
                    skipped.append(f"{where}: {got}")
                    continue
                key, stage, files = got
                text = json.dumps(key)
                if str(root) in text:
                    skipped.append(f"{where}: its key names the recording's own directory {root}")
                    continue
                if any(str(replays.ROOT) in (stage / n).read_text(errors="replace") for n in files.values()):
                    skipped.append(f"{where}: its outputs name this checkout's path {replays.ROOT}")
                    continue
                darshan = "LD_PRELOAD=" in rec["provenance"]["command"]
                kid = replays.key_id(key)
                if kid not in found or (found[kid][4] and not darshan):
                    found[kid] = (key, stage, files, rec, darshan)
    return found, skipped


def file_recordings(found: dict, out: Path, replace: bool) -> dict[str, int]:
    index = replays.load_index(out)
    counts = {"added": 0, "replaced": 0, "kept": 0}
    for kid, (key, stage, files, rec, _darshan) in sorted(found.items()):
        bench = key["benchmark"]
        if kid in index.get(bench, {}) and not replace:
            counts["kept"] += 1
            continue
        counts["replaced" if kid in index.get(bench, {}) else "added"] += 1
        target = out / bench / kid
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in files.values():
            shutil.copyfile(stage / name, target / name)
        binary = rec["provenance"].get("binary") or {}
        index.setdefault(bench, {})[kid] = {
            "key": key, "files": files, "exit_code": 0,
            "recorded_from": {"experiment": rec["experiment"], "profile": rec.get("profile"),
                              "case_id": rec["case_id"], "repetition": rec["repetition"],
                              "system": rec["provenance"].get("system"),
                              "binary": {k: binary.get(k) for k in ("name", "path", "version", "sha256")}}}
    out.mkdir(parents=True, exist_ok=True)
    (out / replays.INDEX).write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path, help="results directories of real runs")
    ap.add_argument("--out", type=Path, default=replays.REPLAY, help="default: %(default)s")
    ap.add_argument("--replace", action="store_true", help="re-record keys already recorded")
    ap.add_argument("-v", "--verbose", action="store_true", help="list what was not filed, and why")
    args = ap.parse_args(argv)
    found, skipped = collect(args.results)
    counts = file_recordings(found, args.out, args.replace)
    print(f"{len(found)} keys found: {counts['added']} added, {counts['replaced']} replaced, "
          f"{counts['kept']} already recorded; {len(skipped)} cases not filed" +
          ("" if args.verbose or not skipped else " (-v lists them)"))
    if args.verbose:
        for line in skipped:
            print(f"  not filed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

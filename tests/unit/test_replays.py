"""The test stand-ins (tests/bin) replay only real recordings with exactly their key
(tests/data/replay, filed by tests/tools/record_replays.py), and a replay is never a measurement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.parsers import echo
from iolab.rfm import failure
from iolab.benchmarks import get as get_benchmark
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand
from iolab.parsers import ior_json
from iolab.results.record import Observed
from tests.tools import record_replays, replays

BIN = Path(__file__).resolve().parents[1] / "bin"
INDEX = replays.load_index()
ENTRIES = [(bench, kid, entry) for bench in sorted(INDEX) for kid, entry in sorted(INDEX[bench].items())]


def describe_flags(observed: dict) -> list[str]:
    return Observed.from_json(observed).flags()


NODE_VARS = ("SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES")


def _standin(program: str, args: list[str], cwd: Path, ranks: int, rank: int = 0, env: dict | None = None,
             nodes: int = 1) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in (*replays.ENV, replays.HINTS_ENV, *NODE_VARS)}
    full.update(env or {}, OMPI_COMM_WORLD_SIZE=str(ranks), OMPI_COMM_WORLD_RANK=str(rank))
    if nodes != 1:
        full["SLURM_NNODES"] = str(nodes)        # as srun sets it in each rank
    full.pop("IOR_STANDIN_LOG", None)
    full.pop("MDTEST_STANDIN_LOG", None)
    return subprocess.run([sys.executable, str(BIN / program), *args], cwd=cwd, env=full,
                          capture_output=True, timeout=60)


def _invocation(key: dict, tmp_path: Path) -> tuple[str, list[str], dict, dict[str, Path]]:
    """Rebuild, from a recorded key, a call of the stand-in that has exactly that key: its
    program, arguments, environment and the files it writes (role -> path)."""
    case = tmp_path / "case"
    case.mkdir()
    env = {k: v for k, v in key["env"].items() if k != replays.HINTS_ENV}
    if replays.HINTS_ENV in key["env"]:
        (tmp_path / "romio-hints.txt").write_text("\n".join(key["env"][replays.HINTS_ENV]) + "\n")
        env[replays.HINTS_ENV] = "romio-hints.txt"
    if key["benchmark"] == "ior":
        args = []
        for arg in key["args"]:
            name = arg.partition("=")[0]
            if arg == replays.PATH:
                arg = str(case / "testfile")
            elif arg == f"summaryFile={replays.PATH}":
                arg = "summaryFile=summary.json"
            elif arg.endswith(f".hintsFileName={replays.PATH}"):
                (tmp_path / "ior-hints.txt").write_text("\n".join(key["hints_files"][name]) + "\n")
                arg = f"{name}=ior-hints.txt"
            args.append(arg)
        return "ior", args, env, {"summary": tmp_path / "summary.json"}
    if key["benchmark"] == "mdtest":
        args = [str(case) if arg == replays.PATH else arg for arg in key["args"]]
        args = ["--saveRankPerformanceDetails=ranks.csv"
                if a == f"--saveRankPerformanceDetails={replays.PATH}" else a for a in args]
        return "mdtest", args, env, {"csv": tmp_path / "ranks.csv"}
    if key["benchmark"] == "btio":
        if key["mode"] == "r":
            (case / ("btio.mpi" if key["method"] < 2 else "btio.nc")).write_bytes(b"\0")
        (tmp_path / "inputbt.data").write_text(
            f"{key['mode']}\n{key['method']}\n{key['steps']}\n{' '.join(map(str, key['grid']))}\n{case}\n")
        return "btio", ["inputbt.data"], env, {}
    lines = ["# a comment line is not part of the key",
             *(line.replace(replays.PATH, "out.csv") for line in key["config"])]
    (tmp_path / "h5bench.cfg").write_text("\n".join(lines) + "\n")
    (case / "h5bench.h5").write_bytes(b"\0")
    args = ["h5bench.cfg", str(case / "h5bench.h5")]
    return f"h5bench_{key['kernel']}", args, env, {"csv": tmp_path / "out.csv"}


def test_the_index_names_real_recordings_by_their_keys():
    assert {bench for bench, _kid, _entry in ENTRIES} == {"ior", "mdtest", "btio", "h5bench"}
    for bench, kid, entry in ENTRIES:
        assert entry["key"]["benchmark"] == bench and replays.key_id(entry["key"]) == kid
        where = replays.REPLAY / bench / kid
        assert sorted(p.name for p in where.iterdir()) == sorted(entry["files"].values())
        assert entry["recorded_from"]["binary"]["path"] and entry["exit_code"] == 0
        for name in entry["files"].values():
            assert replays.MARK not in (where / name).read_text(), "a replay is not a recording"
    dirs = {(p.parent.name, p.name) for p in replays.REPLAY.glob("*/*") if p.is_dir()}
    assert dirs == {(bench, kid) for bench, kid, _entry in ENTRIES}


@pytest.mark.parametrize("bench", ["ior", "mdtest", "btio", "h5bench"])
def test_a_standin_replays_its_recording_byte_for_byte(bench, tmp_path):
    kid, entry = next((k, e) for b, k, e in ENTRIES if b == bench)
    program, args, env, outputs = _invocation(entry["key"], tmp_path)
    nodes = entry["key"].get("nodes", 1)
    done = _standin(program, args, tmp_path, entry["key"]["ranks"], env=env, nodes=nodes)
    where = replays.REPLAY / bench / kid
    files = entry["files"]
    assert done.returncode == entry["exit_code"], done.stderr.decode()
    assert done.stdout == (where / files["stdout"]).read_bytes()
    named = f"{replays.MARK} replaying tests/data/replay/{bench}/{kid}\n".encode()
    assert done.stderr == named + (where / files["stderr"]).read_bytes()
    for role, path in outputs.items():
        assert path.read_bytes() == (where / files[role]).read_bytes()
    # the other ranks print nothing
    other = _standin(program, args, tmp_path, entry["key"]["ranks"], rank=1, env=env, nodes=nodes)
    assert (other.returncode, other.stdout, other.stderr) == (entry["exit_code"], b"", b"")


@pytest.mark.parametrize("bench", ["ior", "mdtest", "btio", "h5bench"])
def test_a_standin_without_a_recording_fails_naming_the_key(bench, tmp_path):
    """The same call with one rank more than recorded: no recording has that key."""
    entry = next(e for b, _k, e in ENTRIES if b == bench)
    program, args, env, outputs = _invocation(entry["key"], tmp_path)
    key = {**entry["key"], "ranks": entry["key"]["ranks"] + 1}
    done = _standin(program, args, tmp_path, key["ranks"], env=env, nodes=key.get("nodes", 1))
    message = done.stderr.decode()
    assert done.returncode == 1 and done.stdout == b""
    assert f"no recording for replay key {replays.key_id(key)} {json.dumps(key, sort_keys=True)}" in message
    assert "tests/tools/record_replays.py" in message and replays.MARK not in message
    assert not any(path.exists() for path in outputs.values())


@pytest.mark.parametrize("bench", ["ior", "btio"])
def test_a_recording_on_several_nodes_is_replayed_only_on_as_many(bench, tmp_path):
    """ROMIO's aggregators follow the node count: a run recorded on N nodes is replayed by a
    stand-in started on N nodes (srun's SLURM_NNODES), never by the same call on one."""
    kid, entry = next((k, e) for b, k, e in ENTRIES if b == bench and e["key"].get("nodes", 1) > 1)
    nodes = entry["key"]["nodes"]
    program, args, env, _outputs = _invocation(entry["key"], tmp_path)
    there = _standin(program, args, tmp_path, entry["key"]["ranks"], env=env, nodes=nodes)
    assert there.returncode == 0 and f"/{bench}/{kid}\n".encode() in there.stderr
    one = _standin(program, args, tmp_path, entry["key"]["ranks"], env=env)
    assert kid.encode() not in one.stderr
    assert replays.key_id({k: v for k, v in entry["key"].items() if k != "nodes"}) != kid


def test_the_recorder_files_a_run_under_the_key_the_standin_computes(tmp_path):
    """A results run rebuilt from a recording (its command line, environment, hints files and
    outputs, as iolab stores them) is filed under the same key id, with the same bytes; the
    same run made by a stand-in is refused."""
    kid, entry = next((k, e) for b, k, e in ENTRIES if b == "ior" and e["key"]["hints_files"])
    program, args, env, _outputs = _invocation(entry["key"], tmp_path)
    run = tmp_path / "results" / "exp" / "run1"
    stage = run / "cases" / "c1" / "rep1"
    stage.mkdir(parents=True)
    for name in ("romio-hints.txt", "ior-hints.txt"):
        if (tmp_path / name).exists():
            (stage / name).write_bytes((tmp_path / name).read_bytes())
    args = [a.replace("summaryFile=summary.json", "summaryFile=ior-summary.json") for a in args]
    for name in entry["files"].values():
        (stage / name).write_bytes((replays.REPLAY / "ior" / kid / name).read_bytes())
    (stage / "iolab-exit-code.txt").write_text("0\n")
    ranks, nodes = entry["key"]["ranks"], entry["key"].get("nodes", 1)
    rec = {"experiment": "exp", "case_id": "c1", "repetition": 1, "benchmark": "ior", "profile": None,
           "params": {"scale.nodes": nodes, "scale.tasks_per_node": ranks // nodes},
           "raw": {"dir": "cases/c1/rep1"},
           "provenance": {"command": " ".join(["mpirun", "-np", str(ranks), "/opt/x/bin/ior", *args]),
                          "env": {"OMPI_ALLOW_RUN_AS_ROOT": "1", **env}, "system": "local:default",
                          "binary": {"name": "ior", "path": "/opt/x/bin/ior"}}}
    (run / "records.jsonl").write_text(json.dumps(rec) + "\n")
    out = tmp_path / "replay"
    assert record_replays.main([str(tmp_path / "results"), "--out", str(out)]) == 0
    filed = replays.load_index(out)
    assert list(filed["ior"]) == [kid] and filed["ior"][kid]["key"] == entry["key"]
    for name in entry["files"].values():
        assert (out / "ior" / kid / name).read_bytes() == (replays.REPLAY / "ior" / kid / name).read_bytes()

    (stage / "rfm_job.err").write_text(f"{replays.MARK} replaying tests/data/replay/ior/{kid}\n")
    found, skipped = record_replays.collect([tmp_path / "results"])
    assert found == {} and skipped and skipped[0].endswith("it is a stand-in's replay, not a real run")


def test_the_replay_line_is_read_back_and_flagged():
    assert echo.replayed("", "x\nIOLAB-STANDIN: replaying tests/data/replay/ior/abc\n") == \
        "tests/data/replay/ior/abc"
    assert echo.replayed("Writing output to ior-summary.json\n", "") is None
    assert echo.replayed(None, " IOLAB-STANDIN: not at the start of its line") is None
    flags = describe_flags({"replayed": "tests/data/replay/ior/abc", "lustre": {"fs_type": "ext4"}})
    assert flags == ["replayed by a test stand-in: not a measurement (tests/data/replay/ior/abc)"]
    assert describe_flags({"lustre": {"fs_type": "ext4"}}) == []


HINTS_MUST_HOLD = """\
id: hints-must-hold
description: aggregator requests that must be honoured, or the case fails
benchmark: ior
scale: {nodes: 1, tasks_per_node: TASKS}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 4MiB, read: false}
matrix:
  mpiio.cb_nodes: [1, 4]
verify: {hints: fail}
"""


def test_a_replayed_output_whose_echo_differs_fails_with_both_values(write_experiment):
    """A real IOR summary recorded for 4 tasks, given to the same case at 2 tasks."""
    kid, entry = next((k, e) for b, k, e in ENTRIES if b == "ior" and e["key"]["ranks"] == 4
                      and e["recorded_from"]["experiment"] == "hints-must-hold")
    parsed = ior_json.parse((replays.REPLAY / "ior" / kid / entry["files"]["summary"]).read_text())
    adapter = get_benchmark("ior")
    for tasks, expected in ((4, None), (2, "echo: numTasks 4, requested 2; tasksPerNode 4, requested 2")):
        path = write_experiment("hints-must-hold", HINTS_MUST_HOLD.replace("TASKS", str(tasks)))
        case = next(c for c in expand(load_experiment(path)) if c.params["mpiio.cb_nodes"] == 4)
        spec = adapter.run_spec(case, "/scratch/x", hints={"cb_nodes": "4"}, show_hints=True)
        assert adapter.check_echo(parsed, case, spec) == expected


def test_a_missing_recording_is_the_reason_of_the_failed_case(tmp_path):
    entry = next(e for b, _k, e in ENTRIES if b == "ior")
    program, args, env, _outputs = _invocation({**entry["key"], "args": entry["key"]["args"] + ["-k"]},
                                               tmp_path)
    done = _standin(program, args, tmp_path, entry["key"]["ranks"], env=env)
    banner = "-" * 74 + "\nPrimary job  terminated normally, but 1 process returned\n" + "-" * 74 + "\n"
    reason = failure.explain("ior", "1", [], done.stdout.decode(), done.stderr.decode() + banner)
    assert reason.startswith("ior exited with status 1: ior stand-in: no recording for replay key ")

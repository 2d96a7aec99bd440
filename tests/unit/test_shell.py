"""Values become shell words in one place; every job-script line iolab writes is run by bash here
with hostile values, and nothing but the intended command runs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from iolab.layers.storage import layer as storage
from iolab.layers.storage import lustre
from iolab import shell
from iolab.errors import IolabError
from iolab.render import render_template


def hostile(marker_dir: Path) -> list[str]:
    m = marker_dir
    return [f"; touch {m}/a ;", f"$(touch {m}/b)", f"`touch {m}/c`", f"' ; touch {m}/d ; '",
            f'" ; touch {m}/e ; "', f"&& touch {m}/f", f"| touch {m}/g", f"$(touch${{IFS}}{m}/h)",
            f"> {m}/i", "*", "~", "$((1+1))", "\\", "-n", "!!", "{a,b}"]


def bash(script: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True, timeout=30,
                          env={**os.environ, **(env or {})})


def test_words_reach_the_program_literally(tmp_path):
    markers = tmp_path / "m"
    markers.mkdir()
    values = hostile(markers)
    out = bash("printf '%s\\0' " + shell.join(values), tmp_path)
    assert out.stdout.split("\0")[:-1] == values
    assert not list(markers.iterdir())


def test_paths_expand_variables_and_nothing_else(tmp_path):
    markers = tmp_path / "m"
    markers.mkdir()
    for value in hostile(markers):
        path = f"/scratch/$IOLAB_T/{value}/${{IOLAB_T}}x"
        out = bash(f"printf '%s' {shell.path_word(path)}", tmp_path, {"IOLAB_T": "job 1"})
        expanded = path.replace("$IOLAB_T", "job 1").replace("${IOLAB_T}", "job 1")
        assert out.stdout == expanded.replace("${IFS}", " \t\n")  # bash sets IFS itself
    assert not list(markers.iterdir())
    assert shell.has_variables("$DW_JOB_STRIPED/x") and not shell.has_variables("/a/$(b)")


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\x00b", "a\x1bb", "a\x7fb"])
def test_control_characters_never_become_shell(bad):
    for quote in (shell.word, shell.path_word):
        with pytest.raises(IolabError, match="control character"):
            quote(bad)


def test_lustre_and_job_lines_run_with_hostile_case_dirs(tmp_path):
    """The lines iolab puts around the benchmark, run by bash with hostile case directories and a
    stand-in `lfs` that logs its arguments: each path arrives as one argument, nothing else runs."""
    markers = tmp_path / "m"
    markers.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    lfs = bin_dir / "lfs"
    lfs.write_text('#!/bin/sh\nprintf "%s\\n" "$@" >> "$LFS_LOG"\n[ "$1" = df ] && echo "x"\nexit 0\n')
    lfs.chmod(0o755)
    # ${IFS} would expand (a variable, as in $DW_JOB_STRIPED): the case dir here is literal
    for i, value in enumerate(v for v in hostile(markers) if "${" not in v):
        case_dir = str(tmp_path / f"case{i}" / value)
        stage = tmp_path / f"stage{i}"
        stage.mkdir()
        os.makedirs(case_dir, exist_ok=True)
        (Path(case_dir) / "data").write_text("x")
        pre = storage.prerun_lines(case_dir, {"lustre.stripe_count": 4, "lustre.pool": "p1"})
        post = lustre.postrun_lines(case_dir)
        # the file system check ran for real; pretend it said Lustre so every lfs line runs too
        script = "\n".join([pre[0], f"echo lustre > {lustre.FSTYPE_FILE}", *pre[1:], *post])
        log = tmp_path / f"lfs{i}.log"
        out = bash(script, stage, {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LFS_LOG": str(log)})
        assert out.returncode == 0, out.stderr
        args = log.read_text().splitlines()
        assert args[:6] == ["setstripe", "-c", "4", "-p", "p1", case_dir]
        assert case_dir in args and f"{case_dir}/data" in args
        sections = (stage / lustre.GETSTRIPE_FILE).read_text()
        assert f"### {case_dir}\n" in sections and f"### {case_dir}/data\n" in sections
    assert not list(markers.iterdir())


def test_a_failed_setstripe_stops_the_job_with_its_reason(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "lfs").write_text("#!/bin/sh\necho 'lfs setstripe: invalid stripe count 99' >&2\nexit 22\n")
    (bin_dir / "lfs").chmod(0o755)
    pre = storage.prerun_lines(str(tmp_path), {"lustre.stripe_count": 99})
    script = "\n".join([f"echo lustre > {lustre.FSTYPE_FILE}", pre[1], "echo benchmark-ran > ran.txt"])
    out = bash(script, tmp_path, {"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert out.returncode == shell.JOB_ERROR_EXIT
    assert not (tmp_path / "ran.txt").exists()
    assert (tmp_path / shell.JOB_ERROR_FILE).read_text() == \
        "lfs setstripe failed: lfs setstripe: invalid stripe count 99\n"
    # an experiment that only warns about layouts runs on, and the mismatch is recorded
    warn = storage.prerun_lines(str(tmp_path), {"lustre.stripe_count": 99}, stop_on_failure=False)
    out = bash("\n".join([f"echo lustre > {lustre.FSTYPE_FILE}", warn[1], "echo ran > ran.txt"]),
               tmp_path, {"PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert out.returncode == 0 and (tmp_path / "ran.txt").exists()


def test_stop_job_quotes_its_reason(tmp_path):
    markers = tmp_path / "m"
    markers.mkdir()
    for value in hostile(markers):
        out = bash(shell.stop_job(f"cannot create {value}"), tmp_path)
        assert out.returncode == shell.JOB_ERROR_EXIT
        assert (tmp_path / shell.JOB_ERROR_FILE).read_text() == f"cannot create {value}: \n"
    assert not list(markers.iterdir())


class _Case:
    case_id = "c0ffee00"
    experiment = "x"


@pytest.mark.parametrize("template,context", [
    ("fio/job.fio.j2", {"case": _Case(), "directory": "VALUE",
                        "params": {"rw": "write", "bs": 4096, "size": 8192, "numjobs": 1, "direct": False,
                                   "ioengine": "psync", "iodepth": 1, "end_fsync": False,
                                   "runtime": 0, "time_based": False}}),
    ("mpiio/romio-hints.j2", {"hints": {"cb_config_list": "VALUE"}}),
    ("ior/hints.j2", {"hints": {"cb_config_list": "VALUE"}}),
    ("reframe/shim.py.j2", {"experiment_id": "x", "yaml_relpath": "VALUE", "sha256": "0" * 64,
                            "class_name": "x"}),
])
def test_input_files_refuse_newlines_and_keep_everything_else_literal(tmp_path, template, context):
    def with_value(value):
        def sub(v):
            if v == "VALUE":
                return value
            return {k: sub(x) for k, x in v.items()} if isinstance(v, dict) else v
        return {k: sub(v) for k, v in context.items()}

    for value in hostile(tmp_path):
        assert value.replace(":", "\\:") in render_template(template, **with_value(value)) or \
            repr(value)[1:-1] in render_template(template, **with_value(value))
    for value in ("a\nrw=randread", "x\r\n[evil]", "\x00"):
        with pytest.raises(IolabError, match="newline or control character"):
            render_template(template, **with_value(value))


def test_the_shim_is_python_whatever_the_path(tmp_path):
    for value in hostile(tmp_path) + ['a"b', "a'b", "a\\b"]:
        text = render_template("reframe/shim.py.j2", experiment_id="x", yaml_relpath=value,
                               sha256="0" * 64, class_name="x")
        namespace = {}
        code = text.replace("import reframe", "pass").replace(
            "from iolab.rfm.register import register_experiment",
            "register_experiment = lambda *a: namespace.setdefault('args', a)")
        exec(compile(code, "shim", "exec"), {"namespace": namespace, "__file__": "shim.py"})
        assert namespace["args"][2] == value


def test_templates_cannot_reach_python_internals(tmp_path, monkeypatch):
    (tmp_path / "evil.j2").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}")
    monkeypatch.setenv("IOLAB_TEMPLATES", str(tmp_path))
    with pytest.raises(IolabError, match="refused by the sandbox|template"):
        render_template("evil.j2")


def _shipped_cases():
    from iolab.experiment.load import load_experiment
    from iolab.experiment.matrix import expand

    root = Path(__file__).resolve().parents[2]
    for path in sorted((root / "experiments").glob("*.yaml")):
        exp = load_experiment(path, "local" if "local" in load_experiment(path).profiles else None)
        yield from expand(exp)


def test_every_shipped_case_keeps_a_hostile_directory_literal_in_its_input_files(tmp_path):
    """Every input file an adapter renders (fio job, h5bench config and ini, BTIO deck, hints)
    for every shipped case: a hostile directory is written as it is, or refused with a reason,
    and a newline never starts a line of the benchmark's choosing."""
    from iolab.benchmarks import get as get_benchmark

    seen = set()
    cases = list(_shipped_cases())
    for hostile_dir, case in [(str(tmp_path / d), c) for d in ("d; rm -rf x $(touch y) `z` 'q' \"w\"",
                                                            "d; rm -rf x `z` 'q' \"w\" & |")
                              for c in cases]:
        adapter = get_benchmark(case.benchmark)
        hints = {"cb_nodes": "1"} if adapter.through_mpi_io(case) else None
        source = hostile_dir if case.get("mode") == "read" or case.get("kernel") == "read" else None
        try:
            spec = adapter.run_spec(case, hostile_dir, hints=hints, input_dir=source)
        except IolabError as exc:       # BTIO reads its path literally: no $ at all
            assert "literally" in str(exc)
            continue
        for name, text in spec.files.items():
            seen.add(name)
            lines = [line for line in text.splitlines() if "rm -rf x" in line]
            assert all(hostile_dir.replace(":", "\\:") in line for line in lines), (name, lines)
        with pytest.raises(IolabError):     # refused by the adapter, or where argv is quoted
            spec = adapter.run_spec(case, hostile_dir + "\nrw=randread", hints=hints,
                                    input_dir=source and source + "\nrw=randread")
            shell.words(spec.args)
            shell.path_word(spec.workdir or "")
    assert {"fio-job.fio", "h5bench.cfg", "inputbt.data", "iolab-ior-hints.txt"} <= seen, seen

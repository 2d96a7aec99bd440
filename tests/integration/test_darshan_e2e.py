"""Darshan around every case: logs stored and summarised where the runtime exists, and an honest
"not available" where it does not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import darshan_stack, have, iolab, need_darshan, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

LIBDARSHAN, STACK_ENV = darshan_stack()


def no_darshan(rfm_env: dict, **more) -> None:
    """Darshan asked for, with no runtime to be found: no stack (fio from the system), and no
    PATH entry with a Darshan beside it (PREFIX/lib)."""
    rfm_env.update(IOLAB_DARSHAN="1", IOLAB_SPACK_ENV="", **more)
    rfm_env.pop("IOLAB_STACK_PREFIX", None)
    rfm_env["PATH"] = os.pathsep.join(
        d for d in rfm_env["PATH"].split(os.pathsep)
        if not (Path(d).parent / "lib" / "libdarshan.so").exists())
    if any(Path(d, "libdarshan.so").exists() for d in ("/usr/lib", "/usr/local/lib")):
        pytest.skip("a system-wide libdarshan.so exists here")


def test_without_a_darshan_runtime_cases_still_run(rfm_env, tmp_path):
    no_darshan(rfm_env)
    out = reframe(["-r", "-n", "quickstart%case=3cf5ac1a"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:]
    for rec in records(only_run(tmp_path / "results", "quickstart")):
        assert rec["status"] == "ok" and rec["metrics"]
        dar = rec["observed"]["darshan"]
        assert dar["status"] == "not available" and "darshan-runtime" in dar["reason"]
        assert "LD_PRELOAD" not in rec["provenance"]["command"]
        # asked for and not run: a flag on the row, never silence
        assert rec["flags"] == [f"Darshan requested but not run: {dar['reason']}"], rec["flags"]
    runs = iolab(["runs", "quickstart"], rfm_env)
    assert "; flagged: Darshan requested but not run: no darshan-runtime" in runs.stdout, runs.stdout
    table = iolab(["table", "quickstart"], rfm_env)
    assert "Darshan requested but not run" in table.stdout, table.stdout[-2000:]


def test_without_a_darshan_runtime_a_strict_run_fails_the_case(rfm_env, tmp_path):
    no_darshan(rfm_env, IOLAB_STRICT="1")
    out = reframe(["-r", "-n", "quickstart%case=3cf5ac1a"], rfm_env)
    assert out.returncode == 1, out.stdout[-3000:]
    (rec, *more) = records(only_run(tmp_path / "results", "quickstart"))
    assert rec["status"] == "failed" and not rec["metrics"]
    assert rec["error"].startswith("Darshan requested but not run: no darshan-runtime"), rec["error"]


@need_darshan()
def test_darshan_log_per_case_summarised_and_tabled(rfm_env, tmp_path):
    assert LIBDARSHAN is not None and LIBDARSHAN.exists(), "IOLAB_REQUIRE_STACK=1 but no libdarshan.so"
    rfm_env.update(IOLAB_DARSHAN="1", IOLAB_DARSHAN_DXT="1", **STACK_ENV)
    out = reframe(["-r", "-n", "quickstart"], rfm_env)
    assert out.returncode == 0, out.stdout[-3000:]
    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    for rec in recs:
        dar = rec["observed"]["darshan"]
        assert dar["status"] == "ok", dar.get("reason")
        assert dar["env"]["DARSHAN_LOGHINTS"] == "cb_nodes=1"
        stored = [n for n in rec["raw"]["files"] if n.startswith("darshan.log")]
        assert len(stored) == 1, "one readable log per case"
        summary = dar["summary"]
        if rec["benchmark"] == "ior":
            assert rec["provenance"]["command"].startswith(f"mpirun -np 2 -x LD_PRELOAD={LIBDARSHAN}")
            written = sum(m["bytes_written"] for m in summary["modules"].values())
            assert written >= rec["params"]["block_size"] * 2 * rec["params"]["iterations"]
        else:
            # not an MPI program: the preload prefixes fio itself, not a launcher
            assert rec["provenance"]["command"].startswith(f"LD_PRELOAD={LIBDARSHAN} fio ")
            assert dar["env"]["DARSHAN_ENABLE_NONMPI"] == "1"
    table = iolab(["table", "quickstart", "--darshan", "small_write_pct,posix_write_time"], rfm_env)
    assert table.returncode == 0 and "Darshan small_write_pct" in table.stdout
    view = iolab(["darshan", "quickstart", "--case", recs[0]["case_id"]], rfm_env)
    assert view.returncode == 0 and "Darshan 3." in view.stdout

"""README's set-up and first run, exactly as README gives them, on a fresh clone: the block under
"Set up, run, test" runs in bash and must end green with the table and the summary line."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from .conftest import REPO, have

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed"),
              pytest.mark.skipif(not (REPO / ".git").exists(), reason="not a git checkout")]


def readme_setup_block() -> str:
    """The first shell block of README's "Set up, run, test" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Set up, run, test", 1)[1]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def test_the_readme_block_is_the_set_up_and_the_first_run():
    block = readme_setup_block()
    assert "scripts/setup" in block and "scripts/run quickstart local" in block, block


BUNDLE = os.environ.get("IOLAB_SPACK_BUNDLE")


def test_readme_set_up_and_first_run_on_a_fresh_clone(tmp_path):
    """README's block as a newcomer runs it. With an offline Spack bundle (IOLAB_SPACK_BUNDLE, as
    in CI), setup is given it, as README says to without network: the quickstart then runs all
    12 jobs with the Spack-built IOR, and `iolab runs --stack` shows it and the lock."""
    clone = tmp_path / "iolab"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith(("IOLAB_", "RFM_"))}
    if os.environ.get("IOLAB_SPACK_HOME"):      # the built Spack the bundle's set-up reuses
        env["IOLAB_SPACK_HOME"] = os.environ["IOLAB_SPACK_HOME"]
    # the tests' stand-ins and the stack's view are not a newcomer's PATH; Spack's clone (no
    # network here) is skipped by setup with a word, and its default place must not be a real one
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if p and "tests/bin" not in p and ".venv" not in p
                                  and ".spack-env" not in p)
    env["SPACK_ROOT"] = str(tmp_path / "no-spack")
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    block = readme_setup_block()
    if BUNDLE:
        block = block.replace("scripts/setup ", f"scripts/setup --spack-bundle {BUNDLE} ", 1)
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=clone,
                         env=env, capture_output=True, text=True, timeout=1200)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-4000:]
    assert "### quickstart" in out.stdout, text[-4000:]
    assert re.search(r"^quickstart run \S+: \d+ of \d+ jobs ran", out.stdout, re.M), text[-4000:]
    assert "\x1b[" not in out.stdout        # plain output when it is not a terminal
    if BUNDLE:
        assert "offline Spack bundle" in out.stdout, text[-4000:]
        assert re.search(r"^quickstart run \S+: 12 of 12 jobs ran, none skipped$", out.stdout, re.M), \
            text[-4000:]
        assert re.search(r"stack: spack, spack\.lock sha256 [0-9a-f]{64}, view \S+", out.stdout), text[-4000:]
        assert re.search(r"ior ior: 4\.0\.0, \S+/\.spack-env/view/bin/ior \(spack\), sha256 [0-9a-f]{16}, "
                         r"Spack hash [a-z0-9]{32}", out.stdout), text[-4000:]

"""A real CephFS on this machine (scripts/ceph-local): layouts are real striping, refused when
invalid, and `down` leaves no daemon, mount or port behind.

The module brings up a CephFS of its own (2 OSDs, its own state dir and port range) beside any that
is already up (CI brings one up at the defaults in .ci/run), and takes it down in the last test.
Where it cannot come up here (not root, no FUSE, Ceph not installed, its ports busy, `up` failing)
the tests that need it skip with the reason; IOLAB_REQUIRE_CEPH=1 (CI, once a CephFS came up)
turns that into a failure.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO, have

SCRIPT = REPO / "scripts" / "ceph-local"
# This module's own CephFS: a range clear of the default one (7100-7300) and of Slurm's ports.
PORTS = (7400, 7460)
OSDS = 2
REQUIRED = os.environ.get("IOLAB_REQUIRE_CEPH") == "1"
SLURM_PORTS = {6817, 6818, 6819}                  # scripts/slurm-local's defaults
CLUSTER_PORTS = {6827, 6828, 6829}                # scripts/cluster-local's defaults
MiB = 1 << 20

pytestmark = pytest.mark.integration


def _run(args: list[str], env: dict, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env=env)


def _env(state: Path, ports: tuple[int, int] = PORTS) -> dict:
    return {**os.environ, "IOLAB_CEPH_STATE": str(state), "IOLAB_CEPH_PORTS": f"{ports[0]} {ports[1]}",
            "IOLAB_CEPH_OSDS": str(OSDS)}


def _listening() -> dict[int, set[int]]:
    """Listening TCP port -> pids, from ss."""
    out = subprocess.run(["ss", "-Htlnp"], capture_output=True, text=True, check=True).stdout
    ports: dict[int, set[int]] = {}
    for line in out.splitlines():
        fields = line.split()
        port = int(fields[3].rsplit(":", 1)[1])
        ports.setdefault(port, set()).update(int(p) for p in re.findall(r"pid=(\d+)", line))
    return ports


def _why_not(ports: tuple[int, int] = PORTS) -> str | None:
    if os.geteuid() != 0:
        return "scripts/ceph-local needs root (ceph-fuse mounts)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: this kernel or container has no FUSE"
    missing = [b for b in ("ceph-mon", "ceph-osd", "ceph-mds", "ceph-mgr", "ceph-fuse", "ceph", "rados",
                           "setfattr", "getfattr", "ss") if not have(b)]
    if missing:
        return f"not installed: {' '.join(missing)} (scripts/ceph-local up installs Ceph)"
    busy = sorted(p for p in _listening() if ports[0] <= p <= ports[1])
    if busy:
        return f"ports {busy} of this module's range {ports[0]}-{ports[1]} are in use"
    return None


def _unavailable(why: str):
    if REQUIRED:
        pytest.fail(f"IOLAB_REQUIRE_CEPH=1 but: {why}")
    pytest.skip(why)


class Ceph:
    """The module's CephFS: its environment, what `up` printed, its config and mount."""

    def __init__(self, state: Path, up: subprocess.CompletedProcess):
        self.state, self.env, self.up = state, _env(state), up
        self.conf = state / "ceph.conf"
        self.mount = state / "mnt"

    def pids(self) -> dict[str, int]:
        """Daemon (or ceph-fuse mount) -> pid, from the pid files `up` left."""
        return {p.stem: int(p.read_text().strip()) for p in (self.state / "run").glob("*.pid")}

    def ceph(self, *args: str, tool: str = "ceph") -> str:
        out = subprocess.run([tool, "-c", str(self.conf), *args], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout


@pytest.fixture(scope="module")
def ceph(tmp_path_factory):
    why = _why_not()
    if why:
        _unavailable(why)
    state = tmp_path_factory.mktemp("ceph") / "state"
    up = _run(["up", "--osds", str(OSDS)], _env(state))
    cluster = Ceph(state, up)
    try:
        if up.returncode != 0:
            _unavailable(f"scripts/ceph-local up failed: {(up.stderr.strip().splitlines() or ['?'])[-1]}")
        yield cluster
    finally:
        # The last test takes it down and checks; this is for a module that stopped early.
        _run(["down"], cluster.env)


def _layout(path: Path) -> dict[str, str]:
    out = subprocess.run(["getfattr", "--only-values", "-n", "ceph.file.layout", str(path)],
                         capture_output=True, text=True, check=True).stdout
    return dict(item.split("=", 1) for item in out.split())


def _write(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.write(os.urandom(size))
        f.flush()
        os.fsync(f.fileno())


def _objects(ceph: Ceph, path: Path) -> list[str]:
    """The file's objects in the data pool (named <inode hex>.<index>), as the server lists them."""
    prefix = f"{os.stat(path).st_ino:x}."
    names = ceph.ceph("-p", "cephfs_data", "ls", tool="rados").split()
    return sorted(n for n in names if n.startswith(prefix))


# --- without a CephFS: arguments the script refuses --------------------------------------------------

@pytest.mark.parametrize("args, env, message", [
    (["up", "--osds", "0"], {}, "--osds takes 1 to 16"),
    (["frob"], {}, "usage: ceph-local up|down|status"),
    (["up"], {"IOLAB_CEPH_PORTS": "7100 7120"},
     "IOLAB_CEPH_PORTS 7100-7120 is too small: 4 OSDs need 42 ports"),
    (["up"], {"IOLAB_CEPH_PORTS": "80 7300"}, "IOLAB_CEPH_PORTS takes two ports"),
])
def test_wrong_arguments_are_refused_in_one_line(tmp_path, args, env, message):
    out = _run(args, {**os.environ, "IOLAB_CEPH_STATE": str(tmp_path / "state"), **env})
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [out.stderr.strip()] and message in out.stderr, out.stderr
    assert not (tmp_path / "state").exists()


def _free_range(width: int = 60) -> tuple[int, int]:
    """A port range no one listens in, above this module's own (another CephFS may hold one)."""
    listening = _listening()
    for first in range(PORTS[1] + 40, 9000, 100):
        if not any(first <= p <= first + width for p in listening):
            return first, first + width
    return PORTS[1] + 40, PORTS[1] + 40 + width


def test_a_busy_port_in_the_range_is_refused_before_anything_starts(tmp_path):
    ports = _free_range()
    why = _why_not(ports)
    if why:
        _unavailable(why)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[0] + 30))
        sock.listen()
        out = _run(["up"], _env(tmp_path / "state", ports))
    assert out.returncode == 1
    assert out.stderr.strip() == ("ceph-local: ERROR: TCP ports in use in Ceph's range "
                                  f"{ports[0]}-{ports[1]}: {ports[0] + 30}; set IOLAB_CEPH_PORTS"), out.stderr
    assert not (tmp_path / "state").exists()


def test_default_ports_do_not_collide_with_slurm_or_the_cluster(tmp_path):
    """The default range (as the script reports it) holds none of slurm-local's or cluster-local's
    default ports, nor Ceph's own default 6800-7300 start."""
    out = _run(["status"], {**os.environ, "IOLAB_CEPH_STATE": str(tmp_path / "none")})
    assert out.returncode == 1 and "not up" in out.stdout
    text = SCRIPT.read_text()
    first, last = map(int, re.search(r'IOLAB_CEPH_PORTS:-(\d+) (\d+)', text).groups())
    assert not set(range(first, last + 1)) & (SLURM_PORTS | CLUSTER_PORTS)
    assert first > 6829


# --- with the module's CephFS ------------------------------------------------------------------------

def test_up_reports_what_it_started(ceph):
    """What it started, each daemon in its own session, and how long it took (a figure, not a
    test: docs/ceph.md has the times measured)."""
    out = ceph.up.stdout
    assert re.search(r"up in ([0-9.]+)s", out), out
    pids = ceph.pids()
    assert set(pids) == {"mon.a", "mgr.x", "mds.a", "fuse.host"} | {f"osd.{i}" for i in range(OSDS)}
    for name, pid in pids.items():
        binary = "ceph-fuse" if name.startswith("fuse.") else f"ceph-{name.split('.')[0]}"
        assert Path(f"/proc/{pid}/comm").read_text().strip() == binary
        # In its own session: a signal to the caller's process group does not reach it.
        assert os.getsid(pid) != os.getsid(0)
        label = "ceph-fuse" if name.startswith("fuse.") else name
        assert re.search(rf"^{re.escape(label)}\s+pid {pid}\s+(alive|mounted)", out, re.M), out
    assert f"mounted at {ceph.mount} (host)" in out
    assert f"ports        {PORTS[0]}-{PORTS[1]}" in out
    assert f"export IOLAB_CEPH_MOUNT={ceph.mount}" in out


def test_daemons_listen_only_in_the_configured_range(ceph):
    ours = set(ceph.pids().values())
    ports = {port for port, pids in _listening().items() if pids & ours}
    assert ports and all(PORTS[0] <= p <= PORTS[1] for p in ports), sorted(ports)
    assert not ports & (SLURM_PORTS | CLUSTER_PORTS)


def test_status_exits_0_while_up_and_up_again_says_so(ceph):
    before = ceph.pids()
    status = _run(["status"], ceph.env)
    assert status.returncode == 0, status.stdout + status.stderr
    assert re.search(r"^health\s+HEALTH_(OK|WARN)", status.stdout, re.M), status.stdout
    again = _run(["up", "--osds", str(OSDS)], ceph.env)
    assert again.returncode == 0 and again.stdout.startswith("ceph-local: already up"), again.stdout
    assert ceph.pids() == before                   # nothing restarted
    assert "up in" not in again.stdout


def test_a_directory_layout_is_inherited_and_stripes_a_new_file(ceph):
    """stripe_count=2 with a 1 MiB unit puts a 2 MiB file in two objects, where the default
    layout (one 4 MiB object per 4 MiB) puts it in one: the server's object list, not just the
    xattr, shows the striping."""
    striped, plain = ceph.mount / "striped", ceph.mount / "plain"
    striped.mkdir()
    plain.mkdir()
    for key, value in (("object_size", 4 * MiB), ("stripe_unit", MiB), ("stripe_count", 2)):
        subprocess.run(["setfattr", "-n", f"ceph.dir.layout.{key}", "-v", str(value), str(striped)],
                       check=True)
    _write(striped / "f", 2 * MiB)
    _write(plain / "f", 2 * MiB)
    assert _layout(striped / "f") == {"stripe_unit": str(MiB), "stripe_count": "2",
                                      "object_size": str(4 * MiB), "pool": "cephfs_data"}
    assert _layout(plain / "f")["stripe_count"] == "1"
    ino = os.stat(striped / "f").st_ino
    assert _objects(ceph, striped / "f") == [f"{ino:x}.00000000", f"{ino:x}.00000001"]
    assert len(_objects(ceph, plain / "f")) == 1
    # A file's layout is fixed once it has data.
    refused = subprocess.run(["setfattr", "-n", "ceph.file.layout.stripe_count", "-v", "4",
                              str(striped / "f")], capture_output=True, text=True)
    assert refused.returncode != 0 and _layout(striped / "f")["stripe_count"] == "2"


@pytest.mark.parametrize("key, value", [
    ("stripe_unit", "1000"),                  # not a multiple of 64 KiB
    ("stripe_unit", str(3 * MiB)),            # does not divide the 4 MiB object size
    ("stripe_count", "0"),
    ("pool", "no_such_pool"),
])
def test_an_invalid_layout_is_refused(ceph, key, value):
    d = ceph.mount / f"invalid-{key}-{value}"
    d.mkdir()
    out = subprocess.run(["setfattr", "-n", f"ceph.dir.layout.{key}", "-v", value, str(d)],
                         capture_output=True, text=True)
    assert out.returncode != 0
    assert out.stderr.strip() == f"setfattr: {d}: Invalid argument"
    (d / "f").touch()
    assert _layout(d / "f") == {"stripe_unit": str(4 * MiB), "stripe_count": "1",
                                "object_size": str(4 * MiB), "pool": "cephfs_data"}


def test_down_leaves_no_daemon_mount_port_or_state(ceph):
    """Last in the module: it takes the module's CephFS down."""
    pids = ceph.pids()
    out = _run(["down"], ceph.env)
    assert out.returncode == 0, out.stderr
    assert re.search(r"^ceph-local: down in [0-9.]+s$", out.stdout, re.M), out.stdout
    alive = [f"{name} {pid}" for name, pid in pids.items() if Path(f"/proc/{pid}").exists()]
    assert alive == []
    leftovers = [pid for pid in (int(p) for p in os.listdir("/proc") if p.isdigit())
                 if _cmdline(pid).find(f" -c {ceph.conf} ") >= 0]
    assert leftovers == []
    mounts = Path("/proc/self/mountinfo").read_text()
    assert f" {ceph.mount} " not in mounts
    assert [p for p in _listening() if PORTS[0] <= p <= PORTS[1]] == []
    assert not ceph.state.exists(), sorted(p.name for p in ceph.state.iterdir())
    status = _run(["status"], ceph.env)
    assert status.returncode != 0
    again = _run(["down"], ceph.env)
    assert again.returncode == 0


def _cmdline(pid: int) -> str:
    try:
        return " " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


# --- on the nodes of scripts/cluster-local ------------------------------------------------------------

CLUSTER_STATE = Path(os.environ.get("IOLAB_CLUSTER_STATE", "/tmp/iolab-cluster"))
NODE_PORTS = (7600, 7660)


def _cluster_nodes() -> int | None:
    """How many nodes a running scripts/cluster-local has (its state dir's nodes file), or None."""
    try:
        return int((CLUSTER_STATE / "nodes").read_text())
    except (OSError, ValueError):
        return None


def test_every_cluster_node_mounts_the_same_cephfs(tmp_path):
    """With --cluster, a job on every node sees one CephFS through a client of its own (one MDS
    session per node, named after it), and down unmounts it in every node."""
    nodes = _cluster_nodes()
    if nodes is None:
        why = f"no scripts/cluster-local is up (no {CLUSTER_STATE}/nodes)"
        if REQUIRED and os.environ.get("IOLAB_REQUIRE_CLUSTER") == "1":
            pytest.fail(why)
        pytest.skip(why)
    why = _why_not(NODE_PORTS)
    if why:
        _unavailable(why)
    state = tmp_path / "state"
    env = {**_env(state, NODE_PORTS), "IOLAB_CEPH_OSDS": "1"}
    up = _run(["up", "--cluster"], env)
    ceph = Ceph(state, up)
    try:
        assert up.returncode == 0, up.stderr
        for k in range(1, nodes + 1):
            assert re.search(rf"^ceph-fuse\s+pid \d+\s+mounted at {re.escape(str(ceph.mount))} \(node{k}\)$",
                             up.stdout, re.M), up.stdout
        job = subprocess.run(
            ["srun", "-N", str(nodes), "--ntasks-per-node=1", "sh", "-c",
             f'findmnt -n -o FSTYPE --mountpoint {ceph.mount} && hostname > "{ceph.mount}/from-$(hostname)"'],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "SLURM_CONF": str(CLUSTER_STATE / "etc" / "slurm.conf")})
        assert job.returncode == 0, job.stderr
        assert job.stdout.split() == ["fuse.ceph-fuse"] * nodes
        names = [f"node{k}" for k in range(1, nodes + 1)]
        assert sorted(p.name for p in ceph.mount.iterdir()) == [f"from-{n}" for n in names]
        sessions = ceph.ceph("tell", "mds.a", "session", "ls", "-f", "json")
        hosts = [s["client_metadata"].get("hostname") for s in json.loads(sessions)]
        assert sorted(h for h in hosts if h in names) == names and len(hosts) == nodes + 1, hosts
        fuse = {name: pid for name, pid in ceph.pids().items() if name.startswith("fuse.node")}
        down = _run(["down"], env)
        assert down.returncode == 0, down.stderr
        assert [pid for pid in fuse.values() if Path(f"/proc/{pid}").exists()] == []
        for k in range(1, nodes + 1):
            slurmd = int((CLUSTER_STATE / "run" / f"slurmd-node{k}.pid").read_text())
            mounts = Path(f"/proc/{slurmd}/mountinfo").read_text()
            assert f" {ceph.mount} " not in mounts, f"node{k} still mounts it"
    finally:
        _run(["down"], env)

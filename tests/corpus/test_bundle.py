"""Bundles (issue 40): real recorded runs travel as a bundle into a fresh results directory and
read there as they did at home; the same runs give the same bytes; and every damage of a
hostile bundle, made here from a real one, is refused naming the member and why, with the
results directory left exactly as it was."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import pytest

from iolab.results import integrity
from iolab.results.bundle import CONTENTS, tar_info
from iolab.results.unbundle import Limits, Refused, import_bundle

from .conftest import iolab, rechain, refused

from tests.integration.conftest import REPO, make_project

DATA = REPO / "tests" / "data"
TUTORIAL = ("tutorial", "first-fio", "20261128T184854Z-282d86")
# (where under tests/data, experiment, run, what bundle needs to carry it)
RUNS = [
    (*TUTORIAL, ()),
    ("cephfs/runs", "cephfs-nosuchpool", "20261128T185054Z-777c7d", ()),
    # written before the chain (unverified), and one interrupted (incomplete)
    ("runs/3940bc6", "quickstart", "20261123T182827Z-8d23bf", ("--allow-incomplete",)),
    ("runs/3940bc6", "interrupted", "20261123T183055Z-7769dd", ("--allow-incomplete",)),
]


class Site:
    """A project and results directory of its own, holding copies of real runs."""

    def __init__(self, base: Path):
        base.mkdir(parents=True, exist_ok=True)
        self.base = base
        self.root = make_project(base, {})
        self.results = base / "results"
        self.results.mkdir()
        self.env = {**os.environ, "IOLAB_RESULTS": str(self.results), "IOLAB_ROOT": str(self.root),
                    "IOLAB_CACHE": str(base / "cache")}

    def add(self, where: str, experiment: str, run: str) -> Path:
        dest = self.results / experiment / run
        shutil.copytree(DATA / where / experiment / run, dest)
        return dest

    def iolab(self, *args):
        return iolab(*args, env=self.env, cwd=self.root)

    def tree(self) -> dict:
        """Every path under the results with its bytes (None: a directory)."""
        return {str(p.relative_to(self.results)): None if p.is_dir() else p.read_bytes()
                for p in sorted(self.results.rglob("*"))}


@pytest.fixture
def home(tmp_path) -> Site:
    return Site(tmp_path / "home")


@pytest.fixture
def away(tmp_path) -> Site:
    return Site(tmp_path / "away")


def made(site: Site, out: Path, *args) -> Path:
    answer = site.iolab("bundle", *args, "--out", out)
    assert answer.returncode == 0, str(answer)
    assert f"sha256 {hashlib.sha256(out.read_bytes()).hexdigest()}" in answer.stdout
    return out


@pytest.mark.parametrize("where,experiment,run,flags", RUNS, ids=[r[1] for r in RUNS])
def test_a_bundle_imported_elsewhere_verifies_and_tables_as_at_home(home, away, tmp_path,
                                                                     where, experiment, run, flags):
    home.add(where, experiment, run)
    bundle = made(home, tmp_path / "b.tar.gz", experiment, run, "--raw", "--site", "home", *flags)
    answer = away.iolab("import-bundle", bundle)
    assert answer.returncode == 0, str(answer)
    stored = away.results / experiment / "@home" / run
    assert (stored / "records.jsonl").read_bytes() == (home.results / experiment / run /
                                                       "records.jsonl").read_bytes()
    verified = away.iolab("verify", experiment, f"{run}@home")
    assert verified.returncode == 0, str(verified)
    there = away.iolab("table", experiment, "--run", f"{run}@home")
    here = home.iolab("table", experiment, "--run", run)
    assert there.returncode == here.returncode == 0, str(there)
    assert there.stdout == here.stdout
    # a site's run is never this site's latest
    assert away.iolab("table", experiment).returncode != 0


def test_a_run_without_its_chain_or_incomplete_is_refused_unless_allowed(home, tmp_path):
    home.add("runs/3940bc6", "interrupted", "20261123T183055Z-7769dd")
    refused(home.iolab("bundle", "interrupted", "--out", tmp_path / "b.tar"),
            "run 20261123T183055Z-7769dd: it is incomplete", "--allow-incomplete")
    home.add("runs/3940bc6", "quickstart", "20261123T182827Z-8d23bf")
    refused(home.iolab("bundle", "quickstart", "--out", tmp_path / "b.tar"),
            "carry no digest chain")
    assert not (tmp_path / "b.tar").exists()


def test_a_run_that_fails_verify_is_never_bundled(home, tmp_path):
    run = home.add(*TUTORIAL)
    lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"ok"', '"ok" ', 1)
    (run / "records.jsonl").write_text("".join(lines))
    refused(home.iolab("bundle", "first-fio", "--allow-incomplete", "--out", tmp_path / "b.tar"),
            "records.jsonl:3", "never carries a run that fails")


def test_the_same_runs_give_the_same_bytes_and_no_file_is_replaced(home, tmp_path):
    home.add(*TUTORIAL)
    for suffix in (".tar", ".tar.gz"):
        one = made(home, tmp_path / f"one{suffix}", "first-fio", "--raw")
        two = made(home, tmp_path / f"two{suffix}", "first-fio", "--raw")
        assert one.read_bytes() == two.read_bytes()
    with tarfile.open(tmp_path / "one.tar") as tar:
        infos = tar.getmembers()
    assert infos[0].name == CONTENTS
    assert [i.name for i in infos[1:]] == sorted(i.name for i in infos[1:])
    assert {(i.mtime, i.uid, i.gid, i.uname, i.mode) for i in infos} == {(0, 0, 0, "", 0o644)}
    before = (tmp_path / "one.tar").read_bytes()
    refused(home.iolab("bundle", "first-fio", "--out", tmp_path / "one.tar"), "exists")
    assert (tmp_path / "one.tar").read_bytes() == before


def test_the_same_run_again_is_there_and_other_bytes_are_refused(home, away, tmp_path):
    home.add(*TUTORIAL)
    bundle = made(home, tmp_path / "b.tar.gz", "first-fio")
    assert away.iolab("import-bundle", bundle).returncode == 0
    again = away.iolab("import-bundle", bundle)
    assert again.returncode == 0 and "already there, the same bytes" in again.stdout
    forged = tmp_path / "forged.tar.gz"
    Bundle.read(bundle).edit_record(rechain_run=True, update_manifest=True).write(forged)
    before = away.tree()
    refused(away.iolab("import-bundle", forged), "already stored for site local with other content",
            "manifest.json: other bytes")
    assert away.tree() == before
    assert away.iolab("import-bundle", forged, "--site", "elsewhere").returncode == 0


# ------------------------------------------------------------------------- hostile bundles
class Bundle:
    """A real bundle's members, to damage and write again as a tar."""

    def __init__(self, contents: dict, members: list[tuple[tarfile.TarInfo, bytes]]):
        self.contents, self.members = contents, members

    @classmethod
    def read(cls, path: Path) -> Bundle:
        with tarfile.open(path) as tar:
            members = [(i, tar.extractfile(i).read()) for i in tar.getmembers()]
        return cls(json.loads(members[0][1]), members[1:])

    def data(self, suffix: str) -> bytes:
        return next(d for i, d in self.members if i.name.endswith(suffix))

    def put(self, suffix: str, data: bytes, listed: bool = True) -> Bundle:
        """A member's bytes replaced, and with `listed` its size and sha256 in the list too."""
        for k, (info, _old) in enumerate(self.members):
            if info.name.endswith(suffix):
                self.members[k] = (tar_info(info.name, len(data)), data)
                if listed:
                    self.listed(info.name).update(size=len(data),
                                                  sha256=hashlib.sha256(data).hexdigest())
        return self

    def listed(self, name: str) -> dict:
        return next(m for m in self.contents["members"] if m["name"] == name)

    def add(self, info: tarfile.TarInfo, data: bytes = b"", listed: bool = True) -> Bundle:
        self.members.append((info, data))
        if listed:
            self.contents["members"].append({"name": info.name, "size": len(data),
                                             "sha256": hashlib.sha256(data).hexdigest()})
        return self

    def edit_record(self, *, rechain_run: bool, update_manifest: bool, listed: bool = True,
                    tmp: Path | None = None) -> Bundle:
        """The third record's write_bw doubled, the chain rewritten from it (or not), the
        manifest's end with it (or not), the content list made to match (or not)."""
        recs = [json.loads(line) for line in self.data("records.jsonl").splitlines()]
        metric = next(m for m in recs[2]["metrics"] if isinstance(m.get("value"), (int, float)))
        metric["value"] = metric["value"] * 2 + 1
        manifest = self.data("manifest.json")
        if rechain_run:
            run = Path(tempfile.mkdtemp()) / self.contents["runs"][0]["run"]
            run.mkdir()
            (run / "manifest.json").write_bytes(manifest)
            rechain(run, recs)
            records = (run / "records.jsonl").read_bytes()
            if update_manifest:
                self.put("manifest.json", (run / "manifest.json").read_bytes(), listed)
            shutil.rmtree(run.parent)
        else:       # the line as written, its chain field kept
            lines = self.data("records.jsonl").splitlines(keepends=True)
            lines[2] = _edit_line(lines[2])
            records = b"".join(lines)
        return self.put("records.jsonl", records, listed)

    def write(self, path: Path, compress: bool = True) -> Path:
        """The members as a tar, headers written as they are (one may claim more bytes than
        follow it), the content list first."""
        head = (json.dumps(self.contents, indent=1, sort_keys=True) + "\n").encode()
        out = io.BytesIO()
        for info, data in [(tar_info(CONTENTS, len(head)), head), *self.members]:
            out.write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
            out.write(data + b"\0" * (-len(data) % 512))
        out.write(b"\0" * 1024)
        data = out.getvalue()
        path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
        return path


def _edit_line(line: bytes) -> bytes:
    """One digit of a measured value changed, the chain field left as it was."""
    assert integrity.unseal(line.rstrip(b"\n"))[1] is not None     # a chained line
    at = line.index(b'"value": ') + len(b'"value": ')
    digit = line[at:at + 1]
    return line[:at] + (b"7" if digit != b"7" else b"8") + line[at + 1:]


def _info(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tar_info(name, 0)
    info.type, info.linkname = kind, link
    return info


RUN = "first-fio/20261128T184854Z-282d86"
DAMAGES = {
    "dotdot": (lambda b: b.add(tar_info("../evil", 4), b"evil"), "../evil", "'..'"),
    "dotdot-inside": (lambda b: b.add(tar_info(f"{RUN}/../../evil", 4), b"evil"), "evil", "'..'"),
    "absolute": (lambda b: b.add(tar_info("/tmp/evil", 4), b"evil"), "/tmp/evil", "absolute"),
    "symlink": (lambda b: b.add(_info(f"{RUN}/cases/x", tarfile.SYMTYPE, "/etc/passwd"), listed=False),
                f"{RUN}/cases/x", "a symbolic link to '/etc/passwd'"),
    "hardlink": (lambda b: b.add(_info(f"{RUN}/cases/x", tarfile.LNKTYPE, "/etc/passwd"), listed=False),
                 f"{RUN}/cases/x", "a hard link"),
    "device": (lambda b: b.add(_info(f"{RUN}/cases/x", tarfile.CHRTYPE), listed=False),
               f"{RUN}/cases/x", "a character device"),
    "fifo": (lambda b: b.add(_info(f"{RUN}/cases/x", tarfile.FIFOTYPE), listed=False),
             f"{RUN}/cases/x", "a FIFO"),
    "duplicate": (lambda b: b.add(*next(m for m in b.members if m[0].name.endswith("manifest.json")),
                                  listed=False), f"{RUN}/manifest.json",
                  "a second member of this name"),
    "unlisted": (lambda b: b.add(tar_info(f"{RUN}/extra.txt", 3), b"abc", listed=False),
                 f"{RUN}/extra.txt", "not in the content list"),
    "missing": (lambda b: b.add(tar_info(f"{RUN}/cases/gone", 3), b"abc").members.pop() and b,
                f"{RUN}/cases/gone", "missing from the archive"),
    "changed-byte": (lambda b: b.put("records.jsonl", _flip(b.data("records.jsonl")), listed=False),
                     f"{RUN}/records.jsonl", "changed since it was bundled"),
    "record-edited-list-updated": (
        lambda b: b.edit_record(rechain_run=False, update_manifest=False),
        f"{RUN}/records.jsonl:3", "edited since it was written"),
    "chain-rewritten-manifest-not": (
        lambda b: b.edit_record(rechain_run=True, update_manifest=False),
        f"{RUN}/records.jsonl", "digest"),
    "chain-and-manifest-rewritten-list-not": (
        lambda b: b.edit_record(rechain_run=True, update_manifest=True, listed=False),
        f"{RUN}/manifest.json", "changed since it was bundled"),
    "another-experiment": (
        lambda b: b.put("manifest.json", b.data("manifest.json").replace(
            b'"experiment": "first-fio"', b'"experiment": "quickstart"', 1)),
        f"{RUN}/manifest.json", "the manifest says experiment 'quickstart'"),
    "member-over-limit": (
        lambda b: b.put("records.jsonl", b.data("records.jsonl"), listed=False) and
        b.members[-1][0].__setattr__("size", 5 << 30) or b,
        f"{RUN}/records.jsonl", "5368709120 bytes, over the limit"),
}


def _flip(data: bytes) -> bytes:
    return data[:100] + bytes([data[100] ^ 1]) + data[101:]


@pytest.fixture(scope="module")
def real_bundle(tmp_path_factory) -> Path:
    home = Site(tmp_path_factory.mktemp("real-bundle"))
    home.add(*TUTORIAL)
    return made(home, home.base / "real.tar.gz", "first-fio", "--raw")


def _refused_untouched(away: Site, path: Path, *says: str) -> str:
    away.add("runs/3940bc6", "failcase", "20261123T182846Z-9d3168")      # results to keep
    before = away.tree()
    line = refused(away.iolab("import-bundle", path), *says)
    assert "nothing was written" in line
    assert away.tree() == before
    return line


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_bundle_is_refused_naming_the_member_and_nothing_is_written(
        real_bundle, away, tmp_path, damage):
    make, member, reason = DAMAGES[damage]
    bundle = Bundle.read(real_bundle)
    if damage == "member-over-limit":       # the header says 5 GiB; the data never follows
        bundle.members.sort(key=lambda m: m[0].name.endswith("records.jsonl"))
    damaged = make(bundle)
    _refused_untouched(away, damaged.write(tmp_path / "bad.tar.gz"), member, reason)


def test_a_fully_forged_bundle_passes_but_its_sha256_is_not_the_sites(real_bundle, away, tmp_path):
    """Records rewritten with their chain, manifest and content list: every check passes (the
    chain is no signature); what tells it apart is the bundle's sha256 its site printed."""
    forged = Bundle.read(real_bundle).edit_record(rechain_run=True, update_manifest=True)
    path = forged.write(tmp_path / "forged.tar.gz")
    answer = away.iolab("import-bundle", path)
    assert answer.returncode == 0, str(answer)
    real = hashlib.sha256(real_bundle.read_bytes()).hexdigest()
    assert f"sha256 {real}" not in answer.stdout
    assert f"sha256 {hashlib.sha256(path.read_bytes()).hexdigest()}" in answer.stdout


def test_the_content_list_comes_first(real_bundle, away, tmp_path):
    bundle = Bundle.read(real_bundle)
    bundle.members.insert(0, bundle.members.pop())
    path = tmp_path / "late.tar"
    head = (json.dumps(bundle.contents) + "\n").encode()
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for info, data in bundle.members:
            tar.addfile(info, io.BytesIO(data))
        tar.addfile(tar_info(CONTENTS, len(head)), io.BytesIO(head))
    path.write_bytes(out.getvalue())
    _refused_untouched(away, path, "the first member is not the content list")


def test_a_huge_extended_header_is_refused_before_it_is_read(real_bundle, away, tmp_path):
    bundle = Bundle.read(real_bundle)
    info = tar_info(f"{RUN}/cases/x", 0)
    info.pax_headers = {"comment": "x" * (1 << 20)}
    bundle.add(info, b"")
    _refused_untouched(away, bundle.write(tmp_path / "pax.tar.gz"), "an extended tar header",
                       f"after {RUN}/records.jsonl of 1048593 bytes, over the limit")


def test_a_decompression_bomb_stops_at_what_the_content_list_declares(real_bundle, away, tmp_path):
    """256 MiB of zeros (256 KiB gzip'd) the content list declares as 3 bytes: refused from the
    header, and with a content list that declares them, refused by the total limit."""
    zeros = b"\0" * (256 << 20)
    bundle = Bundle.read(real_bundle).add(tar_info(f"{RUN}/cases/bomb", len(zeros)), zeros)
    path = bundle.write(tmp_path / "bomb.tar.gz")
    assert path.stat().st_size < 1 << 20
    before = away.tree()
    with pytest.raises(Refused, match="over the limits"):
        import_bundle(path, away.results, limits=Limits(total=64 << 20))
    bundle.listed(f"{RUN}/cases/bomb").update(size=3)
    path = bundle.write(tmp_path / "bomb2.tar.gz")
    with pytest.raises(Refused, match=f"{RUN}/cases/bomb: {len(zeros)} bytes, the content list says 3"):
        import_bundle(path, away.results, limits=Limits(total=64 << 20))
    assert away.tree() == before

"""An offline Spack bundle, written and read: the deterministic tarballs of make_bundle, and the
checks bundle.verify/open_bundle make before anything is extracted (a changed byte, an unlisted
file, a listed file missing, a link, no checksums), on small bundles made here."""

from __future__ import annotations

import gzip
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from iolab.errors import IolabError
from iolab.stack import build, make_bundle
from iolab.stack import bundle as bundles


def tree(root: Path, files: dict[str, str], executable=()) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel in executable:
            path.chmod(0o755)
    return root


SPACK_FILES = {
    "bin/spack": "#!/bin/sh\n", "lib/spack/spack/main.py": "x = 1\n",
    "etc/spack/include.yaml": "include: []\n", "etc/spack/defaults/base/mirrors.yaml": "mirrors: {}\n",
    "etc/spack/defaults/base/config.yaml": "config: {}\n", "etc/spack/site/README.md": "site\n",
    # what using a Spack adds to its root: never in its tarball
    "etc/spack/mirrors.yaml": "mirrors:: {bundle: file:///somewhere}\n",
    "etc/spack/config.yaml": "config: {build_stage: [/somewhere]}\n",
    "etc/spack/bootstrap.yaml": "bootstrap: {enable: false}\n",
    "etc/spack/site/repos.yaml": "repos: {builtin: {destination: /somewhere}}\n",
    "opt/spack/.spack-db/index.json": "{}\n", "var/spack/cache/x.tar.gz": "cached\n",
    "lib/spack/spack/__pycache__/main.cpython-311.pyc": "pyc\n", ".iolab-extracted": "spack-1.1.0.tar.gz\n",
}
KEPT = {"bin/spack", "lib/spack/spack/main.py", "etc/spack/include.yaml", "etc/spack/site/README.md",
        "etc/spack/defaults/base/mirrors.yaml", "etc/spack/defaults/base/config.yaml"}


def spack_root(tmp_path: Path) -> Path:
    root = tree(tmp_path / "spack-src", SPACK_FILES, executable={"bin/spack"})
    (root / "share").mkdir()
    (root / "share" / "link").symlink_to("../bin/spack")
    return root


def test_tarball_is_the_same_bytes_from_the_same_inputs(tmp_path):
    root = spack_root(tmp_path)
    a, b = tmp_path / "a.tar.gz", tmp_path / "other-name.tar.gz"
    make_bundle.tar_dir(root, a, "spack-1.1.0", make_bundle._spack_excluded)
    # other times and another owner's umask on the same content: the same bytes
    for path in root.rglob("*"):
        if not path.is_symlink():
            os.utime(path, (1_700_000_000, 1_700_000_000))
    (root / "lib" / "spack" / "spack" / "main.py").chmod(0o600)
    make_bundle.tar_dir(root, b, "spack-1.1.0", make_bundle._spack_excluded)
    assert a.read_bytes() == b.read_bytes()
    # gzip header: no file name, no time
    with gzip.open(a) as g:
        g.read(1)
    raw = a.read_bytes()
    assert raw[3] & 0x08 == 0 and raw[4:8] == b"\0\0\0\0"


def test_tarball_members_sorted_fixed_and_filtered(tmp_path):
    root = spack_root(tmp_path)
    out = tmp_path / "spack.tar.gz"
    make_bundle.tar_dir(root, out, "spack-1.1.0", make_bundle._spack_excluded)
    with tarfile.open(out) as tar:
        members = tar.getmembers()
    names = [m.name for m in members]
    assert names == sorted(names) and names[0] == "spack-1.1.0"
    files = {m.name.removeprefix("spack-1.1.0/") for m in members if m.isfile()}
    assert files == KEPT
    owners = {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members}
    assert owners == {(make_bundle.MTIME, 0, 0, "root", "root")}
    modes = {m.name.removeprefix("spack-1.1.0/"): m.mode for m in members if m.isfile()}
    assert modes["bin/spack"] == 0o755 and modes["lib/spack/spack/main.py"] == 0o644
    link = next(m for m in members if m.name.endswith("share/link"))
    assert link.issym() and link.linkname == "../bin/spack"
    assert not any("/opt" in n or "__pycache__" in n or "var/spack/cache" in n for n in names)


def test_tarball_extracts_as_setup_does(tmp_path):
    root = spack_root(tmp_path)
    out = tmp_path / "spack-1.1.0.tar.gz"
    make_bundle.tar_dir(root, out, "spack-1.1.0", make_bundle._spack_excluded)
    dest = build._extract(out, tmp_path / "home" / "spack-1.1.0", build.Log(tmp_path / "log"))
    spack = dest / "bin" / "spack"
    assert spack.read_text() == "#!/bin/sh\n" and os.access(spack, os.X_OK)
    assert not (dest / "etc" / "spack" / "mirrors.yaml").exists()


def test_packages_tarball_leaves_git_out(tmp_path):
    root = tree(tmp_path / "pk", {"repos/spack_repo/builtin/packages/ior/package.py": "ior\n",
                                  ".git/HEAD": "ref\n", ".gitignore": "*.pyc\n", ".iolab-extracted": "x\n"})
    out = tmp_path / "p.tar.gz"
    make_bundle.tar_dir(root, out, "spack-packages", make_bundle._packages_excluded)
    with tarfile.open(out) as tar:
        files = {m.name for m in tar.getmembers() if m.isfile()}
    assert files == {"spack-packages/.gitignore",
                     "spack-packages/repos/spack_repo/builtin/packages/ior/package.py"}


# --- reading a bundle: what verify and open_bundle refuse ---

def small_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "bundle"
    src = tree(tmp_path / "s", {"bin/spack": "spack\n"}, executable={"bin/spack"})
    root.mkdir()
    make_bundle.tar_dir(src, root / "spack-1.1.0.tar.gz", "spack-1.1.0")
    make_bundle.tar_dir(src, root / "spack-packages-v1.tar.gz", "spack-packages")
    tree(root, {"mirror/_source-cache/archive/ab/ab12.tar.gz": "source\n",
                "wheels/clingo-5.8.3-cp311-cp311-manylinux_x86_64.whl": "wheel\n"})
    bundles.write_sums(root)
    return root


def test_a_written_bundle_opens_and_verifies(tmp_path):
    root = small_bundle(tmp_path)
    b = bundles.open_bundle(root)
    bundles.verify(b)
    assert (b.spack_version, b.packages_version) == ("1.1.0", "v1")
    assert sorted(b.checked) == sorted(bundles.files_of(root)) and len(b.checked) == 4


def test_a_changed_byte_is_refused_naming_the_file(tmp_path):
    root = small_bundle(tmp_path)
    src = root / "mirror/_source-cache/archive/ab/ab12.tar.gz"
    src.write_text("sourcE\n")                        # same size, one byte changed
    with pytest.raises(IolabError, match=r"mirror/_source-cache/archive/ab/ab12\.tar\.gz: sha256 "):
        bundles.verify(bundles.open_bundle(root))


def test_an_unlisted_file_is_refused(tmp_path):
    root = small_bundle(tmp_path)
    (root / "mirror" / "extra.tar.gz").write_text("nobody vouched for me\n")
    with pytest.raises(IolabError, match=r"not in its checksum list: mirror/extra\.tar\.gz"):
        bundles.verify(bundles.open_bundle(root))


def test_a_listed_file_missing_is_refused(tmp_path):
    root = small_bundle(tmp_path)
    (root / "wheels" / "clingo-5.8.3-cp311-cp311-manylinux_x86_64.whl").unlink()
    with pytest.raises(IolabError, match=r"listed but missing: wheels/clingo-5\.8\.3"):
        bundles.verify(bundles.open_bundle(root))


def test_a_link_in_the_bundle_is_refused(tmp_path):
    root = small_bundle(tmp_path)
    (root / "mirror" / "ior").mkdir()
    (root / "mirror" / "ior" / "ior-4.0.0.tar.gz").symlink_to("../_source-cache/archive/ab/ab12.tar.gz")
    with pytest.raises(IolabError, match=r"ior-4\.0\.0\.tar\.gz: a link inside the bundle"):
        bundles.verify(bundles.open_bundle(root))


def test_no_checksums_is_refused(tmp_path):
    root = small_bundle(tmp_path)
    (root / bundles.SUMS).unlink()
    with pytest.raises(IolabError, match="lists no checksums"):
        bundles.open_bundle(root)
    (root / "README.md").write_text("# a bundle\n\nno sha256 section here\n")
    with pytest.raises(IolabError, match="lists no checksums"):
        bundles.open_bundle(root)


def test_readme_sha256_section_is_read_when_there_is_no_sums_file(tmp_path):
    root = small_bundle(tmp_path)
    sums = (root / bundles.SUMS).read_text()
    (root / bundles.SUMS).unlink()
    (root / "README.md").write_text(f"# the shared form\n\n## sha256\n```\n{sums}```\n")
    bundles.verify(bundles.open_bundle(root))


# --- writing: the mirror's links, the README, the output directory ---

def test_mirror_links_are_read_then_removed(tmp_path):
    mirror = tree(tmp_path / "mirror", {"_source-cache/archive/cb/cb17.tar.gz": "ior\n",
                                        "_source-cache/archive/11/1150.tar.gz": "darshan\n"})
    for pkg, name, target in (("ior", "ior-4.0.0.tar.gz", "cb/cb17.tar.gz"),
                              ("darshan-runtime", "darshan-runtime-3.4.7.tar.gz", "11/1150.tar.gz"),
                              ("darshan-util", "darshan-util-3.4.7.tar.gz", "11/1150.tar.gz")):
        (mirror / pkg).mkdir()
        (mirror / pkg / name).symlink_to(f"../_source-cache/archive/{target}")
    what = make_bundle._flatten_mirror(mirror)
    assert what == {"_source-cache/archive/cb/cb17.tar.gz": ["ior-4.0.0"],
                    "_source-cache/archive/11/1150.tar.gz": ["darshan-runtime-3.4.7", "darshan-util-3.4.7"]}
    assert [p.name for p in mirror.iterdir()] == ["_source-cache"]
    assert bundles.files_of(mirror) == ["_source-cache/archive/11/1150.tar.gz",
                                        "_source-cache/archive/cb/cb17.tar.gz"]
    (mirror / "_source-cache" / "archive" / "cb" / "again.tar.gz").symlink_to("cb17.tar.gz")
    with pytest.raises(IolabError, match="a link inside _source-cache"):
        make_bundle._flatten_mirror(mirror)


def test_readme_names_each_source_with_its_sha256_and_how_to_use_it():
    sums = {"mirror/_source-cache/archive/11/1150.tar.gz": "9" * 64, "spack-1.1.0.tar.gz": "1" * 64,
            "wheels/clingo-5.8.3-x.whl": "2" * 64}
    text = make_bundle.readme("1.1.0", "a tar of its root", "v2025.11.0", None, sums,
                              {"_source-cache/archive/11/1150.tar.gz": ["darshan-runtime-3.4.7"]},
                              ["darshan-runtime"])
    assert "scripts/setup --spack-bundle <this directory>" in text
    row = f"| `mirror/_source-cache/archive/11/1150.tar.gz` | darshan-runtime-3.4.7 | `{'9' * 64}` |"
    assert row in text
    assert "darshan-runtime: the archive is not the one the recipe's sha256 names" in text
    assert "Spack 1.1.0" in text and "v2025.11.0" in text and "clingo-5.8.3-x.whl" in text


def test_a_non_empty_out_is_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "something").write_text("x\n")
    home = tmp_path / "home"
    (home / "spack-1.1.0" / "bin").mkdir(parents=True)
    (home / "spack-1.1.0" / "bin" / "spack").write_text("#!/bin/sh\n")
    env = tmp_path / "env"
    env.mkdir()
    (env / "spack.lock").write_text('{"concrete_specs": {}}')
    rc = make_bundle.main([str(out), "--home", str(home), "--env", str(env)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("iolab: error: ") and "exists and is not empty" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (out / "something").read_text() == "x\n"


def test_an_environment_without_a_lock_is_refused(tmp_path, capsys):
    tree(tmp_path, {"bin/spack": "#!/bin/sh\n"}, executable={"bin/spack"})
    rc = make_bundle.main([str(tmp_path / "out"), "--spack", str(tmp_path), "--env", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "no spack.lock" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_git_work_tree_is_archived_at_its_commit_the_same_bytes_twice(tmp_path):
    root = tree(tmp_path / "spack", {"bin/spack": "#!/bin/sh\n", "README.md": "spack\n"},
                executable={"bin/spack"})
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2025-11-14T00:00:00Z",
           "GIT_COMMITTER_DATE": "2025-11-14T00:00:00Z"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "v1.1.0"]):
        subprocess.run(["git", "-C", str(root), *args], env=env, check=True)
    # what using it added, uncommitted: not carried
    tree(root, {"etc/spack/mirrors.yaml": "mirrors:: {}\n"})
    assert make_bundle._git_top(root) and not make_bundle._git_top(root / "bin")
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    commit = make_bundle.git_archive(root, a, "spack-1.1.0")
    make_bundle.git_archive(root, b, "spack-1.1.0")
    assert a.read_bytes() == b.read_bytes() and len(commit) == 40
    with tarfile.open(a) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
        assert tar.getmember("spack-1.1.0/bin/spack").mode == 0o755
    assert names == {"spack-1.1.0/bin/spack", "spack-1.1.0/README.md"}

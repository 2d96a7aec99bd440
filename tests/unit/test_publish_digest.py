"""`iolab publish` of a run read from its digest (records.digest): the page's provenance, flags
and Darshan findings come from the digest, no record decoded, and the page is the
same as the one made from the records. The run is a real recorded one (tests/data/runs)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path


from iolab.cli import main
from iolab.present.publish import MARKER
from iolab.results import digest, recordcache
from iolab.results.record import Record
from iolab.results.run import Run

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
EXP = "cp2k-aggregators"          # hints not applied (flags) and Darshan findings


def _copy(tmp_path: Path, exp: str = EXP) -> Path:
    results = tmp_path / "results"
    shutil.copytree(RUNS / "9d00b02" / exp, results / exp)
    (run,) = (results / exp).iterdir()
    return run


def _page(out: Path) -> dict:
    """Each file of a published folder by its sha256; the marker without its time of writing."""
    files = {}
    for p in sorted(out.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.name == MARKER:
                data = json.dumps({k: v for k, v in json.loads(data).items() if k != "written"}).encode()
            files[str(p.relative_to(out))] = hashlib.sha256(data).hexdigest()
    return files


def _no_decoding(*_args, **_kwargs):
    raise AssertionError("a record was decoded")


def test_a_page_from_the_digest_is_the_page_from_the_records(tmp_path, monkeypatch):
    run = _copy(tmp_path)
    monkeypatch.setenv("IOLAB_RESULTS", str(run.parent.parent))
    assert not (run / recordcache.DIGEST).exists()
    assert main(["publish", EXP, "--out", str(tmp_path / "from-records")]) == 0
    html = (tmp_path / "from-records" / "index.html").read_text()
    assert "hint cb_nodes: requested 2, effective 1" in html
    assert "<h2>Darshan findings</h2>" in html and "(aggregators_differ)" in html
    recordcache.write_run_digest(run)
    assert main(["publish", EXP, "--out", str(tmp_path / "from-digest")]) == 0
    assert _page(tmp_path / "from-digest") == _page(tmp_path / "from-records")


def test_a_run_read_from_its_digest_is_published_without_decoding_a_record(tmp_path, monkeypatch):
    """quickstart varies no MPI-IO hint: its plots need no value in effect (plots.points)."""
    run = _copy(tmp_path, "quickstart")
    monkeypatch.setenv("IOLAB_RESULTS", str(run.parent.parent))
    assert main(["publish", "quickstart", "--out", str(tmp_path / "from-records")]) == 0
    recordcache.write_run_digest(run)
    monkeypatch.setattr(Record, "from_json", _no_decoding)
    monkeypatch.setattr(Run, "records", property(_no_decoding))   # nor read from a cache
    assert main(["publish", "quickstart", "--out", str(tmp_path / "from-digest")]) == 0
    assert _page(tmp_path / "from-digest") == _page(tmp_path / "from-records")


def test_a_digest_of_another_fold_is_refolded_and_the_page_is_the_same(tmp_path, monkeypatch, capsys):
    run = _copy(tmp_path)
    monkeypatch.setenv("IOLAB_RESULTS", str(run.parent.parent))
    assert main(["publish", EXP, "--out", str(tmp_path / "first")]) == 0
    recordcache.write_run_digest(run)
    target = run / recordcache.DIGEST
    head, _, body = target.read_bytes().partition(b"\n")
    header = json.loads(head)
    header["fold"] = digest.FORMAT - 1
    target.write_bytes(json.dumps(header).encode() + b"\n" + body)
    capsys.readouterr()
    assert main(["publish", EXP, "--out", str(tmp_path / "again")]) == 0
    assert "written by another version of iolab" in capsys.readouterr().err
    assert _page(tmp_path / "again") == _page(tmp_path / "first")

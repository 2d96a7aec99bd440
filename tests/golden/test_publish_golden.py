"""Golden tests of `iolab publish`'s Markdown: report.md (the whole page) and tables.md.
Timestamps are normalised. Regenerate with IOLAB_UPDATE_GOLDEN=1."""

from __future__ import annotations

import re

from iolab.present.publish import publish
from tests.golden.publish_data import REPO, experiment, make_run, records
from tests.golden.golden import check_golden

TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b")


def normalise(text: str) -> str:
    return TIMESTAMP.sub("<timestamp>", text)



def test_archer_report_markdown(tmp_path):
    exp = experiment("archer-fpp-vs-ssf")
    run_id = "20261121T000000Z-9a1de4"
    make_run(tmp_path / "results", exp, run_id, records(exp, run_id, darshan_cases=2, fail_last=True))
    out = tmp_path / "site"
    publish(exp.id, out, project_root=REPO, results=tmp_path / "results")
    report = (out / "report.md").read_text()
    assert str(tmp_path) not in report
    check_golden("publish_archer_report.md", normalise(report))
    check_golden("publish_archer_tables.md", normalise((out / "tables.md").read_text()))


def test_aggregators_report_markdown(tmp_path):
    exp = experiment("cp2k-aggregators")
    run_id = "20261121T000000Z-c2b7a9"
    make_run(tmp_path / "results", exp, run_id, records(exp, run_id, effective_cb_nodes=1),
             spack_lock_sha256="ef" * 32, dirty=True)
    out = tmp_path / "site"
    publish(exp.id, out, project_root=REPO, results=tmp_path / "results")
    check_golden("publish_cp2k_report.md", normalise((out / "report.md").read_text()))


def test_a_page_from_the_digest_alone_is_the_page_from_the_records(tmp_path, monkeypatch):
    """The page's provenance, tables, plots, flags and Darshan findings come from the run's
    digest: read from records.digest, no record is decoded, and the page is the one its records
    make. (The comparison with a published study lines records up: left out here.)"""
    from iolab.present import publish as page
    from iolab.results import recordcache

    exp = experiment("archer-fpp-vs-ssf")
    run_id = "20261121T000000Z-9a1de4"
    run = make_run(tmp_path / "results", exp, run_id,
                   records(exp, run_id, darshan_cases=2, fail_last=True))
    monkeypatch.setenv("IOLAB_CACHE", "off")
    monkeypatch.setattr(page, "published_comparison", lambda *_args: None)
    pages = {}
    for way in ("records", "digest"):
        if way == "digest":
            recordcache.write_run_digest(run)
            monkeypatch.setattr(recordcache, "decode_records", _no_decoding)
        out = tmp_path / f"site-{way}"
        publish(exp.id, out, project_root=REPO, results=tmp_path / "results")
        pages[way] = {name: normalise((out / name).read_text())
                      for name in ("report.md", "index.html", "tables.md", "tables.csv")}
    assert pages["digest"] == pages["records"]
    want = (REPO / "tests" / "golden" / "expected" / "publish_archer_report.md").read_text()
    shown = pages["digest"]["report.md"]
    for section in ("## Requested vs applied", "## Darshan findings"):     # as the golden page
        assert section in shown
        assert shown.split(section)[1].split("\n## ")[0] == want.split(section)[1].split("\n## ")[0]
    assert "| main | 323228edde985f1d |" in shown.split("## Darshan findings")[1]


def _no_decoding(*_args, **_kwargs):
    raise AssertionError("a record was decoded")

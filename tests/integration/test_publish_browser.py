"""The published page in a real headless browser (Debian's chromium).

A small ARCHER-like results run (the shipped archer-fpp-vs-ssf experiment, local profile, metrics
parsed from real IOR outputs) is published, then index.html is opened from disk:

- `--dump-dom` gives the DOM after the load event (with a virtual time budget, so late work
  finishes first). The page's own inline script checks every
  <img> (complete and naturalWidth > 0) and any resource that failed to load, and writes the
  result on <body> (data-images-ok, data-images-failed): nothing is injected.
- `--enable-logging=stderr --v=0` makes chromium print every console message and uncaught
  exception ("...:CONSOLE:N] ..."); any such line is a failure.
- External hosts resolve to nothing (--host-resolver-rules), so a page that reached out would
  report a failed resource.
Two negative controls show the checks can fail: a copy with a missing plot, and a page that logs
to the console.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from iolab.results.combine import restricted
from iolab.analysis.compare import Side
from iolab.analysis.published.compare import compare_published
from iolab.analysis.published.study import load_study
from iolab.present.publish import publish
from tests.golden.publish_data import REPO, experiment, make_run, records

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH: install the Debian package "
                                                "chromium (apt-get install -y chromium) for this check"),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--enable-logging=stderr", "--v=0"]
CONSOLE = re.compile(r":CONSOLE[:(]|Uncaught|Failed to load resource")
RUN_ID = "20261121T000000Z-b40e5e"


def chromium(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def dump_dom(tmp_path: Path, page: Path) -> tuple[str, list[str]]:
    # the virtual time budget lets the load event and the page's check run before the dump
    done = chromium(tmp_path, page.as_uri(), "--virtual-time-budget=10000", "--dump-dom")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line for line in done.stderr.splitlines() if CONSOLE.search(line)]


class Dom(HTMLParser):
    """What the checks need from the dumped DOM."""

    def __init__(self, text: str):
        super().__init__()
        self.body: dict = {}
        self.tables: list[dict] = []
        self.imgs: list[dict] = []
        self.figures = 0
        self.verdicts: list[str] = []
        self._in_verdict = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if tag == "body":
            self.body = attrs
        elif tag == "table":
            self.tables.append(attrs)
        elif tag == "img":
            self.imgs.append(attrs)
        elif tag == "figure" and "plot" in classes:
            self.figures += 1
        elif "shape-verdict" in classes:
            self._in_verdict = True
            self.verdicts.append("")

    def handle_endtag(self, tag):
        if tag == "p":
            self._in_verdict = False

    def handle_data(self, data):
        if self._in_verdict:
            self.verdicts[-1] += data


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("publish-browser")
    exp = experiment("archer-fpp-vs-ssf")
    make_run(tmp / "results", exp, RUN_ID, records(exp, RUN_ID, darshan_cases=2))
    out = tmp / "site"
    publish(exp.id, out, project_root=REPO, results=tmp / "results")
    return out


def expected_verdict(site: Path) -> str:
    """The shape verdict, computed directly: the 4-process cases against the guide's rows at 24."""
    run = site.parent / "results" / "archer-fpp-vs-ssf" / RUN_ID
    whole = Side.load(run, "run")
    side = Side("run", restricted(whole.run,
        [r for r in whole.records if r.params["scale.tasks_per_node"] == 4]))
    pc = compare_published(side, load_study("archer-fpp-ssf", REPO), where=["scale.num_tasks=24"],
                           ignore=["scale.num_tasks", "scale.tasks_per_node", "block_size"])
    return pc.shape_verdict()


def test_page_in_headless_chromium(site, tmp_path):
    text, console = dump_dom(tmp_path, site / "index.html")
    dom = Dom(text)
    assert console == [], "console messages or errors:\n" + "\n".join(console)
    # every image loaded (the page's own check, run at the load event)
    assert dom.body.get("data-images-ok") == "yes", dom.body
    assert dom.body.get("data-images-failed") == ""
    pngs = sorted(p.relative_to(site).as_posix() for p in (site / "plots").glob("*.png"))
    assert sorted(i["src"] for i in dom.imgs) == pngs and len(pngs) == 2
    assert dom.body.get("data-images-total") == str(len(pngs))
    assert dom.figures == len(pngs)
    # the report table and the published comparison with its shape verdict
    assert [t.get("data-part") for t in dom.tables if t.get("class") == "report-table"] == ["main"]
    assert any(t.get("class") == "published" for t in dom.tables)
    verdict = expected_verdict(site)
    assert verdict.startswith(("shape ", "not assessed"))
    assert dom.verdicts == [f"Verdict: {verdict}"]
    assert "striping not applied: ext4: no striping" in text
    assert "all 4 ranks wrote 1 shared file: no aggregation" in text


def test_screenshot_renders(site, tmp_path):
    shot = tmp_path / "page.png"
    done = chromium(tmp_path, (site / "index.html").as_uri(), f"--screenshot={shot}",
                    "--window-size=1280,2400", "--hide-scrollbars")
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 50_000
    assert [line for line in done.stderr.splitlines() if CONSOLE.search(line)] == []


def test_checks_catch_a_missing_image_and_console_errors(site, tmp_path):
    """Negative controls: the same checks fail on a broken copy and on a noisy page."""
    broken = tmp_path / "broken"
    shutil.copytree(site, broken)
    missing = sorted((broken / "plots").glob("*.png"))[0]
    missing.unlink()
    text, _console = dump_dom(tmp_path, broken / "index.html")
    body = Dom(text).body
    assert body.get("data-images-ok") == "no"
    assert f"plots/{missing.name}" in body.get("data-images-failed", "")

    noisy = tmp_path / "noisy.html"
    noisy.write_text("<!DOCTYPE html><html><body><p>x</p><script>console.error('boom');"
                     "undefinedFunction();</script></body></html>")
    _text, console = dump_dom(tmp_path, noisy)
    assert any("boom" in line for line in console)
    assert any("Uncaught ReferenceError" in line for line in console)

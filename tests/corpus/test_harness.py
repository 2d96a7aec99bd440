"""The corpus's own starting point: the undamaged real run reads cleanly, so every damage found
by the other cases is the damage's doing."""

from __future__ import annotations

from .conftest import noted


def test_the_real_run_reads_cleanly(run_copy):
    recs = run_copy.records()
    assert len(recs) == 8 and {r["status"] for r in recs} == {"ok"}
    assert {r["provenance"]["binary"]["name"] for r in recs} == {"fio"}
    answer = run_copy.iolab("table", "corpus-fio")
    text = noted(answer, "| write |", "| randwrite |")
    assert "skipped" not in text and "warning" not in answer.stderr

"""The Darshan layer: the runtime preloaded into the benchmark alone where the experiment or the
system asks for it (preload.py), and its log read back: a summary, findings, the aggregators it
saw and a second witness of the layout."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..base import Contribution, JobView, Layer, StackPackages
from . import preload
from .preload import OBSERVED


@dataclass(frozen=True)
class Darshan:
    """The `darshan:` section of an experiment or of a system's extras['iolab']."""

    enabled: bool = False
    dxt: bool = False


def conf_of(case, ctx):
    """The experiment's `darshan:` section, else the system's."""
    return ctx.exp.sections.get(OBSERVED) or ctx.site.sections[OBSERVED]


class DarshanLayer(Layer):
    name = "darshan"
    order = 90                          # it reads back what the layers before it applied
    observed_keys = (OBSERVED,)
    observed_roles = {"findings": OBSERVED}
    findings_fold = OBSERVED
    title = "Darshan"
    schema_files = ((__package__, "darshan.json"),)
    section = "darshan"
    runtime_library = preload.RUNTIME
    # Darshan's archive in a bundle is a git archive of its tag, not the release tarball its
    # recipe's sha256 names: these two alone install without the checksum
    stack_packages = StackPackages(view_files=("lib/libdarshan.so", "bin/darshan-parser"),
                                   no_checksum=("darshan-runtime", "darshan-util"))
    raw_files = (preload.LOG,)
    compress = (preload.LOG,)

    def section_value(self, data: dict) -> Darshan:
        return Darshan(**data)

    def section_from_env(self) -> dict:
        """Darshan for every case by default: IOLAB_DARSHAN=1 (IOLAB_DARSHAN_DXT=1 adds DXT)."""
        return {"enabled": os.environ.get("IOLAB_DARSHAN") == "1",
                "dxt": os.environ.get("IOLAB_DARSHAN_DXT") == "1"}

    def verbs(self) -> tuple:
        from . import verb

        return (verb,)

    def runtime_version(self, observed: dict, stack_versions: dict) -> str | None:
        dar = observed.get(OBSERVED)
        if not dar:
            return None
        return (dar.get("summary") or {}).get("darshan_version") or stack_versions.get(
            self.runtime_library.package)

    def request(self, case, ctx) -> Contribution:
        # Darshan's runtime comes from the stack like a benchmark (its modules, its Spack package)
        return Contribution(packages=["darshan"] if conf_of(case, ctx).enabled else [])

    def wrap(self, case, ctx, spec, start) -> Contribution:
        found = preload.preload(conf_of(case, ctx), ctx.stack, spec, ctx.stage, ctx.policy)
        if found is None:
            return Contribution()
        if found.info["status"] == "not available" and ctx.site.strict_now:
            # asked for and impossible: a strict system fails the case rather than measure
            # without the layer it was asked to run
            return Contribution(start=found.info,
                                failure=f"Darshan requested but not run: {found.info['reason']}")
        return Contribution(start=found.info, env=found.env, launcher_options=found.launcher_options,
                            prefix=found.prefix)

    def observe(self, case, start, job: JobView, seen: dict) -> dict:
        if start is None:
            return {}
        return {OBSERVED: preload.observe(start, job.stage, job.own_files, case, seen, job.stderr)}

    def flags(self, observed) -> list[str]:
        dar = observed.get(OBSERVED) or {}
        out = []
        for m in dar.get("lustre_witness") or []:
            if m["status"] == "changed":
                out.append(f"Darshan saw {m['key']} {m['observed']} on {m['path']} "
                           f"(requested {m['requested']})")
        if dar.get("status") in ("unreadable", "no log", "incomplete"):
            out.append(f"Darshan log {dar['status']}: {dar.get('reason')}")
        elif dar.get("status") == "not available":
            out.append(f"Darshan requested but not run: {dar.get('reason')}")
        return out

    def rules(self) -> tuple:
        from .rules import RULES

        return RULES

    def evidence_specs(self) -> tuple:
        from .evidence import SPECS

        return SPECS

    def evidence(self, observed, params: dict) -> list:
        from .evidence import evidence

        return evidence(observed)

    def evidence_hint(self, source: str) -> str | None:
        if source != self.name:
            return None
        return ("run with `darshan: {enabled: true}` in the experiment (add `dxt: true` for the "
                "per-rank evidence: aggregators and hosts that wrote, rank time overlap)")

    def column_help(self) -> dict[str, str]:
        from .columns import COLUMNS

        return {name: f"{c.help} ({c.unit})" for name, c in COLUMNS.items()}

    def parse_columns(self, text: str) -> list[str]:
        from .columns import parse_columns

        return parse_columns(text)

    def column_values(self, observed, names: list[str]) -> list[tuple[str, float, str]]:
        from .columns import COLUMNS, column

        summary = (observed.get(OBSERVED) or {}).get("summary")
        out = []
        for name in names:
            value = column(summary, name) if summary else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append((name, float(value), COLUMNS[name].unit))
        return out


LAYER = DarshanLayer()

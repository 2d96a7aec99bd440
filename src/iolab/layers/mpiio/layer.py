"""The MPI-IO layer: the case's `mpiio.*` parameters as hints, given to the MPI library the way its
flavour takes them (hints.Flavour), and the hints in effect read back from what it printed."""

from __future__ import annotations

import re

from ...errors import IolabError
from ..base import (Contribution, EvidenceSpec, JobView, Layer, NotRecorded, SystemFact,
                    all_missing, gather)
from . import hints as H

PREFIX = H.PREFIX
OBSERVED = "mpiio_hints"
# The hint the MPI library prints for an aggregator parameter.
EFFECTIVE_HINT = {"mpiio.cb_nodes": "cb_nodes", "mpiio.aggregators": "cb_nodes",
                  "mpiio.aggregators_per_node": "cb_config_list"}
UNVERIFIED = "unverified"  # hints were requested, the MPI library printed none
ABSENT = "absent"          # the MPI library printed hints, not this one


def requested_hints(case) -> dict[str, str]:
    """The case's MPI-IO hints, expanded (aggregators -> cb_nodes...) and checked."""
    raw = {k.removeprefix(PREFIX): v for k, v in case.params.items() if k.startswith(PREFIX)}
    return H.expand_hints(raw, case.nodes, case.tasks_per_node)


def hint_value(key: str, text):
    """An effective hint as the MPI library printed it, typed like the parameter it answers:
    numbers as int, `cb_config_list` `*:N` (aggregators per node) as N; anything else as text."""
    hint = EFFECTIVE_HINT.get(key, key.removeprefix(PREFIX))
    if hint == "cb_config_list":
        m = re.search(r":(\d+)\s*$", str(text))
        return int(m.group(1)) if m and key == "mpiio.aggregators_per_node" else text
    if isinstance(text, str) and re.fullmatch(r"-?\d+", text.strip()):
        return int(text)
    return text


def _in_effect(hint: str):
    def read(effective: dict):
        if hint not in effective:
            raise NotRecorded(f"the MPI library printed its hints, not {hint}")
        value = hint_value(hint, effective[hint])
        if not isinstance(value, int):
            raise NotRecorded(f"{hint} {effective[hint]!r} is no number")
        return value
    return read


# What the MPI library says it used (its printed hints), which a request may not be
EVIDENCE = (
    EvidenceSpec("aggregators_in_effect", "ranks", OBSERVED, "aggregators the MPI library used "
                 "(cb_nodes of its effective hints)", "count", _in_effect("cb_nodes")),
    EvidenceSpec("collective_buffer_in_effect", "B", OBSERVED, "collective buffer size the MPI "
                 "library used (cb_buffer_size of its effective hints)", "bytes",
                 _in_effect("cb_buffer_size")),
)


def evidence(observed) -> list:
    hints = observed.get(OBSERVED)
    if not isinstance(hints, dict) or not hints:
        return all_missing(EVIDENCE, "the benchmark did not open its files through MPI-IO")
    if not isinstance(hints.get("effective"), dict):
        return all_missing(EVIDENCE, f"the MPI library printed no hints (under "
                                     f"{hints.get('flavour', 'an unknown flavour')})")
    return gather(EVIDENCE, hints["effective"], "the MPI-IO hints in effect")


def _count(value) -> int | None:
    return int(value) if str(value or "").isdigit() else None


class MpiioLayer(Layer):
    name = "mpiio"
    order = 20                          # its hints reach the benchmark the storage layer placed
    through_mpi_io = True
    none_set = "no hints"
    prefixes = (PREFIX,)
    observed_keys = (OBSERVED,)
    settings_title = "MPI-IO hint set"
    schema_files = ((__package__, "hints.json"),)
    # parameters whose value the MPI library may lower: plots draw the value in effect
    effective_axes = ("mpiio.cb_nodes", "mpiio.aggregators", "mpiio.aggregators_per_node")
    # hints that decide a file's layout when it is created (ROMIO's striping on Lustre)
    PLACEMENT = ("mpiio.striping_factor", "mpiio.striping_unit", "mpiio.start_iodevice",
                 "mpiio.romio_lustre_start_iodevice")

    def site_properties(self) -> dict:
        return {"mpi_flavour": {"enum": list(H.FLAVOURS)}}

    def mpi_runtime(self, site) -> str | None:
        return H.flavour(site.mpi_flavour).runtime

    def check(self, case) -> str | None:
        try:
            requested_hints(case)
        except IolabError as exc:
            return str(exc)
        return None

    def request(self, case, ctx) -> Contribution:
        if not ctx.bench.through_mpi_io(case):
            return Contribution()
        flavour = H.flavour(ctx.site.mpi_flavour)
        requested = requested_hints(case)
        plan, unrunnable = H.HintPlan(), []
        try:
            plan = flavour.translate(requested)
        except IolabError as exc:
            unrunnable.append(f"MPI flavour {flavour.name}: {exc}")
        start = {"flavour": flavour.name, "requested": requested, "verify": plan.verify,
                 "notes": plan.notes, "files": plan.files}
        return Contribution(start=start, files=plan.files, env=plan.env, unrunnable=unrunnable,
                            spec_options={"hints": requested,
                                          "show_hints": plan.verify != UNVERIFIED})

    def placement_keys(self, params: dict) -> list[str]:
        return [k for k in self.PLACEMENT if k in params]

    def observe(self, case, start, job: JobView, seen: dict) -> dict:
        if not start:
            return {}
        text = job.text
        effective = H.effective_hints(text, start["flavour"], job.env.get("DARSHAN_LOGHINTS"))
        return {OBSERVED: {
            "flavour": start["flavour"], "verify": start["verify"], "requested": start["requested"],
            "effective": effective,
            "comparison": H.compare_hints(start["requested"], effective, H.not_applicable(
                start["requested"], job.fs_type)),
            "echo": H.parse_ior_showhints(text), "notes": start["notes"]}}

    def failing(self, observed, verify) -> str | None:
        hints = observed.get(OBSERVED) or {}
        changed = [c for c in hints.get("comparison", []) if c["status"] in ("changed", "missing")]
        if verify.hints == "fail" and changed:
            return "MPI-IO hints not applied: " + "; ".join(
                f"{c['key']} requested {c['requested']}, effective {c['effective']}" for c in changed)
        return None

    def flags(self, observed) -> list[str]:
        hints = observed.get(OBSERVED) or {}
        out = []
        for c in hints.get("comparison", []):
            if c["status"] == "changed":
                out.append(f"hint {c['key']}: requested {c['requested']}, effective {c['effective']}")
            elif c["status"] == "missing":
                out.append(f"hint {c['key']}: requested {c['requested']}, not in effect (ignored)")
            elif c["status"] == "not applied":
                out.append(f"hint {c['key']} not applied: {c['reason']}")
        if hints and hints.get("requested") and hints.get("effective") is None:
            out.append(f"hints unverified under {hints['flavour']}")
        return out

    def system_facts(self, observed) -> list[SystemFact]:
        """The hints in effect that the case did not request: the MPI library's defaults (and
        its choices for the case, such as cb_nodes), where it printed them."""
        hints = observed.get(OBSERVED) or {}
        effective = hints.get("effective")
        if not isinstance(effective, dict):
            return []
        asked = hints.get("requested") or {}
        return [SystemFact("MPI-IO defaults (hints in effect, not requested)", f"MPI-IO {k}", str(v))
                for k, v in sorted(effective.items()) if k not in asked]

    def effective(self, observed, key: str):
        """The value in effect, typed as requested (cb_nodes 4 -> 4, aggregators -> cb_nodes,
        aggregators_per_node -> N of cb_config_list *:N); None when the library did not say."""
        effective = (observed.get(OBSERVED) or {}).get("effective")
        hint = EFFECTIVE_HINT.get(key, key.removeprefix(PREFIX))
        if not isinstance(effective, dict) or hint not in effective:
            return None
        return hint_value(key, effective[hint])

    def effective_shown(self, observed, key: str):
        """What a table shows beside the request: the value in effect, typed; UNVERIFIED when
        the library printed no hints, ABSENT when it printed others; None when none was asked."""
        hints = observed.get(OBSERVED)
        if not hints:
            return None
        if hints.get("effective") is None:
            return UNVERIFIED
        got = self.effective(observed, key)
        if got is not None:
            return got
        return hints["effective"].get(key.removeprefix(PREFIX), ABSENT)

    def reports_effective(self, key: str) -> bool:
        return key.startswith(PREFIX)

    def rules(self) -> tuple:
        from .rules import RULES

        return RULES

    def evidence_specs(self) -> tuple:
        return EVIDENCE

    def evidence(self, observed, params: dict) -> list:
        return evidence(observed)

    def evidence_hint(self, source: str) -> str | None:
        if source != OBSERVED:
            return None
        return ("recorded where the benchmark opens its files through MPI-IO (IOR with `api: "
                "MPIIO`, BTIO, h5bench) and the MPI library prints the hints it used")

    # --- `iolab table --mpiio cb_nodes,aggregator_ranks` (columns.py)
    title = "MPI-IO"
    text = True

    def column_help(self) -> dict[str, str]:
        from .columns import HELP

        return HELP

    def column_label(self, name: str) -> str:
        from .columns import LABELS

        return LABELS[name]

    def column_text(self, record, name: str) -> tuple[str | None, str | None]:
        from .columns import column_text

        return column_text(record.observed.get(OBSERVED), name)

    def aggregators(self, observed) -> tuple[int | None, int | None]:
        """The aggregator count asked for, and the one the library says it used."""
        hints = observed.get(OBSERVED) or {}
        return tuple(_count((hints.get(k) or {}).get("cb_nodes")) for k in ("requested", "effective"))


LAYER = MpiioLayer()

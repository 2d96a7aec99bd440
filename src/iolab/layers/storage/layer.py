"""The storage layer: where a case's fresh directory is (`storage`: scratch, burst_buffer,
node_local) and how its file system lays it out (one module per file system, base.FileSystem).

Only the case directory is laid out, so only the data files the benchmark writes in it inherit
the layout: iolab's own files and the benchmark's result files stay in the stage directory. A
request for a file system the case directory is not on is recorded as not applied, with why.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..base import Contribution, JobView, Layer, ParamExample, SystemFact
from . import base, place
from .base import file_systems, requests

STORAGE = "storage"
NODE_LOCAL = "node_local"       # a target on each node's own disk: another job may not see it
NOT_APPLIED = "not applied"
# The older spelling of `require_file_system: lustre`, still read as that (with a note)
REQUIRE_LUSTRE = "require_lustre"
# The columns a table may add (`iolab table --storage osds`), from the server-side witnesses
COLUMNS = {"osds": "OSDs that hold the objects of the data files mapped (CephFS: rados ls and "
                   "ceph osd map; at most 4 files, 32 objects each)",
           "objects": "objects of those files, as rados ls lists them",
           "bytes_per_osd": "MiB of those files' objects on each OSD of the cluster, one column per "
                            "OSD, 0 where none is (CephFS: rados stat of each object, summed over "
                            "the OSDs that hold it; shown only where every object of every data "
                            "file was sized)"}


def prerun_lines(case_dir: str, params: dict, stop_on_failure: bool = True) -> list[str]:
    """After the case directory exists: note its file-system type, then lay it out where it is of
    the type asked for."""
    lines = [base.detect_line(case_dir)]
    for fs, req in requests(params):
        lines += fs.prerun(case_dir, req, stop_on_failure)
    return lines


def observed_layout(fs: base.FileSystem, stage: Path, req: dict) -> dict:
    """What the job saw of one file system's request: applied, or not and why."""
    fstype = base.read_fstype(stage)
    if fstype is None:
        # the job never reached its detection line: nothing was laid out, so nothing was
        # "not applied" either (the record's error says why it did not run)
        return {"requested": req} if req else {}
    out: dict = {"fs_type": fstype}
    if not req:
        return out
    out["requested"] = req
    if not fs.matches(fstype):
        out.update(applied=False, reason=f"{fstype}: no striping")
        return out
    return fs.observe(stage, req, out)


class StorageLayer(Layer):
    name = STORAGE
    order = 10                          # the case directory exists before anything runs in it
    title = "Storage"
    keys = (STORAGE,)
    example_param = ParamExample("kaust-stripe-count", "lustre.stripe_count", "1", "4")
    example_columns = ("cephfs-striping", "osds,objects")

    # read from the file-system modules each time: one added is seen once file_systems() is
    @property
    def schema_files(self):
        package = base.__package__
        return (*((package, fs.schema_file) for fs in file_systems() if fs.schema_file),
                (package, "storage.json"))

    @property
    def prefixes(self):
        return tuple(fs.prefix for fs in file_systems())

    @property
    def observed_keys(self):
        return (STORAGE, *(fs.observed_key for fs in file_systems()))

    @property
    def preferred_axes(self):
        return tuple(f"{fs.prefix}stripe_count" for fs in file_systems())

    def column_label(self, name: str) -> str:
        """'OSDs with data', 'Objects', 'Data on osd.2' (one column per OSD)."""
        column, _, part = name.partition(".")
        words = {"osds": "OSDs with data", "objects": "Objects", "bytes_per_osd": "Data on"}
        if column not in words:
            return super().column_label(name)
        return f"{words[column]} {part}" if part else words[column]

    def file_systems(self) -> tuple:
        return file_systems()

    def older_spellings(self, doc, data: dict) -> tuple[dict, tuple[str, ...]]:
        """`require_lustre: true`, read as `require_file_system: lustre` with a note; beside
        another require_file_system it is an error."""
        if not data.get(REQUIRE_LUSTRE):
            return {}, ()
        required = data.get("require_file_system")     # short: the schema's pattern checked it
        if required not in (None, "lustre"):
            raise doc.error((REQUIRE_LUSTRE,), f"{REQUIRE_LUSTRE}: true and require_file_system: "
                            f"{required!r} ask for two file systems", hint="keep one")
        where = f"{doc.file}:{doc.line((REQUIRE_LUSTRE,))}: {REQUIRE_LUSTRE}"
        return {"require_file_system": "lustre"}, (
            f"{where}: the older spelling of require_file_system: lustre, read as that; "
            "write require_file_system: lustre",)

    def site_from_env(self) -> dict:
        # shared by every node of the shipped systems: they share this machine's file systems
        return {"scratch": os.environ.get("IOLAB_SCRATCH", "/tmp/iolab-scratch"),
                NODE_LOCAL: os.environ.get("IOLAB_NODE_LOCAL", "/tmp")}

    def private_data(self, case) -> str | None:
        return "node-local data" if case.get(STORAGE) == NODE_LOCAL else None

    def preflight(self, items, say, locate) -> list:
        return place.preflight(items, say, locate)

    def check(self, case) -> str | None:
        for fs, req in requests(case.params):
            problem = fs.check(req)
            if problem:
                return problem
        return None

    def request(self, case, ctx) -> Contribution:
        where = place.place(case, ctx.site, ctx.partition, experiment=ctx.exp.id, run_id=ctx.run_id,
                            repetition=ctx.repetition, dry_run=ctx.dry_run,
                            require_file_system=ctx.exp.require_file_system)
        keep = any(fs.keeps_files(req) and where.on(fs) for fs, req in requests(case.params))
        return Contribution(start=where, case_dir=where.case_dir, spec_options={"keep_files": keep},
                            unrunnable=list(where.unrunnable))

    def wrap(self, case, ctx, spec, start) -> Contribution:
        stop = ctx.exp.verify.layout == "fail"
        post = [line for fs, req in requests(case.params) for line in fs.postrun(start.case_dir, req)]
        return Contribution(prerun=prerun_lines(start.case_dir, case.params, stop), postrun=post)

    def placement_keys(self, params: dict) -> list[str]:
        return [STORAGE, *sorted(k for k in params if k.startswith(self.prefixes))]

    def observe(self, case, start, job: JobView, seen: dict) -> dict:
        out = {STORAGE: {"target": case.get(STORAGE, "scratch"), "path": job.case_dir}}
        return {**out, **self.observe_files(case, job.stage)}

    def observe_files(self, case, stage: Path) -> dict:
        asked = dict(requests(case.params))
        seen = {fs.observed_key: observed_layout(fs, stage, asked.get(fs, {})) for fs in file_systems()}
        return {key: lay for key, lay in seen.items() if lay}

    def file_system(self, observed) -> str | None:
        for fs in file_systems():
            fstype = (observed.get(fs.observed_key) or {}).get("fs_type")
            if fstype:
                return fstype
        return None

    def system_facts(self, observed) -> list[SystemFact]:
        target = (observed.get(STORAGE) or {}).get("target") or "scratch"
        fstype = self.file_system(observed)
        out = [SystemFact("file system", f"file system ({target})", fstype)] if fstype else []
        for fs in file_systems():
            found = fs.system_facts(observed.get(fs.observed_key) or {})
            out += [SystemFact(f"{fs.title} defaults", f"{fs.title} {k}", str(v))
                    for k, v in sorted(found.items())]
        return out

    def failing(self, observed, verify) -> str | None:
        for fs in file_systems():
            lay = observed.get(fs.observed_key) or {}
            if verify.layout == "fail" and lay.get("mismatches"):
                return f"{fs.title or fs.name} layout not as requested: {lay['reason']}"
        return None

    def flags(self, observed) -> list[str]:
        out = []
        for fs in file_systems():
            lay = observed.get(fs.observed_key) or {}
            if lay.get("requested") and lay.get("applied") is False:
                out.append(f"striping not applied: {lay.get('reason', 'unknown reason')}")
            elif lay.get("requested") and lay.get("verified") is False:
                unverified = lay.get("unverified")
                out.append("striping unverified: " + ", ".join(
                    f"{u['key']}={u['requested']}" for u in unverified) if unverified
                    else "striping unverified")
        return out

    def _owner(self, key: str):
        return next((fs for fs in file_systems() if key.startswith(fs.prefix)), None)

    def file_system_of(self, key: str) -> str | None:
        fs = self._owner(key)
        return fs.name if fs else None

    def derived_columns(self):
        return {name: col for fs in file_systems() for name, col in fs.derived_columns().items()}

    def reports_effective(self, key: str) -> bool:
        fs = self._owner(key)
        return bool(fs and fs.reports_effective(key.removeprefix(fs.prefix)))

    def effective(self, observed, key: str):
        fs = self._owner(key)
        if not fs:
            return None
        return fs.effective(observed.get(fs.observed_key) or {}, key.removeprefix(fs.prefix))

    def effective_shown(self, observed, key: str):
        """Beside a requested layout field: the value the witnesses found, or NOT_APPLIED where
        the layout was not applied and no file shows one; None where nothing was asked."""
        fs = self._owner(key)
        lay = (observed.get(fs.observed_key) or {}) if fs else {}
        if not lay.get("requested"):
            return None
        got = self.effective(observed, key)
        if got is None and lay.get("applied") is False:
            return NOT_APPLIED
        return got

    def column_help(self) -> dict[str, str]:
        return COLUMNS

    def column_values(self, observed, names: list[str]) -> list[tuple[str, float, str]]:
        """The asked columns a record has; a column of several (bytes_per_osd: one per OSD) gives
        each as `<name>.<part>`."""
        given: dict[str, tuple[float, str]] = {}
        for fs in file_systems():
            given.update(fs.columns(observed.get(fs.observed_key) or {}))
        return [(key, *value) for name in names for key, value in given.items()
                if key == name or key.startswith(name + ".")]

    def rules(self) -> tuple:
        from .rules import RULES

        return RULES

    def evidence_specs(self) -> tuple:
        return tuple(spec for fs in file_systems() for spec in fs.evidence_specs)

    def evidence(self, observed, params: dict) -> list:
        return [e for fs in file_systems() for e in fs.evidence(observed.get(fs.observed_key) or {})]

    def evidence_hint(self, source: str) -> str | None:
        fs = next((fs for fs in file_systems() if fs.name == source), None)
        if fs is None:
            return None
        return (f"recorded where a case's directory is on {fs.title} and the storage layer "
                f"can read where its data went (docs/striping.md)")

    def special_value(self, key: str, value) -> str | None:
        for fs in file_systems():
            if key.startswith(fs.prefix):
                return fs.special_value(key.removeprefix(fs.prefix), value)
        return None

    def not_applied(self, observed, key: str) -> str | None:
        for fs in file_systems():
            if not key.startswith(fs.prefix):
                continue
            lay = observed.get(fs.observed_key) or {}
            if lay.get("requested") and lay.get("applied") is False:
                return f"striping not applied: {lay.get('reason', 'unknown reason')}"
        return None


LAYER = StorageLayer()

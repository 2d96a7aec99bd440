"""Another site's study re-run here (`iolab reproduce FILE --system SYSTEM`): the experiment as a
bundle's runs ran it (the YAML as recorded, its profile, its run order and seed), run on a system
of this site through ReFrame as `scripts/run` runs it, as a run of this site's own.

The bundle is checked whole first (results/unbundle.verified: the checks `iolab import-bundle`
makes) and nothing is stored before the system has been asked whether it can run every case
(rfm/preflight). The YAML never goes into experiments/: as for a one-case reproduction, the run
is made in a project made for it (campaign.project_for) that writes to this results directory,
so an experiment this project lacks, or has in another version, runs as recorded. A rerun
continuation (rfm/continuation.py) fixes the profile (none included) and the order; the new
run's manifest names what it re-runs (`reruns`: the site, its runs, the bundle's sha256).
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from ..experiment.load import load_text, sha256_text
from ..experiment.order import Order
from ..results.manifests import read_typed
from ..results.runfiles import MANIFEST
from ..results.provenance import git_state
from ..results.run import load_run
from ..results.unbundle import Imported, Verified
from ..rfm import preflight
from ..rfm.continuation import RERUN, Continuation
from . import campaign


@dataclass
class Study:
    """One experiment as run in a bundle: its runs that ran the same YAML, profile and order
    (a run and its continuations, or runs in matrix order, which draws no seed)."""
    experiment: str
    yaml: str
    sha256: str
    profile: str | None
    order: dict | None
    runs: list[str]             # oldest first
    firsts: list[str]           # of those, the first run of each chain: what a comparison names

    def key(self) -> tuple:
        return self.sha256, self.profile, json.dumps(self.order, sort_keys=True)

    def describe(self) -> str:
        order = Order.from_dict(self.order).describe() if self.order else \
            "no recorded order (the new run draws its own)"
        return (f"YAML sha256 {self.sha256[:12]}, profile {self.profile or '(none)'}, {order}")


def studies(bundle: Verified) -> list[Study]:
    """The bundle's experiments as run, in the order of their first runs."""
    out: dict[tuple, Study] = {}
    for run_id in sorted(bundle.contents.runs):
        study = _study_of(bundle, run_id)
        found = out.setdefault(study.key(), study)
        if found is not study:
            found.runs.append(run_id)
        if bundle.contents.runs[run_id].get("parent") not in bundle.contents.runs:
            found.firsts.append(run_id)
    return list(out.values())


def _study_of(bundle: Verified, run_id: str) -> Study:
    """What one run ran, from its manifest: a YAML copy that is not the one its sha256 names, a
    profile that is no name or an order that is none is refused (the chain checks bytes, not
    what they say)."""
    manifest = bundle.manifest(run_id)
    where = f"{bundle.contents.experiment}/{run_id}/{MANIFEST}"
    text, sha, profile = (manifest.get(k) for k in ("experiment_yaml", "experiment_sha256", "profile"))
    if not isinstance(text, str) or not text:
        raise IolabError(f"{where}: run {run_id} recorded no copy of its experiment YAML: its "
                         "study cannot be re-run", file=str(bundle.file))
    if sha != sha256_text(text):
        raise IolabError(f"{where}: the experiment YAML it holds has sha256 "
                         f"{sha256_text(text)[:12]}, the manifest says {str(sha)[:12]}",
                         file=str(bundle.file))
    if profile is not None and not isinstance(profile, str):
        raise IolabError(f"{where}: profile {profile!r} is no profile's name", file=str(bundle.file))
    order = manifest.get("order")       # None: a run made before runs recorded their order
    if order is not None:
        try:
            Order.from_dict(order)
        except ValueError as exc:
            raise IolabError(f"{where}: {exc}", file=str(bundle.file)) from None
    return Study(bundle.contents.experiment, text, sha, profile, order, [run_id], [])


def chosen(found: list[Study], run: str | None, site: str) -> Study:
    """The study a bundle's run ran (by id, a unique prefix or suffix), or the bundle's only one."""
    if run is None:
        if len(found) == 1:
            return found[0]
        listed = "; ".join(f"{', '.join(f'{r}@{site}' for r in s.runs)}: {s.describe()}"
                           for s in found)
        raise IolabError(f"the bundle holds {len(found)} experiments as run (runs that differ in "
                         f"YAML, profile or order): {listed}",
                         hint="name one of its runs: iolab reproduce FILE RUN --system SYSTEM")
    # runs of one study (a chain) that all match name it as well as one
    matches = [s for s in found if any(r == run or r.startswith(run) or r.endswith(run)
                                       for r in s.runs)]
    if len(matches) != 1:
        runs = ", ".join(r for s in found for r in s.runs)
        what = "runs of several experiments as run match" if matches else "no run of the bundle matches"
        raise IolabError(f"{what} {run!r}", hint=f"its runs: {runs}")
    return matches[0]


@dataclass
class Rerun:
    """A study of a checked bundle, about to run on a system here in a project made for it."""
    study: Study
    site: str                   # the site its runs are filed under here
    bundle: str                 # the bundle's file name
    bundle_sha256: str
    project: Path               # the project made for it (a temporary directory)
    checkout: Path
    results: Path
    system: str
    config: Path

    @classmethod
    def of(cls, bundle: Verified, run: str | None, site: str, into: Path, checkout: Path,
           results: Path, system: str, config: Path) -> Rerun:
        """The study the bundle's run ran (or its only one), in a project made at `into`;
        refused, naming the first reason, when the system cannot run it."""
        study = chosen(studies(bundle), run, site)
        job = cls(study, site, bundle.file.name, bundle.sha256,
                  campaign.project_for(study.experiment, study.yaml, checkout, into), checkout,
                  results, system, config)
        refused = job.refusals()
        if refused:
            more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
            raise IolabError(f"system {system} cannot run {study.experiment} as run "
                             f"{study.runs[0]}@{site}: {refused[0]}{more}",
                             hint="nothing was stored or run")
        return job

    def experiment(self):
        """The experiment as run, loaded as the ReFrame loader will load it; a problem names the
        run that recorded the YAML."""
        shown = f"{self.study.runs[0]}@{self.site}:{self.study.experiment}.yaml"
        path = self.project / "experiments" / f"{self.study.experiment}.yaml"
        return load_text(self.study.yaml, path, self.study.profile, shown)

    def continuation(self, differences: list[str]) -> Continuation:
        source = {"site": self.site, "runs": self.study.runs, "bundle": self.bundle,
                  "bundle_sha256": self.bundle_sha256}
        return Continuation(self.study.experiment, "", "", self.study.profile, kind=RERUN,
                            order=self.study.order, changes=differences, source=source,
                            code=git_state(self.checkout))

    def env_changes(self) -> dict:
        # the results here, the project made for it (not IOLAB_ROOT's), the profile as run
        return {"IOLAB_RESULTS": str(self.results), "IOLAB_ROOT": None,
                "IOLAB_PROFILE": self.study.profile}

    def refusals(self) -> list[str]:
        """Why the system cannot run the experiment as run (rfm/preflight), in the environment
        ReFrame will have."""
        cont = self.continuation([])
        with tempfile.TemporaryDirectory(prefix="iolab-preflight-") as tmp:
            env = campaign.reframe_env(cont, Path(tmp) / "continuation.json",
                                       env_changes=self.env_changes())
            return preflight.refusals(self.experiment(), self.config, env, Path(tmp))

    def dry_run(self) -> None:
        """What would run: ReFrame's command line, printed; nothing stored or run."""
        campaign.run_reframe(self.checkout, self.continuation([]), self.config, None,
                             dry_run=True, cwd=self.project, env_changes=self.env_changes())

    def run(self, stored: Imported) -> tuple[int, Path | None]:
        """ReFrame on every job of the experiment as run, the bundle's runs stored; (exit
        status, the new run or None). What a re-run here cannot keep as it was (the system, the
        host, the code, a binary) is said and recorded in the new run's manifest."""
        first = stored.target / self.study.runs[0]
        differ = [f"site {stored.site}'s run ran on its system "
                  f"{read_typed(first)[0].get('system') or '(not recorded)'}; this one runs on "
                  f"{self.system} here",
                  *campaign.reproduce_differences(load_run(first, self.checkout), self.checkout)]
        for line in differ:
            print(f"iolab: warning: {line}", file=sys.stderr)
        status, new = campaign.run_reframe(self.checkout, self.continuation(differ),
                                           self.config, None, cwd=self.project,
                                           env_changes=self.env_changes())
        if new is not None:
            self.check_as_run(new)
        return status, new

    def check_as_run(self, new: Path) -> None:
        """The new run ran the experiment as the bundle's run did: the same YAML bytes, profile
        and order, or it is no re-run of that study (said, never left to a comparison)."""
        manifest = read_typed(new)[0]
        want = {"YAML sha256": ("experiment_sha256", self.study.sha256),
                "profile": ("profile", self.study.profile)}
        if self.study.order is not None:        # else the new run drew its own
            want["order"] = ("order", self.study.order)
        for what, (key, value) in want.items():
            if manifest.get(key) != value:
                raise IolabError(f"run {new.name} ran {self.study.experiment} with {what} "
                                 f"{manifest.get(key)!r}, not the bundle's {value!r}: it is no "
                                 "re-run of its study",
                                 hint=f"see `iolab runs {self.study.experiment} {new.name}`")


def systems(checkout: Path) -> str:
    """The systems `scripts/run` knows: reframe/config/*.py, by name."""
    return ", ".join(sorted(p.stem for p in (checkout / "reframe" / "config").glob("*.py"))) or "none"


def configuration(checkout: Path, system: str) -> Path:
    """reframe/config/SYSTEM.py, as `scripts/run EXPERIMENT SYSTEM` takes it; an unknown name is
    refused with the systems there are."""
    path = checkout / "reframe" / "config" / f"{system}.py"
    if "/" in system or system.startswith(".") or not path.is_file():
        raise IolabError(f"--system {system}: no system {system!r} (no reframe/config/{system}.py)",
                         hint=f"the systems: {systems(checkout)}")
    return path

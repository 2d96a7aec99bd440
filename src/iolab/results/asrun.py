"""The experiment a run ran, from the manifest's copy of its YAML through load.py (the only YAML
reader). A copy the current schema refuses (an old run) leaves `experiment` None and says why in
the notes; the tables then fall back to the benchmark's defaults and the published pairing of
the experiment as it is now. `of(run)` is the one way to it, made once per run.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from . import cache
from ..errors import IolabError
from ..units import QUOTED, shown as shown_value
from ..experiment import reportspec
from .run import Run, derived
from .runfiles import MANIFEST


def of(run: Run) -> AsRun:
    """The experiment `run` ran, read once per run."""
    return derived(run, AsRun)


def share(source: Run, run: Run) -> None:
    """`run` (some or more of `source`'s records, under its manifest) reads the experiment
    `source` has already read, rather than loading it again."""
    if AsRun in source._derived:
        run._derived[AsRun] = source._derived[AsRun]


class AsRun:
    """The experiment as it was run (the manifest's copy of its YAML, loaded again), its report
    settings and matrix order, of one run."""

    def __init__(self, run: Run):
        self.run = run

    @cached_property
    def _loaded(self):
        from ..experiment import load

        run = self.run
        text = run.manifest.experiment_yaml
        if not text:
            return None, "the manifest has no copy of the experiment"
        # another site's or a hand-edited manifest: a value of the wrong type is named, never
        # handed on (a profile that is a mapping ended the loader in a TypeError)
        if not isinstance(text, str):
            return None, "the manifest's experiment_yaml is not text"
        if not isinstance(run.manifest.profile, (str, type(None))):
            return None, (f"the manifest's profile is not a profile's name: "
                          f"{shown_value(run.manifest.profile, QUOTED)}")
        shown = f"{run.path / 'manifest.json'}: experiment_yaml"

        def loaded():
            return load.load_text(text, Path(f"{run.manifest.experiment}.yaml"),
                                  run.manifest.profile, shown)
        try:
            if not run.reading.key:
                return loaded(), None
            # a campaign's table reads it each time; checked once per YAML, profile and iolab
            key = cache.key_of([text, run.manifest.profile or ""])
            return cache.memo(run.path / MANIFEST, "experiment", key, loaded, load.Experiment), None
        except IolabError as exc:
            return None, str(exc).splitlines()[0]

    @property
    def experiment(self):
        """The experiment as run (load.Experiment), or None when its copy no longer loads."""
        return self._loaded[0]

    @property
    def why_not(self) -> str | None:
        """Why the experiment as run does not load (None: it loads)."""
        return self._loaded[1]

    @cached_property
    def now(self):
        """The experiment as it is now in the project (experiments/<id>.yaml), or None."""
        root = self.run.project_root
        if root is None:
            return None
        from ..experiment import load

        try:
            return load.load_experiment(root / "experiments" / f"{self.run.experiment_id}.yaml")
        except IolabError:
            return None

    @cached_property
    def report(self) -> reportspec.Report:
        """The experiment's `report:` section as run; for a run whose copy no longer loads, the
        current experiment's published pairing (the studies it is set against) and defaults."""
        if self.experiment is not None:
            return self.experiment.report
        if self.now is not None:
            return reportspec.Report(published=self.now.report.published)
        return reportspec.Report()

    @cached_property
    def matrix_order(self) -> dict:
        """The order of the experiment's matrix (as run, else as it is now), which tables'
        rows follow (experiment.matrix.matrix_order); {} when neither loads or expands."""
        from ..experiment.matrix import matrix_order

        def order_of(exp):
            try:
                return matrix_order(exp)
            except IolabError:
                return None
        run = self.run
        if self.experiment is not None and run.reading.key:
            # a campaign's matrix expanded takes longer than the rest of its warm table
            key = cache.key_of([run.manifest.experiment_yaml, run.manifest.profile or ""])
            order = cache.memo(run.path / MANIFEST, "matrix-order", key,
                               lambda: order_of(self.experiment), dict)
        else:
            order = order_of(self.experiment) if self.experiment is not None else None
        if order is None and self.now is not None:
            order = order_of(self.now)
        return order if order is not None else {}

    def zip_groups(self, part: str) -> list[set]:
        """Parameter groups the experiment varies together (its `zip`s) in a part."""
        exp = self.experiment
        for p in exp.parts if exp is not None else ():
            if p.name == part:
                return [set(z) for z in p.zips]
        return []

"""The verbs the layers offer (layers.base.Layer.verbs), made like the modules of cli/: each is
given the services it asks for (VerbServices) and listed where it says (after its AFTER)."""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from .common import add_include_imported, project_dir


def _runs_named(run_id: str) -> list[str]:
    from ..results.runfiles import results_root

    return sorted(p.parent.name for p in results_root(project_dir()).glob(f"*/{run_id}"))


def _load_run(experiment: str, run_id: str | None, include_imported: bool):
    from ..results.run import load_run, run_dir
    from ..results.runfiles import results_root

    return load_run(run_dir(results_root(project_dir()), experiment, run_id, include_imported))


def services():
    from ..layers.base import VerbServices
    from ..results.run import raw_file
    from ..results.runfiles import is_experiment_id
    from ..results.upgrade import names_case

    return VerbServices(add_include_imported=add_include_imported,
                        is_experiment_id=is_experiment_id, runs_named=_runs_named,
                        load_run=_load_run, names_case=names_case, raw_file=raw_file)


@dataclass(frozen=True)
class LayerVerb:
    """A layer's verb module, with the face of cli/'s (VERB, EXAMPLES, add_parser(sub))."""

    module: ModuleType

    @property
    def VERB(self) -> str:      # noqa: N802 (the name cli/'s modules give it)
        return self.module.VERB

    @property
    def EXAMPLES(self) -> list[str]:     # noqa: N802
        return self.module.EXAMPLES

    def add_parser(self, sub) -> None:
        self.module.add_parser(sub, services())


def with_layer_verbs(verbs: tuple) -> tuple:
    """cli/'s verbs with each layer's verb after the one it names (AFTER), in the layers' order."""
    from ..layers.registry import registry

    out = list(verbs)
    for layer in registry():
        for module in layer.verbs():
            after = next(i for i, v in enumerate(out) if v.VERB == module.AFTER)
            out.insert(after + 1, LayerVerb(module))
    return tuple(out)

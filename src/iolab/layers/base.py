"""A layer of the I/O stack, as the rest of iolab sees it: what it adds to a case's job, and what
it reads back of what the system applied.

Planning, observing, records, tables, searches and plots loop over the layers the registry finds
(layers/registry.py: each package of layers/ whose `layer` module defines LAYER) and know none by
name. A layer owns its parameters (the keys that start with
one of its `prefixes`, or are one of its `keys`), its parts of a record's `observed`, and every
word about them: the job lines that apply them, the reading of their witnesses, the flags that
say what was not applied, and the value in effect where it differs from the request.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from collections.abc import Callable
from typing import Any

from ..errors import IolabError


@dataclass
class Contribution:
    """What a layer adds to one case's job. Lines and `prefix` are shell text; `env` holds values
    (made shell words where they are exported)."""

    start: Any = None                   # what its observation starts from (kept with the plan)
    case_dir: str | None = None         # where the case's directory is (the storage layer's)
    spec_options: dict = field(default_factory=dict)    # for the benchmark's run_spec
    files: dict[str, str] = field(default_factory=dict)  # stage-relative name -> content
    env: dict[str, str] = field(default_factory=dict)
    packages: list[str] = field(default_factory=list)   # more the stack must load (modules)
    prerun: list[str] = field(default_factory=list)     # once the case directory exists
    postrun: list[str] = field(default_factory=list)    # after the benchmark's end is noted
    launcher_options: list[str] = field(default_factory=list)
    prefix: str | None = None           # before the executable, where the launcher cannot
    unrunnable: list[str] = field(default_factory=list)
    failure: str | None = None


@dataclass(frozen=True)
class PlanContext:
    """What a layer may know of the case's job when it contributes."""

    exp: Any
    site: Any                           # the partition's SiteConfig
    partition: str                      # its full name
    run_id: str
    repetition: int
    stage: Path
    dry_run: bool
    bench: Any = None                   # the benchmark's descriptor
    policy: Any = None                  # the launcher's policy (rfm/launch.py)
    stack: Any = None                   # where the binaries come from (layers/software.py)
    case_dir: str = ""                  # where the storage layer put the case


@dataclass(frozen=True)
class JobView:
    """What a finished job left for the layers to read."""

    stage: Path
    stdout: str | None
    stderr: str | None
    env: dict[str, str]                 # the values the job exported
    own_files: list[str]                # iolab's files in the stage directory
    case_dir: str | None = None         # as the job wrote it down
    fs_type: str | None = None          # of the case directory, once the storage layer read it

    @property
    def text(self) -> str:
        return (self.stdout or "") + "\n" + (self.stderr or "")


@dataclass(frozen=True)
class DerivedColumn:
    """A column a report may add that is computed from a case's parameters (`report: {derived:
    [...]}`), here from the size of one file the case writes (the benchmark's descriptor says it)."""

    header: str                         # with its unit ("OSTs by sqrt(GB) Rule")
    value: Callable[[int], Any]         # of the file size in bytes
    divisor: float | None = None        # what a table divides the value by
    # the file systems whose layouts it speaks of (an allow-list): a part whose cases ask the
    # layout of any other file system leaves it out
    file_systems: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuntimeLibrary:
    """A library a layer preloads into the benchmark. It is no benchmark, but the stack supplies
    it like one (software.Stack.preload finds it); the words here are how each provider names it."""

    module: str                         # its name in a modules provider's `modules`
    package: str                        # its Spack package
    file: str                           # the shared library ("libdarshan.so")
    links: tuple[str, ...] = ()         # libraries its recipe links (their modules load first)
    config_key: str = ""                # extras['iolab']['stack'] key naming it where none can tell
    env_var: str = ""                   # the variable naming it, on a PATH stack
    config_tool: tuple[str, ...] = ()   # a command whose -L words name its directory
    module_roots: tuple[str, ...] = ()  # variables its module sets to its prefix, in order


@dataclass(frozen=True)
class StackPackages:
    """What the built Spack stack holds for a layer (stack/build.py)."""

    view_files: tuple[str, ...] = ()    # a reused environment's view must still have them
    no_checksum: tuple[str, ...] = ()   # bundled archives that are not the ones their recipes name


@dataclass(frozen=True)
class VerbServices:
    """What the CLI lends a verb a layer offers (Layer.verbs): layers/ sit below results/ and
    cli/, so the verb asks through these for a run and for the options every verb shares."""

    add_include_imported: Callable      # (parser): its --include-imported option
    is_experiment_id: Callable          # (text) -> whether it is one
    runs_named: Callable                # (run id) -> the experiments that have a run of that id
    load_run: Callable                  # (experiment id, run id or None, include_imported) -> Run
    names_case: Callable                # (case id given by hand, recorded) -> whether it names it
    raw_file: Callable                  # (run, record, names, limit) -> a file kept with it, or None


@dataclass(frozen=True)
class ParamExample:
    """One of a layer's parameters as `iolab VERB --help` examples show it: a shipped experiment
    that varies it, a baseline value and another (the verbs ask the registry, so a site without
    the layer shows another layer's example, never a dead one)."""

    experiment: str
    key: str
    baseline: str
    other: str


@dataclass(frozen=True)
class SystemFact:
    """One thing a job's witnesses saw of the system that its case did not ask for
    (Layer.system_facts): set beside another run's, it says what differed between two systems."""

    group: str          # its kind, named once where the other run recorded none of the kind
    key: str            # as a difference reads: "<key>: A vs B"
    value: str


class NotRecorded(Exception):
    """Why a piece of evidence has no value in a record (str() is the reason, for a reader)."""


@dataclass(frozen=True)
class Evidence:
    """One measured fact of a job that may explain its result (issue 39): OSDs that received
    data, small writes' share, aggregators in effect. `value` None always comes with `why`:
    absent is never 0, since a 0 would read as a measurement."""

    name: str
    value: float | None
    unit: str
    source: str                         # the layer (or file system) or benchmark that measured it
    why: str | None = None              # why there is no value


# What a piece of evidence is, for statistics later: a count, an amount of bytes, a time, the
# job's own I/O time (its slowest rank's, which a bandwidth is computed over), a share in percent,
# a share of the job's own time in percent (which grows when the rest of that time shrinks) or a
# ratio (1 = even). The job's time and its shares move with a rate by construction: `iolab why`
# sets them apart.
EVIDENCE_KINDS = ("count", "bytes", "time", "job_time", "share", "time_share", "ratio")


@dataclass(frozen=True)
class EvidenceSpec:
    """A piece of evidence as its layer or benchmark declares it: the list of these is what
    docs/evidence.md shows, so a name is documented where it is measured. `read` takes the part
    of the record its owner reads and gives a number, None (with `absent` as the reason) or
    raises NotRecorded."""

    name: str
    unit: str
    source: str
    help: str
    kind: str = "count"
    read: Callable | None = field(default=None, compare=False, repr=False)
    absent: str = "not recorded"        # the reason when `read` gives None

    def __post_init__(self):
        if self.kind not in EVIDENCE_KINDS:
            raise ValueError(f"evidence {self.name}: kind {self.kind!r} not one of {EVIDENCE_KINDS}")

    def of(self, value) -> Evidence:
        """The evidence with `value`; not recorded where it is no finite number."""
        if value is None:
            return self.missing(self.absent)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
                or value in (float("inf"), float("-inf")):
            return self.missing(f"not a number in the record: {value!r}")
        return Evidence(self.name, float(value), self.unit, self.source)

    def missing(self, why: str) -> Evidence:
        # the same few reasons over a run's records: one object each (a digest folds 100k)
        got = _MISSING.get((id(self), why))
        if got is None or got[0] is not self:
            if len(_MISSING) > 10_000:
                _MISSING.clear()
            got = _MISSING[(id(self), why)] = (self, Evidence(self.name, None, self.unit,
                                                               self.source, why))
        return got[1]


_MISSING: dict[tuple, Evidence] = {}


def gather(specs, part, where: str) -> list[Evidence]:
    """Each spec's evidence read from `part` (a record's part, as recorded). A part damaged
    where a spec reads it (a key missing, a list where a number was) gives that evidence as
    not recorded, with what was wrong: `where` names the part for the reason."""
    out = []
    for spec in specs:
        try:
            out.append(spec.of(spec.read(part)))
        except NotRecorded as exc:
            out.append(spec.missing(str(exc)))
        except KeyError as exc:
            out.append(spec.missing(f"{where} has no {exc}"))
        except (TypeError, AttributeError, IndexError, ValueError, ZeroDivisionError) as exc:
            out.append(spec.missing(f"{where} is damaged here ({type(exc).__name__}: {exc})"))
    return out


def all_missing(specs, why: str) -> list[Evidence]:
    """Each spec's evidence as not recorded, for one reason (the part is not in the record)."""
    got = _ALL_MISSING.get((id(specs), why))
    if got is None or got[0] is not specs:
        if len(_ALL_MISSING) > 1_000:
            _ALL_MISSING.clear()
        got = _ALL_MISSING[(id(specs), why)] = (specs, [spec.missing(why) for spec in specs])
    return list(got[1])


_ALL_MISSING: dict[tuple, tuple] = {}


class ColumnSource:
    """Table columns a user may ask for by name (`iolab table --darshan small_write_pct`): a
    layer's, or the job's (results/placement.py). One option per source, `--<name>`, whose help,
    like the CLI reference's, is made from `column_help` (cli/common.add_column_options)."""

    name = ""
    title = ""                          # how tables name its columns ("Darshan")
    # False: numbers, added to the records as metrics (mean, interval, n: column_values);
    # True: words about the case's repetitions, each once (column_text)
    text = False

    def column_help(self) -> dict[str, str]:
        """Each of its columns and what it shows."""
        return {}

    def parse_columns(self, text: str) -> list[str]:
        """Column names from a comma-separated list; an unknown one is an error naming the
        nearest known ones."""
        known = self.column_help()
        names = [n.strip() for n in text.split(",") if n.strip()]
        for name in names:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=3)
                raise IolabError(f"unknown {self.name} column {name!r}", key=f"--{self.name}",
                                 hint=f"did you mean {', '.join(close)}?" if close else
                                 "known: " + ", ".join(known))
        return names

    def column_label(self, name: str) -> str:
        """A table's header for one of its columns ("Darshan small_write_pct")."""
        return f"{self.title} {name}"

    def column_values(self, observed, names: list[str]) -> list[tuple[str, float, str]]:
        """(name, value, unit) of each asked column that the record has a number for; a value
        it cannot give is left out, never 0."""
        return []

    def column_text(self, record, name: str) -> tuple[str | None, str | None]:
        """A text column's words for one record, and None with why where the record cannot say
        (a table shows "missing" and the why as a note, never a guess)."""
        return None, "not recorded"


class Layer(ColumnSource):
    """A layer package's `layer` module defines LAYER, one instance of a subclass: the registry
    finds it there."""

    name = ""
    order = 50                          # when it acts among the layers (lower: earlier)
    prefixes: tuple[str, ...] = ()      # parameter keys it owns: those that start so...
    keys: tuple[str, ...] = ()          # ...and these
    observed_keys: tuple[str, ...] = ()  # its parts of a record's `observed`
    raw_files: tuple[str, ...] = ()     # stage files kept with the record
    compress: tuple[str, ...] = ()      # of those, the ones stored gzipped when large
    preferred_axes: tuple[str, ...] = ()  # its parameters a plot groups by first
    effective_axes: tuple[str, ...] = ()  # its parameters whose value in effect a plot draws
    settings_title: str | None = None   # a plot's word for a set of its parameters
    through_mpi_io = False              # its parameters take effect only through MPI-IO
    none_set: str | None = None         # a setting's words where all its parameters are unset
    # roles a part of `observed` it writes plays for readers that must not name it:
    # "findings" (a part with `status`, `reason` and `findings` [{rule, text}])
    observed_roles: dict[str, str] = {}
    # the key a run's digest keeps the fold of its "findings" part under (results/digest.py)
    findings_fold: str | None = None

    schema_files: tuple[tuple[str, str], ...] = ()   # (package, file): its schema fragments
    runtime_library: RuntimeLibrary | None = None
    stack_packages: StackPackages = StackPackages()
    # a top-level section of the experiment YAML and of a system's extras['iolab'] it owns (its
    # schema comes with the file's own); the typed value is kept by layer name (`sections`)
    section: str | None = None
    example_param: ParamExample | None = None   # for --help examples (registry.example_param)
    # (a shipped experiment whose runs have them, its columns as `--<name>` takes them)
    example_columns: tuple[str, str] | None = None

    def schema(self) -> dict:
        """Its part of the experiment schema: the parameters it owns ("properties",
        "patternProperties" of $defs.params.common) and the $defs they use."""
        out: dict = {"properties": {}, "patternProperties": {}, "$defs": {}}
        for package, name in self.schema_files:
            fragment = json.loads(resources.files(package).joinpath(name).read_text())
            for key in out:
                out[key].update(fragment.get(key, {}))
        return out

    def section_value(self, data: dict):
        """The typed value of its section, from what was written (validated; {}: absent)."""
        return None

    def section_from_env(self) -> dict:
        """Its section of a shipped system's extras['iolab'], as the environment sets it."""
        return {}

    def verbs(self) -> tuple:
        """The `iolab` verbs it offers: modules like cli/'s (VERB, EXAMPLES, AFTER: the verb
        `iolab --help` lists it after), whose add_parser(sub, services) and run(args, services)
        take a VerbServices."""
        return ()

    def runtime_version(self, observed: dict, stack_versions: dict) -> str | None:
        """The version of its runtime library a record's job ran with (None: it did not run)."""
        return None

    def owns(self, key: str) -> bool:
        return key in self.keys or key.startswith(self.prefixes)

    def file_system_of(self, key: str) -> str | None:
        """The file system whose layout its parameter `key` asks for (None: none's)."""
        return None

    def derived_columns(self) -> dict[str, DerivedColumn]:
        """Report columns it computes from a case's parameters, by name."""
        return {}

    def file_systems(self) -> tuple:
        """The file systems it lays out (layers/storage/base.FileSystem: name, title, prefix,
        requested, check), by name; an experiment's require_file_system names one."""
        return ()

    # --- the experiment's and the system's settings it owns
    def older_spellings(self, doc, data: dict) -> tuple[dict, tuple[str, ...]]:
        """The experiment's top-level settings (`data`, as written in `doc`, a yamlpos.Located)
        that it reads from an older spelling of them, and a note for each such spelling; a
        contradiction is doc.error."""
        return {}, ()

    def site_properties(self) -> dict:
        """What it adds to the schema of a system's extras['iolab'] keys (key -> schema
        keywords, such as the enum of the values it knows)."""
        return {}

    def site_from_env(self) -> dict:
        """extras['iolab'] settings of the shipped systems (rfm/systems.py) that it reads from
        this process's environment."""
        return {}

    def mpi_runtime(self, site) -> str | None:
        """Which MPI runtime launches a site's ranks (openmpi, mpich, cray), where its settings
        say (None: not this layer's to say)."""
        return None

    # --- before the job
    def check(self, case) -> str | None:
        """Why the case's request cannot be made anywhere (None: it can)."""
        return None

    def request(self, case, ctx: PlanContext) -> Contribution:
        """Before the benchmark's command is built: what the command needs to know."""
        return Contribution()

    def wrap(self, case, ctx: PlanContext, spec, start) -> Contribution:
        """Around the benchmark's command: job lines, environment, launcher options."""
        return Contribution()

    def private_data(self, case) -> str | None:
        """What keeps the data at the case's place (what it writes, or a read's, which is where
        its write put it) from another job, in words for a message ("node-local data"): a read
        in another job cannot take it. None: nothing does."""
        return None

    def preflight(self, items: list[tuple], say: Callable[[str], None], locate) -> list[IolabError]:
        """What only the live system can tell of a session's cases, asked once before its run is
        created: each problem names the experiment's file, line and key. items: (experiment,
        case, site facts, the jobs' environment) of each job; say(line): what could not be
        checked here, and why; locate(experiment, key, part, value) -> (file, line)."""
        return []

    def placement_keys(self, params: dict) -> list[str]:
        """Its parameters of a case that decide where a file lives and how it is laid out when
        it is created: a read must name the same as its write."""
        return []

    # --- after the job
    def observe(self, case, start, job: JobView, seen: dict) -> dict:
        """Its parts of `observed`, read from what the job left (seen: the parts of the layers
        before it)."""
        return {}

    def observe_files(self, case, stage: Path) -> dict:
        """What it can tell from the stage directory alone, for a job that gave no outcome."""
        return {}

    def file_system(self, observed) -> str | None:
        """The case directory's file-system type, where this layer read it."""
        return None

    def system_facts(self, observed: dict) -> list[SystemFact]:
        """What its part of a job's record says of the system beyond the case's request: the
        case directory's file system and the layout fields it chose, the MPI-IO hints in effect
        that no case asked for."""
        return []

    def failing(self, observed: dict, verify) -> str | None:
        """A difference that the experiment's `verify` says must fail the case."""
        return None

    def flags(self, observed: dict) -> list[str]:
        """Every difference between its request and what was applied, in words."""
        return []

    def effective(self, observed: dict, key: str):
        """The value in effect of its parameter `key`, typed as requested; None when the system
        did not say."""
        return None

    def not_applied(self, observed: dict, key: str) -> str | None:
        """Why its parameter `key` was not applied at all (None: it was, or nothing says)."""
        return None

    def effective_shown(self, observed, key: str):
        """What a table shows beside the request of `key`: the value in effect, or a word for
        why there is none to show; None when nothing was asked of the system."""
        return None

    def special_value(self, key: str, value) -> str | None:
        """How a value of its parameter reads where it means something other than its number
        (a stripe count of -1: "all (-1)"); such values sort after the numbers."""
        return None

    def reports_effective(self, key: str) -> bool:
        """Whether tables show, beside this parameter, the value the system used."""
        return False

    # --- evidence (issue 39): what it measured of a job that may explain the result
    def evidence_specs(self) -> tuple[EvidenceSpec, ...]:
        """Every piece of evidence it may give, declared (docs/evidence.md lists them)."""
        return ()

    def evidence(self, observed, params: dict) -> list[Evidence]:
        """One entry per declared spec for an ok record: a value, or None with why (its part is
        absent, or damaged, or lacks what the spec needs)."""
        return []

    def evidence_hint(self, source: str) -> str | None:
        """How a user gets the evidence of `source` (one of its specs' sources) recorded where
        it was not: `iolab why` says it beside what is missing."""
        return None

    def rules(self) -> tuple:
        """The rules of thumb its evidence and parameters speak of (layers/rule.Rule), declared
        (docs/rules.md lists them; analysis/rules.py checks them over a run's cases)."""
        return ()

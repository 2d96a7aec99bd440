"""MPI-IO hints: requested `mpiio.*` parameters -> what each MPI flavour reads; printed tables -> applied?

ROMIO ignores hints it does not know and lowers some it does (cb_nodes on one node) without an
error, and MPI_File_get_info under OMPIO only echoes what was passed. So a hint counts as applied
only when the library's own printout (ROMIO_PRINT_HINTS, MPICH_MPIIO_HINTS_DISPLAY) shows it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import IolabError

PREFIX = "mpiio."                      # the layer's parameters
AGGREGATOR_KEYS = ("aggregators", "aggregators_per_node")
ROMIO_HINTS_FILE = "iolab-romio-hints.txt"
ROMIO_TEMPLATE = "mpiio/romio-hints.j2"

# OMPIO reads these MCA parameters; there is no OMPIO equivalent for any other ROMIO hint.
OMPIO_MCA = {
    "cb_nodes": "OMPI_MCA_io_ompio_num_aggregators",
    "cb_buffer_size": "OMPI_MCA_io_ompio_bytes_per_agg",
    "striping_factor": "OMPI_MCA_fs_lustre_stripe_width",
    "striping_unit": "OMPI_MCA_fs_lustre_stripe_size",
}
# ROMIO takes enable/disable/automatic here; "true" would be dropped without a word.
_TRISTATE = ("romio_cb_read", "romio_cb_write", "romio_ds_read", "romio_ds_write",
             "romio_cb_alltoall", "romio_cb_pfr", "romio_lustre_ds_in_coll")
_KEY_RE = re.compile(r"^[A-Za-z0-9_]+$")
# ROMIO prints `key = %-25s value = %-10s` on rank 0; srun -l / mpirun --tag-output may prefix a rank.
_ROMIO_LINE = re.compile(r"^\s*(?:\d+:\s*|\[\d+,\d+\]<stdout>:\s*)?key = (\S+)\s+value = ?(.*)$")
_SHOWHINTS_HEAD = re.compile(r"^hints (passed to MPI_File_open\(\)|returned from opened file) \{\s*$")
_SHOWHINTS_LINE = re.compile(r"^\s*(\S+) =(?: (.*))?$")
_CRAY_HEAD = re.compile(r"^\s*(?:\d+:\s*)?PE (\d+): MPIIO hints for (.*):\s*$")
_CRAY_LINE = re.compile(r"^\s*(?:\d+:)?\s+(\S+)\s*=\s*(.*?)\s*$")
_WORDS = ("enable", "disable", "automatic", "true", "false")


@dataclass
class HintPlan:
    """How one MPI flavour receives the hints, and how the effective values are observed."""

    env: dict[str, str] = field(default_factory=dict)        # exported for the benchmark
    files: dict[str, str] = field(default_factory=dict)      # stage-relative name -> content
    verify: str = "unverified"                               # romio-print | cray-display | unverified
    notes: list[str] = field(default_factory=list)


def _name(key: str) -> str:
    return f"mpiio.{key}"


def _hint_value(key: str, value: object) -> str:
    if not _KEY_RE.match(key):
        raise IolabError("a hint name has only letters, digits and '_'", key=_name(key))
    if isinstance(value, bool):
        if key in _TRISTATE:
            raise IolabError(f"takes enable, disable or automatic, not {value}", key=_name(key))
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not isinstance(value, str):
        raise IolabError(f"must be a string, integer or boolean, not {type(value).__name__}",
                         key=_name(key))
    text = value.strip()
    # Every carrier splits on whitespace, and IOR's hints file also on '='.
    if not text or re.search(r"[\s=]", text):
        raise IolabError(f"{value!r} must be one word without spaces or '='", key=_name(key))
    return text


def _count(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise IolabError("must be an integer", key=_name(key))
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise IolabError(f"{value!r} is not an integer", key=_name(key)) from None


def expand_hints(hints: dict[str, object], nodes: int, tasks_per_node: int) -> dict[str, str]:
    """`mpiio.*` parameters (prefix stripped) -> ROMIO hint strings, sorted by key.

    aggregators=N -> cb_nodes=N and cb_config_list=*:ceil(N/nodes); aggregators_per_node=M ->
    cb_config_list=*:M and, unless cb_nodes is given, cb_nodes=M*nodes. A raw cb_nodes is passed
    as given, so the effective-hint check shows when ROMIO lowers it.
    """
    if nodes < 1 or tasks_per_node < 1:
        raise IolabError(f"nodes ({nodes}) and tasks_per_node ({tasks_per_node}) must be positive")
    out = {k: _hint_value(k, v) for k, v in hints.items() if k not in AGGREGATOR_KEYS}
    total = nodes * tasks_per_node
    aggs = per_node = None
    if "aggregators" in hints:
        aggs = _count("aggregators", hints["aggregators"])
        if not 1 <= aggs <= total:
            raise IolabError(f"{aggs} must be between 1 and {total} (nodes x tasks_per_node)",
                             key=_name("aggregators"))
        if "cb_nodes" in out:
            raise IolabError("give aggregators or cb_nodes, not both", key=_name("aggregators"))
    if "aggregators_per_node" in hints:
        per_node = _count("aggregators_per_node", hints["aggregators_per_node"])
        if not 1 <= per_node <= tasks_per_node:
            raise IolabError(f"{per_node} must be between 1 and {tasks_per_node} (tasks_per_node)",
                             key=_name("aggregators_per_node"))
        if "cb_config_list" in out:
            raise IolabError("give aggregators_per_node or cb_config_list, not both",
                             key=_name("aggregators_per_node"))
        if aggs is not None and aggs != per_node * nodes:
            raise IolabError(f"aggregators ({aggs}) must equal aggregators_per_node x nodes "
                             f"({per_node} x {nodes} = {per_node * nodes})", key=_name("aggregators"))
        if "cb_nodes" in out and _count("cb_nodes", out["cb_nodes"]) > per_node * nodes:
            # ROMIO would lower it to the aggregator slots cb_config_list leaves, silently.
            raise IolabError(f"{out['cb_nodes']} exceeds aggregators_per_node x nodes "
                             f"({per_node * nodes})", key=_name("cb_nodes"))
        out["cb_config_list"] = f"*:{per_node}"
        out.setdefault("cb_nodes", str(per_node * nodes))
    if aggs is not None:
        out["cb_nodes"] = str(aggs)
        if per_node is None and "cb_config_list" not in out:
            # ROMIO's default cb_config_list is *:1, which caps cb_nodes at the node count; the
            # convenience key means "this many aggregators", so spread them over the nodes.
            out["cb_config_list"] = f"*:{-(-aggs // nodes)}"
    return dict(sorted(out.items()))


def _checked(hints: dict[str, str]) -> dict[str, str]:
    return {k: _hint_value(k, v) for k, v in sorted(hints.items())}


def romio_hints_file(hints: dict[str, str]) -> str:
    """Content of a ROMIO_HINTS file: one `key value` line per hint."""
    from ...render import render_template

    return render_template(ROMIO_TEMPLATE, hints=_checked(hints))


@dataclass(frozen=True)
class Flavour:
    """An MPI library as iolab meets it: which runtime launches it (its mpirun's way of passing
    variables, see rfm/launch.py), how it takes hints, and how the hints in effect are read."""

    name: str
    runtime: str            # openmpi | mpich | cray
    carrier: str            # romio | cray | ompio: how hints reach MPI-IO
    verify: str             # romio-print | cray-display | unverified
    component: str | None = None    # Open MPI's io component to select (OMPI_MCA_io)

    def translate(self, hints: dict[str, str]) -> HintPlan:
        """Expanded hints -> environment, files and notes. The printing switch is set even
        without hints, so the effective defaults are recorded."""
        hints = _checked(hints)
        plan = HintPlan(verify=self.verify)
        {"romio": _romio, "cray": _cray, "ompio": _ompio}[self.carrier](hints, plan)
        if self.component:
            plan.env["OMPI_MCA_io"] = self.component
            plan.notes.append("Open MPI 4.x names the component romio321 (5.x: romio341); it has the "
                              "Lustre driver only if Open MPI was configured with --with-io-romio-flags="
                              "--with-file-system=ufs+lustre: check romio_filesystem_type")
        return plan

    def effective(self, text: str, own_log_hints: str | None = None) -> dict[str, str] | None:
        """The hints in effect for the data file, from the benchmark's output; None when the
        library prints none (ompio), or printed no table. own_log_hints: the hints Darshan
        opened its own log with (DARSHAN_LOGHINTS), when the case ran under Darshan."""
        if self.verify == "cray-display":
            blocks = parse_cray_display(text)
            return dict(blocks[-1]["hints"]) if blocks else None
        if self.verify == "romio-print":
            tables = _romio_tables(text)
            if own_log_hints is not None:
                tables = _without_darshan_log(tables, own_log_hints)
            return dict(_data_open_table(text, tables)) if tables else None
        return None


# An MPI flavour is added here, and nowhere else.
FLAVOURS = {f.name: f for f in (
    Flavour("mpich-romio", "mpich", "romio", "romio-print"),
    Flavour("openmpi-romio", "openmpi", "romio", "romio-print", component="romio321"),
    Flavour("cray-mpich", "cray", "cray", "cray-display"),
    Flavour("openmpi-ompio", "openmpi", "ompio", "unverified"),
)}


def flavour(name: str) -> Flavour:
    try:
        return FLAVOURS[name]
    except KeyError:
        raise IolabError(f"unknown MPI flavour {name!r}; use one of {', '.join(FLAVOURS)}",
                         key="mpi_flavour") from None


def translate(hints: dict[str, str], name: str) -> HintPlan:
    return flavour(name).translate(hints)


def _romio(hints: dict[str, str], plan: HintPlan) -> None:
    plan.env["ROMIO_PRINT_HINTS"] = "1"
    if hints:
        plan.files[ROMIO_HINTS_FILE] = romio_hints_file(hints)
        # Relative: ranks start in the stage directory, where the job script runs.
        plan.env["ROMIO_HINTS"] = ROMIO_HINTS_FILE
        plan.notes.append("ROMIO_HINTS replaces the site's /etc/romio-hints for this run; "
                          "hints the benchmark passes through MPI_Info win over the file")


def _cray(hints: dict[str, str], plan: HintPlan) -> None:
    for key, value in hints.items():
        # ':' and ',' separate keys and file patterns in MPICH_MPIIO_HINTS.
        if re.search(r"[:,]", value):
            raise IolabError(f"{value!r} contains ':' or ',', which MPICH_MPIIO_HINTS uses as "
                             "separators", key=_name(key),
                             hint="use cb_nodes (mpiio.aggregators) instead, or check man intro_mpi")
    plan.env["MPICH_MPIIO_HINTS_DISPLAY"] = "1"
    if hints:
        plan.env["MPICH_MPIIO_HINTS"] = "*:" + ":".join(f"{k}={v}" for k, v in hints.items())
    plan.notes.append("Cray MPICH prints the hints in effect to stderr at each open")


def _ompio(hints: dict[str, str], plan: HintPlan) -> None:
    for key, value in hints.items():
        if key not in OMPIO_MCA:
            raise IolabError(f"ompio has no equivalent for {key}", key=_name(key),
                             hint="set the system config's mpi_flavour to 'openmpi-romio' "
                                  "(Open MPI with --mca io romio321)")
        plan.env[OMPIO_MCA[key]] = value
    plan.notes.append("ompio prints no effective hints and MPI_File_get_info echoes the input: "
                      "hints are unverified")
    if {"striping_factor", "striping_unit"} & hints.keys():
        plan.notes.append("fs_lustre_* parameters exist only in an Open MPI built with Lustre "
                          "support; lfs setstripe on the directory is the reliable way to stripe")


def _romio_tables(text: str) -> list[tuple[int, dict[str, str]]]:
    """(first line number, table) per ROMIO_PRINT_HINTS table."""
    tables: list[tuple[int, dict[str, str]]] = []
    current: dict[str, str] | None = None
    for number, line in enumerate(text.splitlines()):
        m = _ROMIO_LINE.match(line)
        if not m:
            # Other ranks' output (srun merges every rank's stdout) can land inside a table:
            # only a repeated key starts the next one.
            continue
        key, value = m.group(1), m.group(2).rstrip()
        # Two opens can print back to back with no line between: a repeated key starts a table.
        if current is None or key in current:
            current = {}
            tables.append((number, current))
        current[key] = value
    return tables


def parse_romio_print(text: str) -> list[dict[str, str]]:
    """Every ROMIO_PRINT_HINTS table in `text`, in order (rank 0 prints one per MPI_File_open)."""
    return [table for _, table in _romio_tables(text)]


def parse_cray_display(text: str) -> list[dict]:
    """MPICH_MPIIO_HINTS_DISPLAY blocks: [{"file", "hints"}], one per open, in order.

    Unverified format: taken from published examples ("PE 0: MPIIO hints for <file>:" followed
    by indented `key = value` lines), not from a Cray system. A header is required, so IOR's
    tab-indented showHints echo is never read as a Cray table.
    """
    blocks: list[dict] = []
    current: dict[str, str] | None = None
    for line in text.splitlines():
        head = _CRAY_HEAD.match(line)
        if head:
            current = {}
            blocks.append({"file": head.group(2).strip(), "hints": current})
            continue
        m = _CRAY_LINE.match(line) if current is not None else None
        if m:
            current[m.group(1)] = m.group(2)  # type: ignore[index]
        else:
            current = None
    return blocks


def _data_open_table(text: str, tables: list[tuple[int, dict[str, str]]]) -> dict[str, str]:
    """The table printed by the benchmark's data open.

    IOR also opens on MPI_COMM_SELF (its existence check before the file is removed), and that
    open prints last, with cb_nodes 1 whatever was asked. When IOR's `hints passed to
    MPI_File_open()` echo is present, it is printed just before the data open, so the first
    table after the last echo is the data open's. Otherwise the last table is used.
    """
    anchors = [n for n, line in enumerate(text.splitlines())
               if line.startswith("hints passed to MPI_File_open()")]
    if anchors:
        after = [table for start, table in tables if start > anchors[-1]]
        if after:
            return after[0]
    return tables[-1][1]


def effective_hints(text: str, name: str, own_log_hints: str | None = None) -> dict[str, str] | None:
    """The hints in effect for the data file, from the benchmark's output; None when unobservable.

    romio flavours: stdout with ROMIO_PRINT_HINTS tables (see _data_open_table for which one;
    under Darshan, the table of Darshan's own log is left out, see _without_darshan_log).
    cray-mpich: stderr with MPICH_MPIIO_HINTS_DISPLAY blocks; the last block.
    openmpi-ompio: always None. No table at all (e.g. the run used ompio after all): None.
    """
    return flavour(name).effective(text, own_log_hints)


def _without_darshan_log(tables: list[tuple[int, dict[str, str]]],
                         log_hints: str) -> list[tuple[int, dict[str, str]]]:
    """Darshan writes its log with MPI-IO in MPI_Finalize, after every open of the benchmark, and
    ROMIO prints that open's table too (cb_nodes=1 from DARSHAN_LOGHINTS, whatever the case
    asked): the last table is Darshan's when it shows the log hints' values."""
    wanted = dict(item.split("=", 1) for item in log_hints.split(";") if "=" in item)
    if tables and all(tables[-1][1].get(k) == v for k, v in wanted.items()):
        return tables[:-1]
    return tables


def parse_ior_showhints(text: str) -> dict[str, dict[str, str] | None]:
    """IOR --mpiio.showHints blocks, the last of each kind: {"passed": ..., "returned": ...}.

    For the record only. "returned" is MPI_File_get_info, which under OMPIO echoes "passed" and
    under ROMIO keeps the user's keys too: never evidence that a hint was applied. None when absent.
    """
    out: dict[str, dict[str, str] | None] = {"passed": None, "returned": None}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        head = _SHOWHINTS_HEAD.match(line)
        if head:
            current = {}
            out["passed" if head.group(1).startswith("passed") else "returned"] = current
        elif current is not None:
            if line.strip() == "}":
                current = None
            elif m := _SHOWHINTS_LINE.match(line):
                current[m.group(1)] = (m.group(2) or "").strip()
    return out


def _norm(value: object) -> object:
    text = str(value).strip()
    if text.lower() in _WORDS:
        return text.lower()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return text


# Hints that only one family of ROMIO file-system drivers reads (adio/ad_lustre, ad_gpfs, ad_pvfs2):
# ROMIO accepts and echoes them everywhere, so its printout alone would call them applied.
_FS_HINTS = (
    (re.compile(r"^(striping_factor|striping_unit|start_iodevice)$"), ("lustre", "pvfs2", "orangefs"),
     "no striping"),
    (re.compile(r"^romio_lustre_"), ("lustre",), "not Lustre"),
    (re.compile(r"^romio_gpfs_"), ("gpfs",), "not GPFS"),
)


def not_applicable(requested: dict[str, str], fstype: str | None) -> dict[str, str]:
    """Requested hints that the file system of the case directory makes meaningless -> why,
    worded like Lustre's not-applied reason ('ext4: no striping')."""
    if not fstype or fstype == "unknown":
        return {}
    out = {}
    for key in requested:
        for pattern, filesystems, why in _FS_HINTS:
            if pattern.match(key) and fstype not in filesystems:
                out[key] = f"{fstype}: {why} (only ROMIO's {'/'.join(filesystems)} driver reads {key})"
    return out


def compare_hints(requested: dict[str, str], effective: dict[str, str] | None,
                  not_applied: dict[str, str] | None = None) -> list[dict]:
    """One entry per requested hint: {"key", "requested", "effective", "status"}.

    status: applied | changed (ROMIO kept another value) | missing (not in the table: ROMIO
    ignores unknown hints) | unverified (nothing to compare against) | not applied (the file
    system makes it meaningless, whatever ROMIO echoes; with the reason).
    """
    out = []
    for key in sorted(requested):
        got = None if effective is None else effective.get(key)
        entry = {"key": key, "requested": requested[key], "effective": got}
        if not_applied and key in not_applied:
            entry.update(status="not applied", reason=not_applied[key])
        elif effective is None:
            entry["status"] = "unverified"
        elif got is None:
            entry["status"] = "missing"
        elif _norm(got) == _norm(requested[key]):
            entry["status"] = "applied"
        else:
            entry["status"] = "changed"
        out.append(entry)
    return out

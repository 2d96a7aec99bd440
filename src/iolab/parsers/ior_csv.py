"""IOR 4's CSV summary (`-O summaryFormat=CSV`): one row per phase and iteration."""

from __future__ import annotations

from ..errors import ParseError
from . import Metric, Parsed, mean, printed_number

# IOR 4.0.0's CSV summary (-O summaryFormat=CSV) is only its per-iteration rows: no command line,
# API or summary of its own. The summary is computed here as IOR computes it (mean, max, min and
# population standard deviation over the iterations; operations = bandwidth / transfer size).
CSV_HEADER = ("access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),"
              "numTasks,iter")
CSV_SOURCE = "ior-csv"


def parse(text: str, source: str = CSV_SOURCE) -> Parsed:
    lines = text.strip("\n").split("\n")
    columns = CSV_HEADER.split(",")
    if not text.endswith("\n"):
        raise ParseError(f"{source}: the last CSV line has no end: the output is truncated")
    rows: dict[str, list[dict]] = {}
    for number, line in enumerate(lines[1:], 2):
        cells = line.split(",")
        if len(cells) != len(columns) or cells[0] not in ("write", "read"):
            raise ParseError(f"{source}: line {number} is not a write or read row of "
                             f"{len(columns)} columns: {line[:60]!r}")
        row = {c: printed_number(v, f"{cells[0]} {c}", source)
               for c, v in zip(columns[1:], cells[1:])}
        rows.setdefault(cells[0], []).append(row)
    if not rows:
        raise ParseError(f"{source}: the CSV has no write or read row: IOR did not finish")
    counts = {op: len(r) for op, r in rows.items()}
    if len(set(counts.values())) != 1:
        raise ParseError(f"{source}: the phases ran different numbers of iterations "
                         f"({', '.join(f'{op} {n}' for op, n in counts.items())}): truncated")
    first = next(iter(rows.values()))[0]
    sizes = {}
    for column, key in (("block(KiB)", "blockSize"), ("xfer(KiB)", "transferSize"),
                        ("numTasks", "numTasks")):
        value = first[column] * (1024 if "KiB" in column else 1)
        if not value.is_integer() or value <= 0 or any(r[column] != first[column]
                                                        for rs in rows.values() for r in rs):
            raise ParseError(f"{source}: {column} is not one whole positive value over the rows")
        sizes[key] = int(value)
    metrics: list[Metric] = []
    for op, runs in rows.items():
        if [r["iter"] for r in runs] != list(range(len(runs))):
            raise ParseError(f"{source}: {op} iterations are not numbered 0 to {len(runs) - 1}")
        bws = [r["bw(MiB/s)"] for r in runs]
        if min(bws) <= 0:
            raise ParseError(f"{source}: {op} bandwidth is {min(bws)} MiB/s")
        bw = mean(bws)
        std = mean([(b - bw) ** 2 for b in bws]) ** 0.5
        per_op = 1024 * 1024 / sizes["transferSize"]
        for name, value, unit in (("bw", bw, "MiB/s"), ("bw_max", max(bws), "MiB/s"),
                                  ("bw_min", min(bws), "MiB/s"), ("bw_stddev", std, "MiB/s"),
                                  ("ops", bw * per_op, "ops/s"), ("ops_max", max(bws) * per_op, "ops/s"),
                                  ("ops_min", min(bws) * per_op, "ops/s"),
                                  ("ops_stddev", std * per_op, "ops/s")):
            metrics.append(Metric(f"{op}_{name}", value, unit, CSV_SOURCE))
        for name, column in (("open_time", "open(s)"), ("io_time", "wr/rd(s)"),
                             ("close_time", "close(s)"), ("total_time", "total(s)")):
            metrics.append(Metric(f"{op}_{name}", mean([r[column] for r in runs]), "s", CSV_SOURCE))
    echo = {**sizes, "repetitions": counts[next(iter(counts))],
            "writeFile": "write" in rows, "readFile": "read" in rows}
    return Parsed(metrics, version=None, details={}, echo=echo)

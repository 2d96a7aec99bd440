"""Sizes are typed once, at load: "4MiB", "4m", "1g" and 1048576 all become bytes (int)."""

from __future__ import annotations

import re
from fractions import Fraction

_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
# Binary multiples only, as IOR, fio and lfs read them: 4m == 4MiB == 4194304.
_SIZE_RE = re.compile(r"^\s*(\d+)(\.\d{1,20})?\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)

SIZE_HELP = "a size such as 4MiB, 4m, 1g or 1048576 (binary multiples)"
MAX_SIZE = 1024**6      # 1 EiB: more than any file system holds; a larger size is a typo
MAX_TIME_LIMIT = 365 * 24 * 3600
# Bounded groups: up to 999d, 9999h, 999999m or 99999999s, so the sum cannot overflow anything.
_DURATION_RE = re.compile(r"^(?:(\d{1,3})d)?(?:(\d{1,4})h)?(?:(\d{1,6})m)?(?:(\d{1,8})s)?$")


class OutOfRange(ValueError):
    """A well-formed value beyond what iolab accepts."""


# How a value is shown depends on where: the one formatter below takes the place as its argument.
WRITTEN = "written"   # as a YAML, a plan line or a message writes it: unset, true/false, 4MiB
CELL = "cell"         # a table cell: -, yes/no, numbers over a divisor at two decimals
QUOTED = "quoted"     # a wrong input quoted in an error: its repr, cut at 40 characters
KEY = "key"           # a key of a fold: None kept, anything else its text


def shown(value, where: str = WRITTEN, *, size: bool = False, divisor: float | None = None):
    """A value as `where` shows it. `size`: an int is a byte count (written as 4MiB);
    `divisor`: a table cell's number is divided by it first (its column's unit)."""
    if where == QUOTED:
        text = repr(value)
        return text if len(text) <= 40 else f"{text[:40]}..."
    if where == KEY:
        return value if value is None or type(value) is str else str(value)
    cell = where == CELL
    if value is None:
        return "-" if cell else "unset"     # another part's parameter, a hint set without it
    if isinstance(value, bool):
        return ("yes" if value else "no") if cell else ("true" if value else "false")
    if not cell:
        return format_size(value) if size and isinstance(value, int) else str(value)
    if divisor and isinstance(value, (int, float)):
        value = value / divisor
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.2f}" if abs(value) >= 0.01 else f"{value:.3g}"
    if isinstance(value, tuple):        # values seen in effect across repetitions
        return "/".join(shown(v, CELL, divisor=divisor) for v in value)
    if isinstance(value, list):
        return " ".join(map(str, value)) or "-"
    return str(value)


def parse_size(value) -> int:
    """Return bytes, at most MAX_SIZE. Raises ValueError with a readable message."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size; use {SIZE_HELP}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{shown(value, QUOTED)} is negative; use {SIZE_HELP}")
        return _at_most_max(value, value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            whole, fraction, prefix, suffix = m.groups()
            # "512B" is bytes; "4iB" (binary marker without a prefix) is not a size
            if suffix.lower() in ("", "b", "ib") and not (suffix.lower() == "ib" and not prefix):
                if len(whole.lstrip("0")) > 19:       # above 10**19 > MAX_SIZE before any prefix
                    return _at_most_max(value, MAX_SIZE + 1)
                # Exact arithmetic: a float would silently round sizes above 2**53 bytes
                nbytes = Fraction(whole + (fraction or "")) * (1024 ** _POWERS[prefix.lower()])
                if nbytes.denominator == 1:
                    return _at_most_max(value, int(nbytes))
                raise ValueError(f"{value!r} is not a whole number of bytes")
    raise ValueError(f"{shown(value, QUOTED)} is not a size; use {SIZE_HELP}")


def _at_most_max(value, nbytes: int) -> int:
    if nbytes > MAX_SIZE:
        raise OutOfRange(f"{shown(value, QUOTED)} is larger than 1EiB, the largest size iolab accepts")
    return nbytes


def parse_time_limit(text: str) -> int:
    """Seconds in a time limit such as 1d12h or 90m: from 1s to MAX_TIME_LIMIT (365 days)."""
    m = _DURATION_RE.match(text) if isinstance(text, str) and text else None
    if not m:
        raise ValueError(f"{shown(text, QUOTED)} is not a time limit; use e.g. 30m, 2h or 1d12h")
    days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if total == 0:
        raise OutOfRange(f"{text!r} is no time at all: give a time limit from 1s to 365d")
    if total > MAX_TIME_LIMIT:
        raise OutOfRange(f"{text!r} is longer than 365 days, the longest time limit iolab accepts")
    return total


DURATION_HELP = "seconds, or a duration such as 300s, 5m or 1h30m"
MAX_DURATION = 7 * 24 * 3600      # a week: a longer timed phase is a typo


def parse_duration(value) -> int:
    """Seconds in a timed phase's length ("300s", "5m", "1h30m" or 300), from 0 (off) to
    MAX_DURATION. Raises ValueError (OutOfRange for a well-formed value too long)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration; use {DURATION_HELP}")
    if isinstance(value, int):
        seconds = value
    else:
        m = _DURATION_RE.match(value.strip()) if isinstance(value, str) and value.strip() else None
        if not m:
            raise ValueError(f"{shown(value, QUOTED)} is not a duration; use {DURATION_HELP}")
        days, hours, minutes, secs = (int(g or 0) for g in m.groups())
        seconds = ((days * 24 + hours) * 60 + minutes) * 60 + secs
    if seconds < 0:
        raise ValueError(f"{shown(value, QUOTED)} is negative; use {DURATION_HELP}")
    if seconds > MAX_DURATION:
        raise OutOfRange(f"{shown(value, QUOTED)} is longer than a week, the longest timed phase "
                         "iolab accepts")
    return seconds


def format_duration(seconds: int) -> str:
    """300 -> '300s' (as the YAML may write it; IOR and fio take plain seconds)."""
    return f"{seconds}s"


def is_size(value) -> bool:
    try:
        parse_size(value)
    except ValueError:
        return False
    return True


def format_size(nbytes: int) -> str:
    """Shortest exact binary form: 4194304 -> '4MiB', 1536 -> '1536B'."""
    for unit, power in (("PiB", 5), ("TiB", 4), ("GiB", 3), ("MiB", 2), ("KiB", 1)):
        scale = 1024 ** power
        if nbytes and nbytes % scale == 0:
            return f"{nbytes // scale}{unit}"
    return f"{nbytes}B"


def format_bytes_human(nbytes: float) -> str:
    """Approximate, for plan totals: 1.5 GiB."""
    value = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} PiB"


# Bytes per display unit (a parameter's x-unit in the schema).
UNIT_BYTES = {"KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}


def size_arg(nbytes: int, upper: bool = False) -> str:
    """A size for a command line with a one-letter binary suffix, when exact: IOR's
    string_to_bytes takes k/m/g, lfs setstripe K/M/G (8388608 -> 8m / 8M)."""
    for suffix, power in (("g", 3), ("m", 2), ("k", 1)):
        scale = 1024 ** power
        if nbytes and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix.upper() if upper else suffix}"
    return str(nbytes)


def ior_size_arg(nbytes: int) -> str:
    return size_arg(nbytes)

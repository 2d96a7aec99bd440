"""Sizes are typed once, at load: "4MiB", "4m", "1g" and 1048576 all become bytes (int)."""

from __future__ import annotations

import re
from fractions import Fraction

_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
# Binary multiples only, as IOR, fio and lfs read them: 4m == 4MiB == 4194304.
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)

SIZE_HELP = "a size such as 4MiB, 4m, 1g or 1048576 (binary multiples)"


def parse_size(value) -> int:
    """Return bytes. Raises ValueError with a readable message."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size; use {SIZE_HELP}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative; use {SIZE_HELP}")
        return value
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            number, prefix, suffix = m.groups()
            # "512B" is bytes; "4iB" (binary marker without a prefix) is not a size
            if suffix.lower() in ("", "b", "ib") and not (suffix.lower() == "ib" and not prefix):
                # Exact arithmetic: a float would silently round sizes above 2**53 bytes
                nbytes = Fraction(number) * (1024 ** _POWERS[prefix.lower()])
                if nbytes.denominator == 1:
                    return int(nbytes)
                raise ValueError(f"{value!r} is not a whole number of bytes")
    raise ValueError(f"{value!r} is not a size; use {SIZE_HELP}")


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


def ior_size_arg(nbytes: int) -> str:
    """IOR's string_to_bytes takes k/m/g suffixes (powers of 2); keep the command readable."""
    for suffix, power in (("g", 3), ("m", 2), ("k", 1)):
        scale = 1024 ** power
        if nbytes and nbytes % scale == 0:
            return f"{nbytes // scale}{suffix}"
    return str(nbytes)

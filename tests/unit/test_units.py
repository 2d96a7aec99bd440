"""Sizes are typed once: every accepted spelling becomes exact bytes; everything else is refused."""

from __future__ import annotations

import re

import pytest

from iolab.units import (MAX_SIZE, OutOfRange, format_bytes_human, format_size, ior_size_arg,
                         is_size, parse_size, parse_time_limit)

KIB, MIB, GIB, TIB = 1024, 1024**2, 1024**3, 1024**4


@pytest.mark.parametrize("text, expected", [
    ("4MiB", 4 * MIB),
    ("4m", 4 * MIB),
    ("4M", 4 * MIB),
    ("1g", GIB),
    ("1GiB", GIB),
    ("1048576", MIB),
    (1048576, MIB),
    (0, 0),
    ("16 MiB", 16 * MIB),
    (" 8k ", 8 * KIB),
    ("1.5k", 1536),
    ("0.5m", 512 * KIB),
    ("512B", 512),
    ("512b", 512),
    ("4MB", 4 * MIB),          # binary, as IOR, fio and lfs read it
    ("4KB", 4 * KIB),
    ("2t", 2 * TIB),
    ("1p", 1024**5),
    # exact even beyond float precision (2**54 + 1 would round to 2**54 as a float)
    ("18014398509481985", 2**54 + 1),
])
def test_parse_size_accepts(text, expected):
    value = parse_size(text)
    assert value == expected
    assert type(value) is int
    assert is_size(text)


@pytest.mark.parametrize("value, fragment", [
    ("4XB", "is not a size"),
    ("abc", "is not a size"),
    ("", "is not a size"),
    ("4iB", "is not a size"),   # a binary marker needs a prefix
    ("4 MiBs", "is not a size"),
    ("-4m", "is not a size"),
    (-1, "negative"),
    (True, "is not a size"),
    (False, "is not a size"),
    (None, "is not a size"),
    (4.0, "is not a size"),     # a YAML float is not a size, even a whole one
    ("1.5", "not a whole number of bytes"),
    ("1.3k", "not a whole number of bytes"),
])
def test_parse_size_rejects(value, fragment):
    with pytest.raises(ValueError) as info:
        parse_size(value)
    assert fragment in str(info.value)
    assert repr(value) in str(info.value) or str(value) in str(info.value)
    assert not is_size(value)


def test_rejection_explains_the_accepted_forms():
    with pytest.raises(ValueError, match=r"4MiB, 4m, 1g or 1048576"):
        parse_size("4XB")


@pytest.mark.parametrize("nbytes, text", [
    (4 * MIB, "4MiB"),
    (1536, "1536B"),
    (KIB, "1KiB"),
    (256 * KIB, "256KiB"),
    (GIB, "1GiB"),
    (3 * GIB, "3GiB"),
    (1024 * GIB, "1TiB"),
    (1024**5, "1PiB"),
    (1000, "1000B"),
    (0, "0B"),
])
def test_format_size(nbytes, text):
    assert format_size(nbytes) == text
    assert parse_size(text) == nbytes   # round trip


@pytest.mark.parametrize("nbytes, arg", [
    (8 * MIB, "8m"),
    (256 * KIB, "256k"),
    (64 * KIB, "64k"),
    (GIB, "1g"),
    (16 * GIB, "16g"),
    (1536 * KIB, "1536k"),
    (1000, "1000"),
    (12, "12"),
])
def test_ior_size_arg(nbytes, arg):
    assert ior_size_arg(nbytes) == arg
    assert parse_size(arg) == nbytes    # IOR reads k/m/g as powers of two, as we do


def test_format_bytes_human():
    assert format_bytes_human(512) == "512 B"
    assert format_bytes_human(1536 * MIB) == "1.5 GiB"
    assert format_bytes_human(3 * 1024**6) == "3072.0 PiB"


@pytest.mark.parametrize("value", ["999999999999999999999p", "1025p", "1048577t", 2**60 + 1,
                                   "9" * 5000, "1025.5p"])
def test_sizes_over_1_eib_are_refused(value):
    with pytest.raises(ValueError, match="is larger than 1EiB, the largest size iolab accepts"):
        parse_size(value)


def test_1_eib_itself_and_fractions_are_fine():
    assert parse_size("1024p") == parse_size(2**60) == MAX_SIZE == 2**60
    assert parse_size("1.5p") == 3 * 2**49
    assert parse_size("0.25k") == 256


@pytest.mark.parametrize("text, seconds", [("1s", 1), ("10m", 600), ("1d12h", 129600),
                                           ("365d", 365 * 86400), ("8760h", 365 * 86400),
                                           ("1h30m15s", 5415)])
def test_time_limits(text, seconds):
    assert parse_time_limit(text) == seconds


@pytest.mark.parametrize("text, fragment, out_of_range", [
    ("0s", "'0s' is no time at all: give a time limit from 1s to 365d", True),
    ("0d0h", "no time at all", True),
    ("366d", "'366d' is longer than 365 days, the longest time limit iolab accepts", True),
    ("364d24h1s", "longer than 365 days", True),
    ("9999h", "longer than 365 days", True),
    ("99999999999999999999d", "is not a time limit", False),    # bounded groups: no overflow
    ("10", "is not a time limit", False),
    ("", "is not a time limit", False),
    ("1h1d", "is not a time limit", False),
])
def test_time_limits_refused(text, fragment, out_of_range):
    with pytest.raises(ValueError, match=re.escape(fragment)) as info:
        parse_time_limit(text)
    assert isinstance(info.value, OutOfRange) == out_of_range

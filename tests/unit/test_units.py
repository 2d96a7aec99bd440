"""Sizes are typed once: every accepted spelling becomes exact bytes; everything else is refused."""

from __future__ import annotations

import pytest

from iolab.units import format_bytes_human, format_size, ior_size_arg, is_size, parse_size

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

"""The stripe guides' rule of thumb (layers/rule.py): requests that are not a whole multiple of
the stripe unit, so that each one spans part of a stripe and a request's pieces land on two
targets, or two clients write into the same stripe."""

from __future__ import annotations

from ..rule import Clear, Finding, Limit, Rule, shown
from .base import file_systems


def _unit(v):
    """(the stripe unit in effect or, where none was recorded, requested, its file system's
    title, and which of the two it is), or None where the case asked for no stripe unit and
    none was recorded."""
    for fs in file_systems():
        if not fs.unit_key:
            continue
        applied = v.optional(fs.unit_evidence)
        if applied is not None:
            return applied, fs.title, "in effect"
        asked = v.param(fs.prefix + fs.unit_key, "B")
        if asked is not None:
            return asked, fs.title, "requested (none was recorded in effect)"
    return None


def _off_stripe(v, rule):
    got = _unit(v)
    if got is None:
        return Clear("the case asked for no stripe unit, and none was recorded")
    unit, title, which = got
    size = v("request_size")
    what = f"{shown(size, 'B')} requests against a {shown(unit, 'B')} {title} stripe unit ({which})"
    if size % unit > rule.limit("remainder"):
        return Finding(f"{what}: not a whole multiple of it")
    return Clear(f"{what}: {size / unit:.0f} whole unit(s) each")


RULES = (
    Rule("transfers_off_stripe", "requests not a multiple of the stripe unit",
         "ARCHER Best Practice Guide, 'Tuning Parallel I/O' (Lustre: \"match your I/O transfer "
         "size to the stripe size or multiples of the stripe size\"); KAUST Shaheen II slides, "
         "Lustre best practices (\"Stripe align, make sure that the I/O requests do not access "
         "multiple OSTs\")",
         (Limit("remainder", 0, "B", "a request's size modulo the stripe unit, above it"),),
         "the benchmark's request size (IOR's transfer size, fio's bs, as they echo it) and a "
         "stripe unit asked for (lustre.stripe_size, cephfs.stripe_unit) or recorded in effect",
         "each request should be one stripe unit or a whole number of them: a request that is "
         "not cuts stripes, so its pieces go to two targets and neighbouring requests share a "
         "stripe (Lustre's extent locks, CephFS's objects)", _off_stripe),
)

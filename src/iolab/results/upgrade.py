"""Runs written by earlier versions of iolab, lifted to what is current in one place.

Case ids: runs recorded before case ids grew to 16 hex digits carry the first 8 digits of the
same hash (experiment/matrix.py: CASE_ID_DIGITS). Wherever a recorded id is set against the
cases of now (pairing two runs, the history a repetition count or a cost estimate reads), it is
lifted here: current_ids(ids) answers, for a recorded id, the current id of the same case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

OLD_CASE_ID_DIGITS = 8     # runs recorded before case ids grew to 16 digits (the same hash's prefix)


def _case_index(case_ids) -> dict[str, str]:
    """id -> id, plus each id's 8-digit prefix where it is unique, so a case recorded under an
    old 8-digit id finds the same case's 16-digit id, and the other way round (_same_case)."""
    ids = list(dict.fromkeys(case_ids))
    index = {cid: cid for cid in ids}
    prefixes: dict[str, list[str]] = {}
    for cid in ids:
        prefixes.setdefault(cid[:OLD_CASE_ID_DIGITS], []).append(cid)
    for prefix, group in prefixes.items():
        if len(group) == 1:
            index.setdefault(prefix, group[0])
    return index


def _same_case(case_id: str, index: dict[str, str]) -> str | None:
    """The id in `index` (see _case_index) that names the same case as case_id, or None. Only an
    old 8-digit id stands for a longer one: two 16-digit ids are the same case only if equal."""
    if case_id in index and (len(case_id) == OLD_CASE_ID_DIGITS or index[case_id] == case_id):
        return index[case_id]
    found = index.get(case_id[:OLD_CASE_ID_DIGITS])
    return found if found is not None and len(found) == OLD_CASE_ID_DIGITS else None


def current_ids(case_ids: Iterable[str]) -> Callable[[str], str | None]:
    """For the cases of now (`case_ids`): a recorded case id -> the id among them that names the
    same case (itself; the 16-digit id of an old 8-digit one; among old ids, the 8-digit id of a
    16-digit one), or None."""
    index = _case_index(case_ids)
    return lambda case_id: _same_case(case_id, index)


def names_case(given: str, recorded: str) -> bool:
    """A case id given by hand (a case id or its prefix) names the recorded case: the recorded
    id starts with it, or, in a run recorded with old 8-digit ids, it starts with the old id."""
    return recorded.startswith(given) or (len(recorded) == OLD_CASE_ID_DIGITS and given.startswith(recorded))

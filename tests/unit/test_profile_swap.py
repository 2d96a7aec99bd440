"""A profile swaps one file system's layout axes for another's: null drops a parameter the
experiment sets (from fixed, matrix or a zip group), and cephfs.* keys take its place. What
cannot be meant is refused at load, with file:line: key: message."""

from __future__ import annotations

import pytest

from iolab.errors import IolabError, IolabErrors
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

KIB, MIB = 1024, 1024**2

STUDY = """
    id: {id}
    description: a Lustre striping study with a CephFS profile
    benchmark: ior
    fixed: {{transfer_size: 1MiB, lustre.stripe_size: 1MiB}}
    zip:
      file_per_process: [true, false]
      api: [POSIX, MPIIO]
      lustre.stripe_offset: [0, -1]
    matrix:
      lustre.stripe_count: [1, 4, -1]
    exclude:
      - {{file_per_process: true, lustre.stripe_count: 4}}
    profiles:
{profile}
"""


def study(write_experiment, profile: str, name: str = "swap"):
    return write_experiment(name, STUDY.format(id=name, profile=profile))


@pytest.fixture(autouse=True)
def _here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)      # messages name the file as given: swap.yaml


def _messages(exc) -> list[str]:
    return [str(e) for e in getattr(exc, "errors", [exc])]


def refused(write_experiment, profile: str, name: str = "swap") -> list[str]:
    """The messages of loading the study with this profile: each one line."""
    with pytest.raises((IolabError, IolabErrors)) as exc:
        load_experiment(study(write_experiment, profile, name))
    return _messages(exc.value)


def test_null_drops_the_lustre_axes_and_cephfs_ones_take_their_place(write_experiment):
    path = study(write_experiment, """
      ceph:
        fixed: {lustre.stripe_size: null, cephfs.object_size: 4MiB}
        matrix:
          lustre.stripe_count: null
          lustre.stripe_offset: null
          cephfs.stripe_count: [1, 2, 4]
          cephfs.stripe_unit: [64KiB, 1MiB, 4MiB]
        exclude:
          - {file_per_process: true, cephfs.stripe_count: 2}
          - {file_per_process: true, cephfs.stripe_count: 4}
    """)
    base = load_experiment(path)
    [part] = base.parts
    assert part.matrix == {"lustre.stripe_count": [1, 4, -1]}
    assert part.fixed["lustre.stripe_size"] == MIB

    ceph = load_experiment(path, "ceph")
    [part] = ceph.parts
    assert part.fixed == {"transfer_size": MIB, "cephfs.object_size": 4 * MIB}
    assert part.matrix == {"cephfs.stripe_count": [1, 2, 4],
                           "cephfs.stripe_unit": [64 * KIB, MIB, 4 * MIB]}
    # the zip group keeps its other lists: only the dropped one is gone
    assert part.zips == [{"file_per_process": [True, False], "api": ["POSIX", "MPIIO"]}]
    cases = expand(ceph)
    assert len(cases) == 3 + 9          # file per process at stripe count 1 only
    assert not any(k.startswith("lustre.") for c in cases for k in c.params)
    assert {c.params["cephfs.stripe_count"] for c in cases if c.params["file_per_process"]} == {1}
    # the experiment as written is untouched by its profile: its cases keep the ids they have
    # without it, so records written before still pair with it
    plain = load_experiment(study(write_experiment, "      {}", name="plain"))
    assert {c.case_id for c in expand(base)} == {c.case_id for c in expand(plain)}
    assert len(expand(base)) == 2 * 3 - 1


def test_a_mistyped_key_to_drop_is_refused_with_the_nearest(write_experiment):
    messages = refused(write_experiment, """
      ceph:
        fixed: {lustre.stripe_size: null}
        matrix: {lustre.stripe_cont: null, lustre.stripe_offset: null, cephfs.stripe_count: [1, 2]}
    """)
    [message] = messages
    assert message.startswith("swap.yaml:17: profiles.ceph.matrix.lustre.stripe_cont: unknown "
                              "parameter 'lustre.stripe_cont' for ior")
    assert "did you mean 'lustre.stripe_count'?" in message


def test_two_file_systems_in_one_case_are_refused(write_experiment):
    messages = refused(write_experiment, """
      ceph:
        matrix: {cephfs.stripe_count: [1, 2]}
    """)
    [message] = messages
    assert message.startswith(
        "swap.yaml:15: profiles.ceph: asks for a CephFS layout (cephfs.stripe_count) and a Lustre "
        "layout (lustre.stripe_count, lustre.stripe_offset, lustre.stripe_size): a case directory "
        "is on one file system, so one request could never be applied")
    assert message.endswith("(drop one with null in profile ceph)")


def test_null_outside_a_profile_and_drop_and_set_at_once_are_refused(write_experiment):
    path = write_experiment("bare-null", """
        id: bare-null
        description: null in the experiment itself
        benchmark: ior
        fixed: {lustre.stripe_count: null}
        """)
    with pytest.raises(IolabError, match=r"^bare-null.yaml:4: fixed.lustre.stripe_count: null "
                                         r"drops a parameter only in a profile"):
        load_experiment(path)
    messages = refused(write_experiment, """
      ceph:
        fixed: {lustre.stripe_size: null, cephfs.stripe_count: 2}
        matrix: {lustre.stripe_count: null, lustre.stripe_offset: null, cephfs.stripe_count: [1]}
        exclude: []
    """, name="twice")
    assert any("'cephfs.stripe_count' is set twice" in m for m in messages)


def test_a_count_below_one_in_a_profile_matrix_is_refused_where_it_is_written(write_experiment):
    messages = refused(write_experiment, """
      ceph:
        fixed: {lustre.stripe_size: null}
        matrix: {lustre.stripe_count: null, lustre.stripe_offset: null, cephfs.stripe_count: [1, -1]}
        exclude: []
    """, name="minus")
    [message] = messages
    assert message.startswith("minus.yaml:17: profiles.ceph.matrix.cephfs.stripe_count[1]: "
                              "-1 is not allowed")


# A profile that cannot be applied as written, and the one message that says where and why.
REFUSED = {
    "drops-what-the-study-does-not-set": ("swap", """
      ceph:
        fixed: {lustre.pool: null, lustre.stripe_size: null}
        matrix: {lustre.stripe_count: null, lustre.stripe_offset: null, cephfs.stripe_count: [1, 2]}
        exclude: []
    """, "swap.yaml:16: profiles.ceph.fixed.lustre.pool: null drops 'lustre.pool', which the "
         "experiment does not set here (remove the key from the profile)"),
    "drops-what-exclude-still-names": ("swap", """
      ceph:
        fixed: {lustre.stripe_size: null}
        matrix: {lustre.stripe_count: null, lustre.stripe_offset: null, cephfs.stripe_count: [1, 2]}
    """, "swap.yaml:17: profiles.ceph.matrix.lustre.stripe_count: dropping 'lustre.stripe_count' "
         "leaves the experiment's exclude entry 0 matching nothing (give the profile its own "
         "exclude (exclude: [] for none))"),
    "contradictory-cephfs-layout": ("contra", """
      ceph:
        fixed: {lustre.stripe_size: null, cephfs.stripe_unit: 4MiB, cephfs.object_size: 1MiB}
        matrix: {lustre.stripe_count: null, lustre.stripe_offset: null}
        exclude: []
    """, "contra.yaml:16: profiles.ceph.fixed.cephfs.object_size: cephfs.object_size 1MiB is not "
         "a multiple of cephfs.stripe_unit 4MiB: the unit must divide the object size"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_profile_that_cannot_apply_is_refused_at_its_line(write_experiment, case):
    name, profile, message = REFUSED[case]
    assert refused(write_experiment, profile, name=name) == [message]

"""MPI-IO hints: expansion, per-flavour translation, and requested-vs-effective on real IOR output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.layers.mpiio import hints as mpiio
from iolab.benchmarks.ior import hints_file as ior_hints_file
from iolab.errors import IolabError

DATA = Path(__file__).resolve().parents[1] / "data" / "romio"


def read(name: str) -> str:
    return (DATA / name).read_text()


def ior_hints(text: str) -> dict[str, str]:
    """What IOR 4.0.0 SetHints/ExtractHint takes from a hints file (src/utilities.c)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("IOR_HINT"):
            setting, value = re.split(r"[ =]+", line.strip(), maxsplit=1)
            out[setting.removeprefix("IOR_HINT__MPI__")] = value.split()[0]
    return out


def romio_file(text: str) -> dict[str, str]:
    """What ROMIO's system-hints reader takes: `key value`, '#' in column 0 is a comment."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.split()
            out[key] = value
    return out


REQUESTED_CB = ior_hints(read("ior_hints_cb.txt"))
REQUESTED_ENV = romio_file(read("romio_hints_env.txt"))


# --- expand_hints ---------------------------------------------------------------------------

def test_expand_converts_types_and_sorts():
    out = mpiio.expand_hints({"romio_no_indep_rw": True, "cb_buffer_size": 4194304,
                              "romio_cb_write": " enable ", "direct_io": False}, 2, 4)
    assert out == {"cb_buffer_size": "4194304", "direct_io": "false", "romio_cb_write": "enable",
                   "romio_no_indep_rw": "true"}
    assert list(out) == sorted(out)


def test_expand_empty():
    assert mpiio.expand_hints({}, 1, 1) == {}


def test_aggregators_becomes_cb_nodes_spread_over_nodes():
    # ROMIO's default cb_config_list *:1 would cap these at 2 (one per node): spread them.
    assert mpiio.expand_hints({"aggregators": 3}, 2, 4) == {"cb_config_list": "*:2", "cb_nodes": "3"}
    assert mpiio.expand_hints({"aggregators": "8"}, 2, 4) == {"cb_config_list": "*:4", "cb_nodes": "8"}
    assert mpiio.expand_hints({"aggregators": 1}, 4, 4) == {"cb_config_list": "*:1", "cb_nodes": "1"}
    # a raw cb_nodes is passed as given
    assert mpiio.expand_hints({"cb_nodes": 4}, 1, 4) == {"cb_nodes": "4"}


def test_aggregators_per_node_sets_config_list_and_total():
    assert mpiio.expand_hints({"aggregators_per_node": 2}, 4, 8) == {"cb_config_list": "*:2",
                                                                      "cb_nodes": "8"}


def test_aggregators_per_node_keeps_given_cb_nodes():
    out = mpiio.expand_hints({"aggregators_per_node": 2, "cb_nodes": 6}, 4, 8)
    assert out == {"cb_config_list": "*:2", "cb_nodes": "6"}


def test_both_aggregator_keys_consistent():
    out = mpiio.expand_hints({"aggregators": 8, "aggregators_per_node": 2}, 4, 8)
    assert out == {"cb_config_list": "*:2", "cb_nodes": "8"}


@pytest.mark.parametrize("hints, nodes, tpn, key, words", [
    ({"aggregators": 0}, 2, 4, "mpiio.aggregators", "between 1 and 8"),
    ({"aggregators": 9}, 2, 4, "mpiio.aggregators", "between 1 and 8"),
    ({"aggregators": -1}, 2, 4, "mpiio.aggregators", "between 1 and 8"),
    ({"aggregators_per_node": 0}, 2, 4, "mpiio.aggregators_per_node", "between 1 and 4"),
    ({"aggregators_per_node": 5}, 2, 4, "mpiio.aggregators_per_node", "between 1 and 4"),
    ({"aggregators": 2, "cb_nodes": 2}, 2, 4, "mpiio.aggregators", "not both"),
    ({"aggregators_per_node": 1, "cb_config_list": "*:1"}, 2, 4, "mpiio.aggregators_per_node",
     "not both"),
    ({"aggregators": 3, "aggregators_per_node": 2}, 2, 4, "mpiio.aggregators", "2 x 2 = 4"),
    ({"aggregators_per_node": 1, "cb_nodes": 3}, 2, 4, "mpiio.cb_nodes", "exceeds"),
    ({"aggregators_per_node": 1, "cb_nodes": "many"}, 2, 4, "mpiio.cb_nodes", "not an integer"),
    ({"aggregators": True}, 2, 4, "mpiio.aggregators", "integer"),
    ({"aggregators": "four"}, 2, 4, "mpiio.aggregators", "not an integer"),
    ({"aggregators": None}, 2, 4, "mpiio.aggregators", "not an integer"),
    ({"romio_cb_write": True}, 1, 1, "mpiio.romio_cb_write", "enable, disable or automatic"),
    ({"cb_buffer_size": 1.5}, 1, 1, "mpiio.cb_buffer_size", "string, integer or boolean"),
    ({"cb_config_list": "n01:1, n02:1"}, 1, 1, "mpiio.cb_config_list", "one word"),
    ({"romio_cb_write": ""}, 1, 1, "mpiio.romio_cb_write", "one word"),
    ({"romio_cb_write": "a=b"}, 1, 1, "mpiio.romio_cb_write", "one word"),
    ({"cb-nodes": 1}, 1, 1, "mpiio.cb-nodes", "letters, digits"),
])
def test_expand_errors_name_the_key(hints, nodes, tpn, key, words):
    with pytest.raises(IolabError) as exc:
        mpiio.expand_hints(hints, nodes, tpn)
    assert exc.value.key == key
    assert words in str(exc.value)
    assert key in str(exc.value)


def test_expand_rejects_empty_scale():
    with pytest.raises(IolabError, match="must be positive"):
        mpiio.expand_hints({"aggregators": 1}, 0, 4)


# --- translate ------------------------------------------------------------------------------

def test_mpich_romio_plan():
    plan = mpiio.translate(REQUESTED_ENV, "mpich-romio")
    assert plan.env == {"ROMIO_PRINT_HINTS": "1", "ROMIO_HINTS": mpiio.ROMIO_HINTS_FILE}
    assert list(plan.files) == [mpiio.ROMIO_HINTS_FILE]
    assert plan.verify == "romio-print"
    # Read back the way ROMIO reads it, it is the captured ROMIO_HINTS file.
    assert romio_file(plan.files[mpiio.ROMIO_HINTS_FILE]) == REQUESTED_ENV
    body = [line for line in plan.files[mpiio.ROMIO_HINTS_FILE].splitlines() if not line.startswith("#")]
    assert body == sorted(read("romio_hints_env.txt").splitlines())


def test_romio_without_hints_still_prints_defaults():
    for flavour in ("mpich-romio", "openmpi-romio"):
        plan = mpiio.translate({}, flavour)
        assert plan.env["ROMIO_PRINT_HINTS"] == "1"
        assert "ROMIO_HINTS" not in plan.env
        assert plan.files == {}
        assert plan.verify == "romio-print"


def test_openmpi_romio_selects_component():
    plan = mpiio.translate({"cb_nodes": "2"}, "openmpi-romio")
    assert plan.env == {"ROMIO_PRINT_HINTS": "1", "ROMIO_HINTS": mpiio.ROMIO_HINTS_FILE,
                        "OMPI_MCA_io": "romio321"}
    assert any("romio_filesystem_type" in note for note in plan.notes)


def test_cray_plan():
    plan = mpiio.translate({"romio_cb_write": "enable", "cb_nodes": "8"}, "cray-mpich")
    assert plan.env == {"MPICH_MPIIO_HINTS_DISPLAY": "1",
                        "MPICH_MPIIO_HINTS": "*:cb_nodes=8:romio_cb_write=enable"}
    assert plan.files == {}
    assert plan.verify == "cray-display"
    assert mpiio.translate({}, "cray-mpich").env == {"MPICH_MPIIO_HINTS_DISPLAY": "1"}


def test_cray_rejects_separator_in_value():
    hints = mpiio.expand_hints({"aggregators_per_node": 2}, 2, 4)
    with pytest.raises(IolabError) as exc:
        mpiio.translate(hints, "cray-mpich")
    assert exc.value.key == "mpiio.cb_config_list"


def test_ompio_plan_maps_to_mca():
    hints = {"cb_nodes": "4", "cb_buffer_size": "8388608", "striping_factor": "8",
             "striping_unit": "4194304"}
    plan = mpiio.translate(hints, "openmpi-ompio")
    assert plan.env == {"OMPI_MCA_io_ompio_num_aggregators": "4",
                        "OMPI_MCA_io_ompio_bytes_per_agg": "8388608",
                        "OMPI_MCA_fs_lustre_stripe_width": "8",
                        "OMPI_MCA_fs_lustre_stripe_size": "4194304"}
    assert plan.verify == "unverified"
    assert plan.files == {}
    assert len(plan.notes) == 2
    assert mpiio.translate({}, "openmpi-ompio").env == {}


def test_ompio_rejects_romio_only_hint():
    with pytest.raises(IolabError) as exc:
        mpiio.translate({"romio_cb_write": "enable"}, "openmpi-ompio")
    text = str(exc.value)
    assert "ompio has no equivalent for romio_cb_write" in text
    assert "'openmpi-romio'" in text and "romio321" in text


def test_unknown_flavour_lists_allowed():
    with pytest.raises(IolabError) as exc:
        mpiio.translate({}, "intel")
    for flavour in mpiio.FLAVOURS:
        assert flavour in str(exc.value)


def test_translate_checks_raw_values():
    with pytest.raises(IolabError, match="one word"):
        mpiio.translate({"cb_config_list": "a b"}, "mpich-romio")


def test_ior_hints_file_reads_back_as_fixture():
    text = ior_hints_file(mpiio.expand_hints({"cb_nodes": 2, "cb_buffer_size": 4194304,
                                                   "romio_cb_write": "enable",
                                                   "romio_cb_read": "enable"}, 1, 4))
    assert ior_hints(text) == REQUESTED_CB
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert sorted(body) == sorted(read("ior_hints_cb.txt").splitlines())
    # The provenance comment is not an IOR_HINT line, so IOR skips it.
    assert text.startswith("# iolab")


# --- parsing what the library printed ---------------------------------------------------------

def test_romio_tables_romio321():
    text = read("ior_hints_romio321_4r.txt")
    tables = mpiio.parse_romio_print(text)
    # -w -r -i 2: access check, data open and size query per phase, plus the removal check.
    assert len(tables) == 12
    assert all(len(t) == 17 and t == tables[0] for t in tables)
    assert tables[0]["romio_filesystem_type"] == "UFS: Generic ROMIO driver for all UNIX-like file systems"
    assert tables[0]["romio_cb_alltoall"] == "automatic"  # padding stripped
    assert tables[0]["cb_config_list"] == "*:1"


def test_back_to_back_tables_are_split():
    text = read("ior_hints_romio321_4r.txt")
    runs = re.findall(r"(?:^key = .*\n)+", text, flags=re.MULTILINE)
    assert len(runs) == 11  # one run holds two tables with no line between them
    assert len(mpiio.parse_romio_print(text)) == 12


def test_romio_tables_env_file():
    tables = mpiio.parse_romio_print(read("ior_romio_hints_env_romio321_4r.txt"))
    assert len(tables) == 6
    assert tables[-1]["cb_buffer_size"] == "8388608"
    assert tables[-1]["romio_ds_write"] == "disable"


def test_romio_tables_tolerate_rank_prefix_and_empty_value():
    text = "0: key = cb_nodes                  value = 2         \nkey = romio_filesystem_type     value = \n"
    assert mpiio.parse_romio_print(text) == [{"cb_nodes": "2", "romio_filesystem_type": ""}]


def test_ompio_prints_no_tables():
    assert mpiio.parse_romio_print(read("ior_hints_ompio_4r.txt")) == []


def test_effective_romio321_cb_nodes_lowered():
    eff = mpiio.effective_hints(read("ior_hints_romio321_4r.txt"), "openmpi-romio")
    assert eff["cb_nodes"] == "1"
    assert eff["cb_buffer_size"] == "4194304"
    result = {e["key"]: e for e in mpiio.compare_hints(REQUESTED_CB, eff)}
    assert result["cb_nodes"] == {"key": "cb_nodes", "requested": "2", "effective": "1",
                                  "status": "changed"}
    assert result["cb_buffer_size"]["status"] == "applied"
    assert result["romio_cb_write"]["status"] == "applied"
    assert result["romio_cb_read"]["status"] == "applied"


def test_effective_env_file_values_show_up():
    eff = mpiio.effective_hints(read("ior_romio_hints_env_romio321_4r.txt"), "mpich-romio")
    assert [e["status"] for e in mpiio.compare_hints(REQUESTED_ENV, eff)] == ["applied"] * 3


def test_effective_ompio_is_unverified_and_echo_is_not_used():
    text = read("ior_hints_ompio_4r.txt")
    echo = mpiio.parse_ior_showhints(text)
    assert echo["passed"] == REQUESTED_CB
    assert echo["returned"] == REQUESTED_CB  # an echo, not evidence
    assert mpiio.effective_hints(text, "openmpi-ompio") is None
    # Even under a romio flavour the echo does not count: no table, nothing observed.
    assert mpiio.effective_hints(text, "openmpi-romio") is None
    result = mpiio.compare_hints(REQUESTED_CB, mpiio.effective_hints(text, "openmpi-ompio"))
    assert {e["status"] for e in result} == {"unverified"}
    assert all(e["effective"] is None for e in result)


def test_effective_ompio_ignores_tables():
    assert mpiio.effective_hints(read("ior_hints_romio321_4r.txt"), "openmpi-ompio") is None


def test_effective_unknown_flavour():
    with pytest.raises(IolabError, match="mpich-romio"):
        mpiio.effective_hints("", "intel")


MULTI_NODE = """\
key = cb_buffer_size            value = 16777216
key = cb_nodes                  value = 1

hints passed to MPI_File_open() {
\tcb_nodes = 2
}
key = cb_buffer_size            value = 16777216
key = cb_nodes                  value = 2

hints returned from opened file {
\tcb_nodes = 2
}
key = cb_buffer_size            value = 16777216
key = cb_nodes                  value = 2
write     226.90     238.33     0.016775    8192       1024.00    0.002055   0.134266   0.004805
key = cb_buffer_size            value = 16777216
key = cb_nodes                  value = 1
"""


def test_effective_takes_the_data_open_not_the_comm_self_check():
    # On two nodes IOR's MPI_COMM_SELF opens (existence checks) print cb_nodes 1; the last table is one.
    eff = mpiio.effective_hints(MULTI_NODE, "mpich-romio")
    assert eff["cb_nodes"] == "2"
    tables = mpiio.parse_romio_print(MULTI_NODE)
    assert [t["cb_nodes"] for t in tables] == ["1", "2", "2", "1"]   # the opens disagree


def test_effective_without_ior_echo_uses_last_table():
    bare = "\n".join(line for line in MULTI_NODE.splitlines() if line.startswith("key = "))
    assert mpiio.effective_hints(bare, "mpich-romio")["cb_nodes"] == "1"


CRAY = """\
PE 0: MPICH MPIIO environment settings:
PE 0:   MPICH_MPIIO_HINTS_DISPLAY                 = 1
PE 0:   MPICH_MPIIO_HINTS                         = *:cb_nodes=8
PE 0: MPIIO hints for /lus/scratch/iolab/ior.dat:
          cb_buffer_size           = 16777216
          romio_cb_write           = enable
          cb_nodes                 = 1
          striping_factor          = 4
          cb_config_list           = *:*
          romio_filesystem_type    = CRAY ADIO:
PE 0: MPIIO hints for /lus/scratch/iolab/ior.dat:
          cb_buffer_size           = 16777216
          romio_cb_write           = enable
          cb_nodes                 = 8
          striping_factor          = 4
          romio_filesystem_type    = CRAY ADIO:

"""


def test_cray_display_blocks():
    blocks = mpiio.parse_cray_display(CRAY)
    assert [b["file"] for b in blocks] == ["/lus/scratch/iolab/ior.dat"] * 2
    assert blocks[0]["hints"]["romio_filesystem_type"] == "CRAY ADIO:"
    assert "MPICH_MPIIO_HINTS" not in blocks[0]["hints"]
    eff = mpiio.effective_hints(CRAY, "cray-mpich")
    assert eff["cb_nodes"] == "8"
    assert mpiio.compare_hints({"cb_nodes": "8", "romio_ds_write": "disable"}, eff) == [
        {"key": "cb_nodes", "requested": "8", "effective": "8", "status": "applied"},
        {"key": "romio_ds_write", "requested": "disable", "effective": None, "status": "missing"}]


def test_cray_parser_never_reads_ior_echo():
    assert mpiio.parse_cray_display(read("ior_hints_ompio_4r.txt")) == []
    assert mpiio.effective_hints(read("ior_hints_romio321_4r.txt"), "cray-mpich") is None


def test_showhints_romio321_and_env():
    echo = mpiio.parse_ior_showhints(read("ior_hints_romio321_4r.txt"))
    assert echo == {"passed": REQUESTED_CB, "returned": REQUESTED_CB}
    assert mpiio.parse_ior_showhints(read("ior_romio_hints_env_romio321_4r.txt")) == {
        "passed": {}, "returned": {}}
    assert mpiio.parse_ior_showhints("no echo here\n") == {"passed": None, "returned": None}
    assert mpiio.parse_ior_showhints("hints passed to MPI_File_open() {\n\tkey = \n}\n") == {
        "passed": {"key": ""}, "returned": None}


# --- compare_hints --------------------------------------------------------------------------

def test_compare_normalises_values():
    effective = {"romio_cb_write": "ENABLE", "cb_buffer_size": " 4194304 ", "romio_ds_read": "Automatic",
                 "romio_no_indep_rw": "TRUE", "cb_nodes": "08", "cb_config_list": "*:1"}
    requested = {"romio_cb_write": "enable", "cb_buffer_size": "4194304", "romio_ds_read": "automatic",
                 "romio_no_indep_rw": "true", "cb_nodes": "8", "cb_config_list": "*:1"}
    assert {e["status"] for e in mpiio.compare_hints(requested, effective)} == {"applied"}


def test_compare_statuses_and_order():
    effective = {"cb_nodes": "1", "romio_cb_write": "disable", "cb_config_list": "*:1"}
    requested = {"striping_factor": "8", "romio_cb_write": "enable", "cb_nodes": "2",
                 "cb_config_list": "*:2"}
    result = mpiio.compare_hints(requested, effective)
    assert [(e["key"], e["status"]) for e in result] == [
        ("cb_config_list", "changed"), ("cb_nodes", "changed"), ("romio_cb_write", "changed"),
        ("striping_factor", "missing")]  # ROMIO's UFS driver ignores striping hints
    assert mpiio.compare_hints({}, effective) == []


# --- hints a file system makes meaningless ---------------------------------------------------

def test_striping_hints_are_not_applied_off_lustre_whatever_romio_echoes():
    requested = {"striping_factor": "4", "striping_unit": "1048576", "cb_nodes": "2",
                 "romio_lustre_co_ratio": "2", "romio_gpfs_free_locks": "enable"}
    why = mpiio.not_applicable(requested, "ext4")
    assert set(why) == {"striping_factor", "striping_unit", "romio_lustre_co_ratio", "romio_gpfs_free_locks"}
    assert why["striping_unit"].startswith("ext4: no striping")
    # ROMIO's UFS driver accepts and prints them: the printout alone would call them applied
    effective = {"striping_factor": "4", "striping_unit": "1048576", "cb_nodes": "2"}
    result = {e["key"]: e for e in mpiio.compare_hints(requested, effective, why)}
    assert result["striping_unit"]["status"] == "not applied"
    assert result["striping_unit"]["reason"] == why["striping_unit"]
    assert result["cb_nodes"]["status"] == "applied"
    assert mpiio.not_applicable(requested, "lustre") == {"romio_gpfs_free_locks": mpiio.not_applicable(
        requested, "lustre")["romio_gpfs_free_locks"]}
    assert mpiio.not_applicable(requested, "unknown") == {} == mpiio.not_applicable(requested, None)


def test_tables_interleaved_with_other_ranks_output_are_read_whole():
    """srun merges the ranks' stdout: 'Writing output to ...' of another rank can split a table."""
    text = (Path(__file__).resolve().parents[1] / "data" / "romio-recorded" /
            "ior_romio_cb4_4nodes_srun.txt").read_text()
    effective = mpiio.effective_hints(text, "openmpi-romio")
    assert effective["cb_nodes"] == "4" and effective["cb_config_list"] == "*:1"
    assert effective["romio_aggregator_list"] == "0 2 4 6"      # one aggregator on each node
    assert len(mpiio.parse_romio_print(text)) == 4


def test_darshans_own_log_table_is_not_the_data_files():
    # Under Darshan, ROMIO also prints the table of Darshan's log open (MPI_Finalize, with
    # DARSHAN_LOGHINTS): BTIO prints no echo to anchor on, so the last table was taken for the data's.
    text = read("btio_darshan_cluster_romio321_4r.txt")
    assert [t["cb_nodes"] for t in mpiio.parse_romio_print(text)] == ["4", "1"]
    eff = mpiio.effective_hints(text, "openmpi-romio", "cb_nodes=1")
    assert eff["cb_nodes"] == "4" and eff["cb_config_list"] == "*:2"
    assert eff["romio_aggregator_list"] == "0 1 2 3"
    # without Darshan the last table is the data's; a last table with other values is kept
    assert mpiio.effective_hints(text, "openmpi-romio")["cb_nodes"] == "1"
    assert mpiio.effective_hints(text, "openmpi-romio", "cb_nodes=2")["cb_nodes"] == "1"
    only_log = text[text.index("Using Parallel netCDF"):]
    assert mpiio.effective_hints(only_log, "openmpi-romio", "cb_nodes=1") is None

"""The published studies against the texts they were transcribed from (../shared/seeds/).

Each study file names its seed (`# seed: <file>`); every row's number must be printed in that
text, the tables that the text prints whole are read from it and compared row by row, and every
quotation in the file's header (`"..."`) must be in the text word for word. Skipped, naming the
folder, where the seeds are not at hand.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from iolab.analysis.published.study import DEFAULT, list_studies, load_study

REPO = Path(__file__).resolve().parents[2]
SEEDS = Path(__file__).resolve().parents[3] / "shared" / "seeds"
MiB = 1024 * 1024

pytestmark = pytest.mark.skipif(not SEEDS.is_dir(), reason=f"seed texts not found: {SEEDS}")

# study file -> seed file (as the seeds' README names them)
SEED_OF = {
    "csc-btio-mahti": "000_2d6ccb77587612f5.txt",
    "archer-fpp-ssf": "001_a4fc0f76de13e6e1.txt",
    "kaust-wrf-striping": "002_b3a74b8938e3a24f.txt",
    "cp2k-aggregators": "003_b855ead873305aac.txt",
    "lustre-adio-talk": "004_4f3671b7878bff54.txt",
}


def seed_text(study: str) -> str:
    return (SEEDS / SEED_OF[study]).read_text()


def flat(text: str) -> str:
    return " ".join(text.split())


def number_text(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def test_every_seed_has_its_study_file_and_the_file_names_it():
    assert set(SEED_OF.values()) == {p.name for p in SEEDS.glob("*.txt")}
    for study, seed in SEED_OF.items():
        assert study in list_studies(REPO)
        assert load_study(study, REPO).citation["seed"].split()[0] == seed


@pytest.mark.parametrize("study", sorted(SEED_OF))
def test_every_row_value_is_printed_in_the_seed(study):
    text = seed_text(study)
    s = load_study(study, REPO)
    assert s.rows
    for row in s.rows:
        shown = number_text(row.value)
        assert re.search(rf"(?<![\d.]){re.escape(shown)}(?![\d])", text), (study, row.line, shown)


@pytest.mark.parametrize("study", sorted(SEED_OF))
def test_every_quotation_in_the_header_is_in_the_seed(study):
    text = flat(seed_text(study))
    s = load_study(study, REPO)
    quotes = [q for value in s.citation.values() for q in re.findall(r'"([^"]+)"', value)]
    assert quotes
    for q in quotes:
        assert flat(q) in text, (study, q)
    for key in ("title", "url", "table", "transcription", "stated", "missing", "seed"):
        assert s.citation.get(key), (study, key)


def test_archer_every_table_row_by_row():
    """The five tables under 'Number of Processes Stripe Count Stripe Size (MiB) Max. Write
    Bandwidth (MiB)': the first is FPP, the other four SSF."""
    text = seed_text("archer-fpp-ssf")
    blocks = text.split("Number of Processes Stripe Count Stripe Size (MiB) Max. Write Bandwidth (MiB)")[1:]
    assert len(blocks) == 5
    printed = []
    for i, block in enumerate(blocks):
        for line in block.strip().splitlines():
            m = re.fullmatch(r"(\d+) (-?\d+) (\d+) (\d+)", line.strip())
            if not m:
                break
            n, count, size, bw = map(int, m.groups())
            printed.append((i == 0, n, count, size * MiB, bw))
    assert len(printed) == 9 + 10 + 10 + 9 + 9
    s = load_study("archer-fpp-ssf", REPO)
    rows = [(r.params["file_per_process"], r.params["scale.num_tasks"], r.params["lustre.stripe_count"],
             r.params["lustre.stripe_size"], r.value) for r in s.rows]
    assert rows == printed
    fpp = {r.params["scale.num_tasks"]: r.value for r in s.rows if r.params["file_per_process"]}
    assert fpp[3072] == 13426 and fpp[6144] == 14425


def test_csc_nine_bandwidths_with_their_hints_files():
    text = seed_text("csc-btio-mahti")
    s = load_study("csc-btio-mahti", REPO)
    assert len(s.rows) == 9
    stated = re.findall(r"(\d+(?:\.\d+)?) MiB/s", text)
    assert sorted(float(v) for v in stated) == sorted(r.value for r in s.rows)
    by_value = {r.value: r.params for r in s.rows}
    # the 2-OST blocking step prints its own romio file, without cb_config_list
    assert "romio_cb_write enable\nromio_no_indep_rw true\nromio_ds_write disable" in text
    assert by_value[4667]["mpiio.cb_config_list"] == DEFAULT
    assert by_value[4667]["mpiio.striping_unit"] == MiB
    # the non-blocking file: striping_unit, cb_config_list *:4, romio_ds_write disable
    assert "striping_unit 1048576\ncb_config_list *:4\nromio_ds_write disable" in text
    for value in (4565, 9520):
        p = by_value[value]
        assert (p["mpiio.striping_unit"], p["mpiio.cb_config_list"], p["mpiio.romio_ds_write"]) == (
            MiB, "*:4", "disable")
    assert by_value[9520]["lustre.stripe_count"] == 2 and by_value[4565]["lustre.stripe_count"] == 1


def test_kaust_restart_timings_and_dd():
    text = seed_text("kaust-wrf-striping")
    s = load_study("kaust-wrf-striping", REPO)
    assert len(s.rows) == 6
    wrf = {r.params["lustre.stripe_count"]: r.value for r in s.rows
           if r.descriptive["table"] == "wrf-restart"}
    assert wrf == {1: 674.26, 144: 10.35}
    assert "Timing for Writing restart for domain        1:   674.26 elapsed" in text
    assert "1216 MPI processes" in text and all(
        r.params["scale.num_tasks"] == 1216 for r in s.rows if r.descriptive["table"] == "wrf-restart")
    dd = {(r.params["storage"], r.metric): r.value for r in s.rows
          if r.descriptive["table"] == "dd-small-file"}
    assert dd == {("scratch", "write_time"): 0.014081, ("node_local", "write_time"): 0.00678089,
                  ("scratch", "write_rate"): 4.7, ("node_local", "write_rate"): 9.7}
    assert "65536 bytes (66 kB) copied, 0.00678089 s, 9.7 MB/s" in text


def test_cp2k_table_1_row_by_row():
    text = seed_text("cp2k-aggregators")
    table = text.split("| Number of MPI aggregators | Net write bandwidth (MiB/s)  |")[1]
    printed = [tuple(float(c) for c in m) for m in re.findall(r"^\| (\d+)\s+\| ([\d.]+)\s+\|$", table, re.M)]
    assert len(printed) == 8
    s = load_study("cp2k-aggregators", REPO)
    assert [(r.params["mpiio.cb_nodes"], r.value) for r in s.rows] == printed
    assert {(r.params["scale.num_tasks"], r.params["lustre.stripe_count"], r.params["lustre.stripe_size"])
            for r in s.rows} == {(192, 1, MiB)}
    assert "stripe count            = 1" in text and "stripe size             = 1048576" in text


def test_adio_talk_tables_row_by_row():
    text = seed_text("lustre-adio-talk")
    s = load_study("lustre-adio-talk", REPO)
    assert len(s.rows) == 4 + 4 + 3 + 3 + 2

    def table(name):
        return [r for r in s.rows if r.descriptive["table"] == name]
    sizes = [int(v) for v in re.findall(r"(\d+) bytes", text.split("IO size\t")[1].splitlines()[0])]
    old = [float(v) for v in re.findall(r"([\d.]+) sec", text.split("Old adio driver\t")[1].splitlines()[0])]
    new = [float(v) for v in re.findall(r"([\d.]+) sec", text.split("New adio driver\t")[1].splitlines()[0])]
    assert [(r.params["transfer_size"], r.value) for r in table("adio-driver-old")] == list(zip(sizes, old))
    assert [(r.params["transfer_size"], r.value) for r in table("adio-driver-new")] == list(zip(sizes, new))
    assert {r.params["scale.num_tasks"] for r in table("adio-driver-new")} == {48}
    assert "IOR performance comparison (48 clients)" in text
    flash = text.split("Time(seconds)\t")[1].splitlines()[0].split("\t")
    assert [r.value for r in table("flash-io-hdf5")] == [float(v) for v in flash]
    assert [(r.params["api"], r.params["collective"]) for r in table("flash-io-hdf5")] == [
        ("HDF5", True), ("HDF5", False), ("POSIX", False)]
    clients = [int(v) for v in text.split("clients\t")[1].splitlines()[0].split("\t")]
    nbytes = [int(v) for v in text.split("Bytes from each client\t")[1].splitlines()[0].split("\t")]
    times = [float(v) for v in text.split("Time consumed\t")[1].splitlines()[0].split("\t")]
    assert [(r.params["scale.num_tasks"], r.params["transfer_size"], r.value)
            for r in table("wrf-mode-hdf5")] == list(zip(clients, nbytes, times))
    assert [r.value for r in table("hdf5-open")] == [1.3, 3.2]
    assert "(1.3 seconds ---- 3.2 seconds)" in text

"""The lines iolab puts around the benchmark in a job script, and the files they leave in the
stage directory for the post-processing to read. Every value goes through shell.py."""

from __future__ import annotations

from pathlib import Path

from .. import shell

EXIT_FILE = "iolab-exit-code.txt"
BINARY_FILE = "iolab-binary.txt"
CASEDIR_FILE = "iolab-casedir.txt"
MKDIR_FILE = "iolab-mkdir.txt"
TIMES_FILE = "iolab-times.txt"
NODES_FILE = "iolab-nodes.txt"
# bash's clock, no process forked (date where bash is older than 5)
_NOW = '"${EPOCHREALTIME:-$(date +%s.%N)}"'


def lines(case_dir: str, spec, stage: Path, layer_pre: list[str], layer_post: list[str], *,
          remove_data: bool, nodes: tuple[list[str], str] | None = None) -> tuple[list[str], list[str]]:
    """(prerun, postrun): make and check the case directory, the layers' lines (its layout),
    note the binary, the nodes and the benchmark's start; then its exit status first, its end,
    the layers' read-back, and the data's removal (unless reads of it come later).
    nodes: (lines that find them, their shell word) where the job's nodes are not Slurm's
    $SLURM_JOB_NODELIST (a step of an allocation: allocation.step)."""
    d = shell.path_word(case_dir, "case directory")
    exe = shell.word(spec.executable)
    times = shell.word(str(stage / TIMES_FILE))
    pre = []
    for name in shell.variables(case_dir):
        # a job-time location the job does not have would put the case under / : stop instead;
        # exported, so a program that expands it itself (fio's job file) sees the same value
        pre.append(f'[ -n "${{{name}:-}}" ] || '
                   + shell.stop_job(f"the case directory {case_dir} needs ${name}, which is not "
                                    "set in the job"))
        pre.append(f"export {name}")
    pre += [
        # a case directory that cannot be made stops the job before the benchmark, with why
        f"mkdir -p {d} 2> {MKDIR_FILE} || "
        + shell.stop_job(f"cannot create the case directory {case_dir}", MKDIR_FILE),
        f"printf '%s\\n' {d} > {CASEDIR_FILE}",
        # input files naming a job-time location are written here, the path as mkdir's
        *(shell.write_file(name, spec.files[name], path, max_line)
          for name, (path, max_line) in spec.job_files.items()),
        *layer_pre,
        # which binary ran, and its checksum: versions are not always printed
        f"{{ command -v {exe} && sha256sum \"$(command -v {exe})\"; }} > {BINARY_FILE}",
    ]
    if nodes is None:
        # the nodes the scheduler gave the job, as the job sees them (Slurm)
        pre.append(f"printf '%s\\n' \"${{SLURM_JOB_NODELIST:-}}\" > {NODES_FILE}")
    else:
        pre += [*nodes[0], f"printf '%s\\n' {nodes[1]} > {NODES_FILE}"]
    # $? of the benchmark must be read first, before any other command runs.
    post = [f"echo $? > {EXIT_FILE}"]
    if spec.workdir:
        # the benchmark runs where it writes; the job's own files stay in the stage dir
        pre.append(f"cd {shell.path_word(spec.workdir, 'working directory')}")
        post = [f"iolab_rc=$?; cd - >/dev/null; echo $iolab_rc > {EXIT_FILE}"]
    pre.append(f"printf '%s\\n' {_NOW} > {times}")
    post.append(f"printf '%s\\n' {_NOW} >> {times}")
    post += layer_post
    if remove_data:
        post.append(f"rm -rf {d}")
    return pre, post

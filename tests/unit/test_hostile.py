"""Hostile input: every file in tests/data/hostile/ (and a few too large to commit, made here) through
`iolab validate`, `iolab plan` and `iolab render` as real processes, and through the loader in-process.

Whatever the input, the answer is a clear error (`file:line: key: message`, exit 2) or, for the few
valid files, success: never a traceback, never a hang."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.errors import IolabError
from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "tests" / "data" / "hostile"
# seconds per command: a hang fails the test. Three commands run at once, and the largest
# legal matrix took over 5 s on a loaded 2-core CI machine; speed is scripts/bench's, not this.
TIMEOUT = 30

OK, LOAD, CASES = (0, 0, 0), (2, 2, 2), (2, 2, 0)   # exit codes of validate, plan, render
# (render only loads each experiment; errors found when expanding the cases leave it at 0)

# file stem -> (exit codes, what the error says)
EXPECTED = {
    "invalid-utf8": (LOAD, "invalid-utf8.yaml:2: not valid UTF-8: byte 0xe9 at byte offset 33"),
    "utf16-bom": (LOAD, "utf16-bom.yaml:1: not valid UTF-8: byte 0xff at byte offset 0 (it starts with "
                        "a UTF-16 byte-order mark: save it as UTF-8)"),
    "utf8-bom": (OK, None),
    "nul-byte": (LOAD, "nul-byte.yaml:4: not valid YAML: a NUL byte (U+0000) is not allowed"),
    "binary-junk": (LOAD, "binary-junk.yaml:1: not valid UTF-8: byte 0x9f at byte offset 4"),
    "empty": (LOAD, "empty.yaml:1: the file is empty"),
    "only-comments": (LOAD, "only-comments.yaml:1: the file is empty"),
    "top-level-list": (LOAD, "top-level-list.yaml:1: an experiment must be a mapping"),
    "top-level-scalar": (LOAD, "top-level-scalar.yaml:1: an experiment must be a mapping"),
    "tabs": (LOAD, "tabs.yaml:5: not valid YAML: found character '\\t' that cannot start any token"),
    "duplicate-keys": (LOAD, "duplicate-keys.yaml:5: repetitions: duplicate key 'repetitions'"),
    "two-documents": (LOAD, "two-documents.yaml:4: not valid YAML: but found another document"),
    "crlf-line-endings": (OK, None),
    "deep-flow": (LOAD, "deep-flow.yaml:4: nested more than 64 levels deep"),
    "deep-block": (LOAD, "deep-block.yaml:68: nested more than 64 levels deep"),
    "deep-alias-chain": (LOAD, "deep-alias-chain.yaml:67: nested more than 64 levels deep once its "
                               "aliases are expanded"),
    "alias-bomb": (LOAD, "alias-bomb.yaml:9: more than 100000 values once its aliases are expanded"),
    "recursive-mapping": (LOAD, "recursive-mapping.yaml:4: *a is used inside &a itself"),
    "recursive-list": (LOAD, "recursive-list.yaml:4: *t is used inside &t itself"),
    "merge-recursive": (LOAD, "merge-recursive.yaml:6: *m is used inside &m itself"),
    "merge-bomb": (LOAD, "merge-bomb.yaml:6: more than 100000 values once its aliases are expanded"),
    "merge-scalar": (LOAD, "merge-scalar.yaml:5: not valid YAML: expected a mapping or list of mappings "
                           "for merging"),
    "undefined-alias": (LOAD, "undefined-alias.yaml:4: not valid YAML: found undefined alias 'nowhere'"),
    "anchor-twice": (LOAD, "anchor-twice.yaml:5: anchor &f is defined twice (first at line 4)"),
    "key-int": (LOAD, "key-int.yaml:5: fixed: keys must be strings, got an integer (1)"),
    "key-null": (LOAD, "key-null.yaml:5: fixed: keys must be strings, got null"),
    "key-empty": (LOAD, "key-empty.yaml:5: not valid YAML"),
    "key-bool": (LOAD, "key-bool.yaml:5: fixed: keys must be strings, got a boolean (True)"),
    "key-float": (LOAD, "key-float.yaml:5: fixed: keys must be strings, got a number (1.5)"),
    "key-date": (LOAD, "key-date.yaml:4: keys must be strings, got a date"),
    "key-list": (LOAD, "key-list.yaml:5: fixed: keys must be strings, got a list"),
    "key-mapping": (LOAD, "key-mapping.yaml:4: fixed: keys must be strings, got a mapping"),
    "huge-integer": (LOAD, "huge-integer.yaml:4: an integer of 5000 digits is far too large"),
    "bad-date": (LOAD, "bad-date.yaml:4: cannot read this value: month must be in 1..12"),
    "python-tag": (LOAD, "python-tag.yaml:4: source: the tag !!python/object/apply:os.system is not "
                         "allowed"),
    "unknown-tag": (LOAD, "unknown-tag.yaml:4: not valid YAML: could not determine a constructor for "
                          "the tag '!include'"),
    "binary-tag": (LOAD, "binary-tag.yaml:2: description: expected string, got bytes b'hello'"),
    "nan-repetitions": (LOAD, "nan-repetitions.yaml:4: repetitions: expected integer, got number nan"),
    "ctl-id-block-scalar": (LOAD, "ctl-id-block-scalar.yaml:1: id: ends with a newline (U+000A)"),
    "ctl-tag-newline": (LOAD, "ctl-tag-newline.yaml:4: tags[1]: ends with a newline (U+000A)"),
    "ctl-pool-newline": (LOAD, "ctl-pool-newline.yaml:4: fixed.lustre.pool: ends with a newline"),
    "ctl-directive-injection": (LOAD, "ctl-directive-injection.yaml:4: job.extra_directives[0]: has at "
                                      "character 20 a newline (U+000A)"),
    "ctl-resource-newline": (LOAD, "ctl-resource-newline.yaml:4: job.resources.bb.capacity: has at "
                                   "character 5 a newline"),
    "ctl-extra-args-escape": (LOAD, "ctl-extra-args-escape.yaml:4: fixed.extra_args[0]: has at character 3 "
                                    "an escape character (U+001B)"),
    "ctl-fio-extra-args-nul": (LOAD, "ctl-fio-extra-args-nul.yaml:4: fixed.extra_args[0]: has at "
                                     "character 9 a NUL byte (U+0000)"),
    "ctl-key-carriage-return": (LOAD, "ctl-key-carriage-return.yaml:4: fixed\\r: the key ends with a "
                                      "carriage return (U+000D)"),
    "ctl-description-escape": (LOAD, "ctl-description-escape.yaml:2: description: has at character 5 an "
                                     "escape character (U+001B)"),
    "ctl-line-separator": (LOAD, "ctl-line-separator.yaml:4: source: has at character 4 a line separator "
                                 "(U+2028)"),
    "ctl-free-text-ok": (OK, None),
    "ctl-cb-config-list": (LOAD, "ctl-cb-config-list.yaml:4: fixed.mpiio.cb_config_list: ends with a "
                                 "newline"),
    "size-zero-block": (LOAD, "size-zero-block.yaml:4: fixed.block_size: 0 is not allowed: give at "
                              "least 1B"),
    "size-zero-fio": (LOAD, "size-zero-fio.yaml:4: fixed.bs: '0k' is not allowed: give at least 1B"),
    "size-negative": (LOAD, "size-negative.yaml:4: fixed.transfer_size: '-4m' is not a size"),
    "size-huge": (LOAD, "size-huge.yaml:4: fixed.block_size: '999999999999999999999p' is larger than "
                        "1EiB"),
    "size-huge-integer": (LOAD, "size-huge-integer.yaml:4: fixed.block_size: 1180591620717411303424 is "
                                "larger than 1EiB"),
    "stripe-count-zero": (LOAD, "stripe-count-zero.yaml:4: matrix.lustre.stripe_count[1]: 0 is not "
                                "allowed: -1 (all OSTs) or a count from 1"),
    "stripe-size-zero": (LOAD, "stripe-size-zero.yaml:4: fixed.lustre.stripe_size: 0 is not allowed: "
                               "a multiple of 64KiB"),
    "stripe-size-unaligned": (LOAD, "stripe-size-unaligned.yaml:4: fixed.lustre.stripe_size: '96k' "
                                    "(98304 bytes) is not allowed"),
    "pfl-zero-end": (LOAD, "pfl-zero-end.yaml:4: fixed.lustre.components[0].end: 0 is not allowed"),
    "time-limit-zero": (LOAD, "time-limit-zero.yaml:4: job.time_limit: '0s' is no time at all"),
    "time-limit-huge": (LOAD, "time-limit-huge.yaml:4: job.time_limit: '400d' is longer than 365 days"),
    "time-limit-overflow": (LOAD, "time-limit-overflow.yaml:4: job.time_limit: '99999999999999999999d' "
                                  "does not match"),
    "repetitions-huge": (LOAD, "repetitions-huge.yaml:4: repetitions: 1000000000 is out of range "
                               "(maximum 1000)"),
    "unknown-keys": (LOAD, "unknown-keys.yaml:6: darshan.enable: unknown key 'enable'"),
    "wrong-types": (LOAD, "wrong-types.yaml:6: tags: expected list, got string 'single'"),
    "null-values": (LOAD, "null-values.yaml:3: benchmark: null is not allowed"),
    "string-for-mapping": (LOAD, "string-for-mapping.yaml:4: fixed: expected mapping, got string"),
    "lookalike-key": (LOAD, "lookalike-key.yaml:2: d\u0435scription: unknown key 'd\u0435scription' "
                            "(did you mean 'description'?"),
    "lookalike-param": (LOAD, "lookalike-param.yaml:4: fixed.block_s\u0456ze: unknown parameter "
                              "'block_s\u0456ze' for ior (did you mean 'block_size'?"),
    "profile-typo": (LOAD, "profile-typo.yaml:5: profiles.small.fixd: unknown key 'fixd' (did you mean "
                           "'fixed'?"),
    "profile-bad-value": (LOAD, "profile-bad-value.yaml:6: profiles.small.fixed.segments: 0 is out of "
                                "range"),
    "matrix-ten-million": (CASES, "matrix-ten-million.yaml: the matrix would make 10,000,000 cases"),
    "matrix-over-limit": (CASES, "matrix-over-limit.yaml: the matrix would make 10,001 cases (73 segments "
                                 "x 137 iterations), more than the limit of 10,000 per experiment"),
    "matrix-at-limit": (OK, None),
    "zip-unequal": (LOAD, "zip-unequal.yaml:4: zip: zip lists must have equal lengths"),
    "zip-twice": (LOAD, "zip-twice.yaml:6: zip[1].segments: 'segments' is set twice"),
    "zip-not-lists": (LOAD, "zip-not-lists.yaml:5: zip.segments: expected list, got integer 4"),
    "exclude-everything": (CASES, "exclude-everything.yaml: the matrix expands to no cases"),
    "exclude-unknown": (LOAD, "exclude-unknown.yaml:5: exclude[0].segmnts: unknown parameter 'segmnts'"),
    "ior-summary-file": (CASES, "extra_args '-OsummaryFile=/tmp/x': iolab owns the summary file"),
}

# Made here rather than committed: megabytes, or 20,000 levels. name -> (text, codes, what it says)
GENERATED = {
    "deep-flow-20000": ("[" * 20_000 + "]" * 20_000, LOAD, "nested more than 64 levels deep"),
    "deep-map-20000": ("{a: " * 20_000 + "1" + "}" * 20_000, LOAD, "nested more than 64 levels deep"),
    "deep-list-20000": ("\n    " + "- " * 20_000 + "x", LOAD, "nested more than 64 levels deep"),
    # two spaces a level: 3,000 levels are 9 MB already
    "deep-block-3000": ("\n" + "".join("  " * (i + 1) + "a:\n" for i in range(3_000)), LOAD,
                        "nested more than 64 levels deep"),
    "laughs-30x30": (None, LOAD, "more than 100000 values once its aliases are expanded"),
    "many-keys": (None, LOAD, "more than 100000 values"),
    "string-1mb": (None, OK, None),
    "id-1mb": (None, LOAD, "id: 'aaaaaaaa"),
}


def _generated(name: str) -> str:
    text, _, _ = GENERATED[name]
    head = f"id: {name}\ndescription: x\nbenchmark: ior\n"
    if name == "laughs-30x30":
        return head + "l0: &l0 [" + ", ".join(["lol"] * 30) + "]\n" + "".join(
            f"l{k}: &l{k} [{', '.join([f'*l{k - 1}'] * 30)}]\n" for k in range(1, 30))
    if name == "many-keys":
        return head + "verify:\n" + "".join(f"  k{i}: {i}\n" for i in range(150_000))
    if name == "string-1mb":
        return head.replace("description: x", "description: " + "x" * 1_000_000)
    if name == "id-1mb":
        return "id: " + "a" * 1_000_000 + "\ndescription: x\nbenchmark: ior\n"
    return head + "fixed: " + text + "\n"


def _run_all(commands, cwds: list[Path], env: dict) -> list[subprocess.CompletedProcess]:
    """Run the commands at once, each with its own timeout."""
    procs = [subprocess.Popen([sys.executable, "-m", "iolab.cli", *args], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              errors="replace") for args, cwd in zip(commands, cwds)]
    done = []
    for args, proc in zip(commands, procs):
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
                p.communicate()
            pytest.fail(f"iolab {' '.join(args)} did not answer within {TIMEOUT} s")
        done.append(subprocess.CompletedProcess(args, proc.returncode, out, err))
    return done


def _check_commands(tmp_path: Path, source: Path, codes, fragment) -> None:
    stem = source.stem
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(source, work / source.name)
    # render works on a project: a throwaway one with this file as its only experiment
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    shutil.copy(source, project / "experiments" / source.name)
    env = {**os.environ, "IOLAB_ROOT": str(project), "IOLAB_TEMPLATES": str(REPO / "templates")}
    env.pop("IOLAB_MAX_CASES", None)
    validate, plan, render = _run_all([["validate", source.name], ["plan", source.name],
                                       ["render"]], [work, work, project], env)
    for out, code in zip((validate, plan, render), codes):
        shown = f"iolab {' '.join(out.args)}: exit {out.returncode}\n{out.stdout[-2000:]}{out.stderr}"
        assert out.returncode == code, shown
        assert "Traceback" not in out.stdout + out.stderr, shown
        if code:
            # file:line: message, or file: message where no line applies
            assert re.search(rf"(^|\s|/){re.escape(stem)}\.yaml(:\d+)?: \S", out.stderr), shown
            assert fragment in out.stderr, shown
            assert len(out.stderr) < 10_000, "an error message should be read, not scrolled"
        else:
            assert out.stderr == "", shown
    if codes[2] == 0:
        assert (project / "reframe" / "generated" / f"{stem.replace('-', '_')}.py").is_file()


def _check_in_process(path: Path, codes) -> None:
    """The loader itself: IolabError or success, nothing else."""
    try:
        exp = load_experiment(path)
        for profile in [None, *exp.profiles]:
            expand(load_experiment(path, profile))
    except IolabError:
        assert codes[0] == 2, f"{path.name} should be valid"
    else:
        assert codes[0] == 0, f"{path.name} should be refused"


@pytest.mark.parametrize("stem", sorted(EXPECTED))
def test_hostile_file(tmp_path, stem, monkeypatch):
    monkeypatch.delenv("IOLAB_MAX_CASES", raising=False)
    codes, fragment = EXPECTED[stem]
    path = HOSTILE / f"{stem}.yaml"
    _check_commands(tmp_path, path, codes, fragment)
    _check_in_process(path, codes)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_hostile_file(tmp_path, name, monkeypatch):
    monkeypatch.delenv("IOLAB_MAX_CASES", raising=False)
    _, codes, fragment = GENERATED[name]
    path = tmp_path / "made" / f"{name}.yaml"
    path.parent.mkdir()
    path.write_text(_generated(name))
    _check_commands(tmp_path, path, codes, fragment)
    _check_in_process(path, codes)


def test_the_corpus_is_complete_and_described():
    files = {p.stem for p in HOSTILE.glob("*.yaml")}
    assert files == set(EXPECTED) and len(files) >= 40
    readme = (HOSTILE / "README.md").read_text()
    listed = set(re.findall(r"^- `([a-z0-9-]+)\.yaml`: \S", readme, re.MULTILINE))
    assert listed == files

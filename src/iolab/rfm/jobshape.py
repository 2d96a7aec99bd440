"""What a partition's scheduler can take from an experiment's `job:` section.

ReFrame drops what a scheduler does not know without a word: directives on a scheduler that
writes none (local, ssh), resources the partition does not define, placeholders left unfilled.
iolab checks first and refuses, naming what would have been lost.
"""

from __future__ import annotations

import re
import string

# Directive prefixes each ReFrame scheduler backend writes into (or honours in) its job script.
DIRECTIVE_PREFIXES = {
    "slurm": ("#SBATCH", "#DW", "#BB"), "squeue": ("#SBATCH", "#DW", "#BB"),
    "pbs": ("#PBS",), "torque": ("#PBS",), "pbspro": ("#PBS",),
    "lsf": ("#BSUB",), "sge": ("#$",), "oar": ("#OAR",), "flux": ("#FLUX",),
    "local": (), "ssh": (),
}
# A resource value fills a placeholder of a directive line: one word, nothing a scheduler or a
# shell would read as more than that value.
_RESOURCE_VALUE = re.compile(r"[A-Za-z0-9_.:/+@%-]+")


def check_directives(scheduler: str, system: str, directives) -> str | None:
    """A reason the partition's scheduler would drop one of these lines, or None."""
    if not directives:
        return None
    name = scheduler
    known = DIRECTIVE_PREFIXES.get(name)
    for line in directives:
        if "\n" in line or "\r" in line:
            return f"job.extra_directives: {line!r} is more than one line"
        prefix = line.split(None, 1)[0] if line.strip() else ""
        if known is None:
            return (f"job.extra_directives: iolab does not know which directives the {name!r} "
                    f"scheduler of {system} takes, so {line!r} may be ignored")
        if prefix not in known:
            takes = ", ".join(known) if known else "no directives (its jobs have no preamble)"
            return (f"job.extra_directives: {line!r} cannot be applied on {system}: "
                    f"its {name!r} scheduler takes {takes}")
    return None


def check_resources(system: str, defined: dict, resources: dict) -> str | None:
    """A reason the partition would drop one of these resources (or a value of one), or None.
    defined: the partition's resources, name -> the option templates."""
    if not resources:
        return None
    for name, values in resources.items():
        if name not in defined:
            known = ", ".join(sorted(defined)) or "none"
            return (f"job.resources: {system} defines no resource {name!r} "
                    f"(its resources: {known}); it would be dropped without a word")
        for key, value in values.items():
            if not _RESOURCE_VALUE.fullmatch(str(value)):
                return (f"job.resources.{name}.{key}: {str(value)!r} is not one word "
                        f"(letters, digits and _.:/+@%- only)")
        wanted = {field for template in defined[name]
                  for _, field, _, _ in string.Formatter().parse(template) if field}
        missing, unused = wanted - set(values), set(values) - wanted
        if missing:
            return (f"job.resources.{name}: {system} needs {', '.join(sorted(missing))} "
                    f"for it (its lines: {'; '.join(defined[name])})")
        if unused:
            return (f"job.resources.{name}: {', '.join(sorted(unused))} is not used by "
                    f"{system}'s definition (its lines: {'; '.join(defined[name])})")
    return None

"""Building the I/O stack of spack.yaml before any run: from an offline Spack bundle (bundle.py
reads, checks and writes one; build.py sets Spack up from it and installs the environment).

Run-time questions (where a case's binaries come from) live in iolab.software.
"""

from pathlib import Path

# In a checkout: the environment `scripts/setup --spack-bundle` built for it (one line: its path),
# which the local systems use (rfm/systems.py)
SPACK_ENV_NOTE = Path(".iolab") / "spack-env"

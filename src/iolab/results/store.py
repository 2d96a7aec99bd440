"""The names other modules imported from here before the store was split (rundir.py writes a
run, lock.py holds it, files.py opens its files, manifests.py reads its manifest, decoding.py
its records).

Kept only while cli.py, rfm/ and analysis/ (campaign, search) are being restructured elsewhere,
so that their imports need not change at the same time; new code imports from the modules
above, and this module goes once those callers do.
"""

from .files import MAX_IMPORT_BYTES, MAX_RECORDS_BYTES, open_regular, readable_file  # noqa: F401
from .lock import check_not_running, holding  # noqa: F401
from .manifests import read_manifest, read_manifest_shared  # noqa: F401
from .rundir import RunDir  # noqa: F401
from .runfiles import MANIFEST, RECORDS, results_root  # noqa: F401

"""`python -m iolab.cli`: as the `iolab` command."""

import sys

from .app import main

sys.exit(main())

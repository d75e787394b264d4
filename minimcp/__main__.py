"""``python -m minimcp``: the ``minimcp`` command, for an environment whose scripts are not on PATH."""

import sys

from minimcp.cli import main

sys.exit(main())

"""``python -m aflite_core`` runs the command line (see :mod:`aflite_core.cli`)."""

import sys

from .cli import main

sys.exit(main())

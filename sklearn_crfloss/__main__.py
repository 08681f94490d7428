"""``python -m sklearn_crfloss``: the ``crfloss`` command (see :mod:`sklearn_crfloss.cli`)."""

import sys

from .cli import main

sys.exit(main())

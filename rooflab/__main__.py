"""`python -m rooflab ...`: the same as the `rooflab` console script."""

import sys

from .cli import main

sys.exit(main())

"""`python -m rooflab.cli ...`: the same as the `rooflab` console script."""

import sys

from . import main

sys.exit(main())

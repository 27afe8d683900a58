"""`python -m rooflab ...`: the same as the `rooflab` console script, through the same first code (rooflab._entry:
Ctrl-C while the CLI's modules load ends as one line and exit 130, not a KeyboardInterrupt traceback)."""

from ._entry import main

main()

"""`python -m decider.cli`: the `decider` command."""

import sys

from decider.cli.entry import main

sys.exit(main())

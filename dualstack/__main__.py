"""`python -m dualstack` is the same as the `dualstack` console script."""

import sys

from dualstack.cli import main

sys.exit(main())

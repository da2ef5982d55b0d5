"""`python3 -m precision_check ...` (in the Job) or `python -m dualstack.precision_check`."""

import sys

from .cli import main

sys.exit(main())

"""``python -m memlab.cli``."""

import sys

from memlab.cli import main

sys.exit(main())

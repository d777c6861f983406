"""``python -m tools.side_by_side`` (``make side-by-side``): see ``run.py``."""

import sys

from tools.side_by_side.run import main

sys.exit(main())

"""Makes the shared registration/payout test stack (tests/unit/registration/reg_harness.py)
importable from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "registration"))

# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Make the collection importable for ``pytest tests/adversarial``: tests/unit/conftest.py
installs the collection loader when imported; load it once, by path."""

import importlib.util
import sys
from pathlib import Path

_NAME = "_hpc_gpu_containers_unit_conftest"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).resolve().parents[1] / "unit" / "conftest.py")
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_NAME])

# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The checkout as ``ansible_collections.hpc.gpu_containers``, for the benchmarks (a helper, not a benchmark)."""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def link_collection(base):
    """``base/ansible_collections/hpc/gpu_containers``, a link to the checkout (made when missing); ``base``."""
    (base / "ansible_collections" / "hpc").mkdir(parents=True, exist_ok=True)
    link = base / "ansible_collections" / "hpc" / "gpu_containers"
    if not link.is_symlink():
        link.symlink_to(ROOT)
    return base


def import_collection():
    """Make the collection's plugins importable in this process, from a temporary tree removed at exit."""
    base = Path(tempfile.mkdtemp(prefix="bench-coll-"))
    atexit.register(shutil.rmtree, base, True)
    sys.path.insert(0, str(link_collection(base)))

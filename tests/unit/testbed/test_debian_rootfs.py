# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One Debian root filesystem recipe for every test-bed image (tools/debian-rootfs.sh): each image script sources
it, puts it in its recipe hash (a change there rebuilds every image), and runs mmdebstrap only through it."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LIB = ROOT / "tools" / "debian-rootfs.sh"
SCRIPTS = [ROOT / "tools" / "node-image.sh", ROOT / "tools" / "slurm-image.sh", ROOT / "tools" / "ppc64le-node.sh",
           ROOT / "molecule" / "resources" / "el-standin" / "image.sh", ROOT / "tools" / "volclava-image.sh"]


def _code(path):
    return "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("#"))


def test_every_script_that_runs_mmdebstrap_is_known():
    runners = {path for path in list(ROOT.glob("tools/*.sh")) + list(ROOT.glob("molecule/**/*.sh"))
               if re.search(r"^\s*(SOURCE_DATE_EPOCH=\S+\s+)?mmdebstrap\s", _code(path), re.M)}
    assert runners == {LIB}, "mmdebstrap run outside tools/debian-rootfs.sh: %s" % sorted(map(str, runners - {LIB}))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_image_sources_the_recipe_and_hashes_it(script):
    code = _code(script)
    assert re.search(r'^\s*\. "\$lib"$', code, re.M), "%s does not source tools/debian-rootfs.sh" % script.name
    assert re.search(r"debian-rootfs\.sh", code)
    hash_line = next(line for line in code.splitlines() if line.strip().startswith("recipe_hash="))
    assert '"$lib"' in hash_line, "%s: the recipe hash leaves tools/debian-rootfs.sh out: %s" % (
        script.name, hash_line.strip())
    assert "debian_rootfs " in code

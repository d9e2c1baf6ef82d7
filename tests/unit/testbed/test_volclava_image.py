# Copyright: hpc.gpu_containers contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LSF-family node image (tools/volclava-image.sh) is built only from the vendored volclava source whose
sha256 its README states: a changed source stops the build before Docker or mmdebstrap is called."""

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tools" / "volclava-image.sh"
SOURCE = ROOT / "molecule" / "resources" / "volclava" / "volclava-2.2.0-beta.tar.gz"
README = ROOT / "molecule" / "resources" / "volclava" / "README.md"


def test_the_source_is_the_one_the_readme_and_the_script_name():
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    assert re.search(r"^source_sha256=%s$" % digest, SCRIPT.read_text(), re.M)
    assert digest in README.read_text()


def test_a_changed_source_stops_the_build_before_anything_runs(tmp_path):
    (tmp_path / "tools").mkdir()
    for name in ("volclava-image.sh", "debian-rootfs.sh"):
        shutil.copy(ROOT / "tools" / name, tmp_path / "tools" / name)
    source = tmp_path / "molecule" / "resources" / "volclava" / SOURCE.name
    source.parent.mkdir(parents=True)
    data = SOURCE.read_bytes()
    source.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    # Docker and mmdebstrap stand-ins that leave a mark when called.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("docker", "mmdebstrap"):
        (bindir / tool).write_text("#!/bin/sh\ntouch %s/called-%s\n" % (tmp_path, tool))
        (bindir / tool).chmod(0o755)
    proc = subprocess.run(["bash", str(tmp_path / "tools" / "volclava-image.sh")], capture_output=True, text=True,
                          check=False, env={"PATH": "%s:/usr/bin:/bin" % bindir})
    assert proc.returncode == 1
    assert "%s has sha256 %s, not " % (source.resolve(), hashlib.sha256(source.read_bytes()).hexdigest()) in proc.stderr
    assert not list(tmp_path.glob("called-*"))

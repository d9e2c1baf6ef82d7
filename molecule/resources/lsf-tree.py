#!/usr/bin/env python
# Copyright: contributors to hpc.gpu_containers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pack the test bed's LSF installation into one tarball rooted at /.

    lsf-tree.py ARCH OUT.tar [LSFADMIN_UID]

ARCH is the node's `uname -m`. The tarball holds what a fresh LSF 10.1
install leaves on a host: the configuration tree of tests/fixtures/lsf10.1
under /usr/share/lsf/conf (owned by lsfadmin), the log and work directories,
the binary type directory with the recording stub linked as the LSF
commands and the Docker driver scripts, /etc/profile.d/lsf.sh, and the
stub's log, state and switch directories. One archive, extracted once per
node, costs one transfer instead of dozens of file tasks.
"""

import io
import os
import sys
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "..", "tests", "fixtures", "lsf10.1")
STUB = os.path.join(HERE, "lsf-stubs", "lsf_stub.py")
LSF_TOP = "usr/share/lsf"
BIN_TYPES = {
    "x86_64": "linux3.10-glibc2.17-x86_64",
    "ppc64le": "linux3.10-glibc2.17-ppc64le",
    "aarch64": "linux3.10-glibc2.17-armv8",
}
COMMANDS = ["lsadmin", "badmin", "lshosts", "lsid", "bsub", "bhosts", "bjobs"]
DRIVER_SCRIPTS = ["docker-starter.py", "docker-control.py", "docker-monitor.py"]
MTIME = 1700000000


def entry(name, kind, mode, uid=0, target=None):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.mode = mode
    info.uid = info.gid = uid
    info.mtime = MTIME
    if target is not None:
        info.linkname = target
    return info


def main(argv):
    if len(argv) not in (3, 4) or argv[1] not in BIN_TYPES:
        sys.stderr.write("usage: lsf-tree.py {%s} OUT.tar [LSFADMIN_UID]\n" % ",".join(BIN_TYPES))
        return 2
    bin_dir = "%s/10.1/%s" % (LSF_TOP, BIN_TYPES[argv[1]])
    admin = int(argv[3]) if len(argv) == 4 else 1500
    with tarfile.open(argv[2], "w", format=tarfile.GNU_FORMAT) as tar:
        def directory(name, mode=0o755, uid=0):
            tar.addfile(entry(name, tarfile.DIRTYPE, mode, uid))

        def link(name, target):
            tar.addfile(entry(name, tarfile.SYMTYPE, 0o777, target=target))

        # No entries for directories every node has (/usr/share, /etc, /var/log
        # ...): extracting them would reset their metadata.
        for name in (LSF_TOP, LSF_TOP + "/10.1", LSF_TOP + "/10.1/man",
                     bin_dir, bin_dir + "/bin", bin_dir + "/etc", bin_dir + "/lib"):
            directory(name)
        for name in ("log", "work", "work/gpucluster", "work/gpucluster/live_confdir"):
            directory("%s/%s" % (LSF_TOP, name), uid=admin)

        conf_root = os.path.join(FIXTURE, "conf")
        for root, dirs, files in os.walk(conf_root):
            dirs.sort()
            relative = os.path.relpath(root, conf_root)
            target = LSF_TOP + "/conf" + ("" if relative == "." else "/" + relative)
            directory(target, uid=admin)
            for name in sorted(files):
                with open(os.path.join(root, name), "rb") as handle:
                    data = handle.read()
                info = entry(target + "/" + name, tarfile.REGTYPE, 0o644, admin)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

        with open(STUB, "rb") as handle:
            data = handle.read()
        info = entry(bin_dir + "/lib/lsf_stub.py", tarfile.REGTYPE, 0o755)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for name in COMMANDS:
            link(bin_dir + "/bin/" + name, "../lib/lsf_stub.py")
        for name in DRIVER_SCRIPTS:
            link(bin_dir + "/etc/" + name, "../lib/lsf_stub.py")

        link("etc/profile.d/lsf.sh", "/" + LSF_TOP + "/conf/profile.lsf")
        directory("etc/lsf-stub")
        # Every user's calls are logged, so both are world-writable (sticky).
        directory("var/log/lsf-stub", 0o1777)
        directory("var/lib/lsf-stub", 0o1777)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

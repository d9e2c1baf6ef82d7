#!/bin/sh
# STAND-IN FOR TESTS: put the stand-in NVIDIA driver boundary on one test-bed
# GPU node (run as root by molecule's prepare step; never shipped by a role).
#
# Usage: install-node.sh DIR VALUES_FILE
#   DIR          holds libnvidia-ml.so.1 and nvidia-smi (nvml/build.sh DIR)
#   VALUES_FILE  the node's GPUs (gpus/<node>.conf)
#
# Installs, as the NVIDIA driver would:
#   /usr/lib/<multiarch>/libnvidia-ml.so.1, libcuda.so.1 (+ ldconfig)
#   /usr/bin/nvidia-smi
#   /etc/nvidia-standin/nvml.conf   /etc/nvidia-standin/driver-version
#   /dev/nvidia<minor> for each GPU, /dev/nvidiactl, /dev/nvidia-uvm,
#   /dev/nvidia-uvm-tools, and /dev/nvidia-standin-nvml.conf (a copy of the
#   values: the "kernel state" a container with the node's /dev reaches)
#   a kernel/drivers/video/nvidia.ko line in /lib/modules/$(uname -r)/modules.dep
#   (depmod's record of an installed driver module, which NVIDIA's CDI refresh
#   service checks; added to a real modules.dep, never replacing it)
# Idempotent: prints "install-node: changed" or "install-node: unchanged" last.
#
# The device files are character devices 1:3, the numbers of /dev/null, not
# NVIDIA's 195:<minor>: in a node container open() of a 195:* file fails
# (EPERM: its device cgroup does not allow major 195), and in a container
# inside the node it fails too (ENXIO: no driver owns major 195). 1:3 is
# allowed everywhere and opens, so a GPU container gets a /dev/nvidia0 it can
# use (README.md).
# /dev in a node container is a tmpfs made anew at every start: the files are
# made now and listed in /etc/tmpfiles.d/nvidia-standin.conf, which
# systemd-tmpfiles-setup-dev applies at the next boot of the node.
set -eu

src="${1:?usage: install-node.sh DIR VALUES_FILE}"
values="${2:?usage: install-node.sh DIR VALUES_FILE}"
changed=0

for file in "$src/libnvidia-ml.so.1" "$src/libcuda.so.1" "$src/nvidia-smi" "$values"; do
    [ -r "$file" ] || { echo "install-node.sh: $file missing" >&2; exit 1; }
done

# value KEY: KEY's value in the values file (same grammar as libnvidia-ml).
value() {
    awk -v want="$1" '
        /^[ \t]*(#|$)/ { next }
        {
            eq = index($0, "="); if (!eq) next
            key = substr($0, 1, eq - 1); val = substr($0, eq + 1)
            gsub(/^[ \t]+|[ \t]+$/, "", key)
            sub(/(^|[ \t])#.*/, "", val); gsub(/^[ \t]+|[ \t]+$/, "", val)
            if (key == want) found = val
        }
        END { if (found != "") print found }
    ' "$values"
}

# put SRC DEST MODE: install SRC as DEST unless DEST already has its bytes.
put() {
    if ! cmp -s "$1" "$2"; then
        mkdir -p "$(dirname "$2")"
        install -m "$3" "$1" "$2.standin-new"
        mv -f "$2.standin-new" "$2"
        echo "installed $2"
        changed=1
    fi
}

case "$(uname -m)" in
    x86_64) multiarch=x86_64-linux-gnu ;;
    aarch64) multiarch=aarch64-linux-gnu ;;
    ppc64le) multiarch=powerpc64le-linux-gnu ;;
    *) multiarch="" ;;
esac
if [ -n "$multiarch" ] && [ -d "/usr/lib/$multiarch" ]; then
    libdir="/usr/lib/$multiarch"
elif [ -d /usr/lib64 ]; then
    libdir=/usr/lib64
else
    libdir=/usr/lib
fi

driver=$(value driver_version)
count=$(value gpu.count)
case "$count" in ''|*[!0-9]*) echo "install-node.sh: gpu.count missing in $values" >&2; exit 1 ;; esac
[ -n "$driver" ] || { echo "install-node.sh: driver_version missing in $values" >&2; exit 1; }

put "$src/libnvidia-ml.so.1" "$libdir/libnvidia-ml.so.1" 0755
put "$src/libcuda.so.1" "$libdir/libcuda.so.1" 0755
put "$src/nvidia-smi" /usr/bin/nvidia-smi 0755
put "$values" /etc/nvidia-standin/nvml.conf 0644
if [ "$(cat /etc/nvidia-standin/driver-version 2>/dev/null || true)" != "$driver" ]; then
    printf '%s\n' "$driver" > /etc/nvidia-standin/driver-version
    echo "wrote /etc/nvidia-standin/driver-version ($driver)"
    changed=1
fi
if [ "$changed" = 1 ]; then
    ldconfig
fi

nodes=""
i=0
while [ "$i" -lt "$count" ]; do
    minor=$(value "gpu.$i.minor_number")
    case "$minor" in ''|*[!0-9]*) echo "install-node.sh: gpu.$i.minor_number missing in $values" >&2; exit 1 ;; esac
    nodes="$nodes nvidia$minor"
    i=$((i + 1))
done
nodes="$nodes nvidiactl nvidia-uvm nvidia-uvm-tools"

tmpfiles=$(mktemp)
{
    echo "# STAND-IN FOR TESTS: device files of the test bed's stand-in NVIDIA driver"
    echo "# (molecule/resources/nvidia-standin/install-node.sh): /dev/null's numbers."
    for node in $nodes; do
        echo "c! /dev/$node 0666 root root - 1:3"
    done
    echo "C! /dev/nvidia-standin-nvml.conf 0644 root root - /etc/nvidia-standin/nvml.conf"
} > "$tmpfiles"
put "$tmpfiles" /etc/tmpfiles.d/nvidia-standin.conf 0644
rm -f "$tmpfiles"

for node in $nodes; do
    path="/dev/$node"
    if [ -c "$path" ] && [ "$(stat -c '%t:%T:%a' "$path")" = "1:3:666" ]; then
        continue
    fi
    rm -f "$path"
    mknod -m 666 "$path" c 1 3
    echo "made $path (c 1:3)"
    changed=1
done

put /etc/nvidia-standin/nvml.conf /dev/nvidia-standin-nvml.conf 0644

moddep="/lib/modules/$(uname -r)/modules.dep"
if ! grep -qE '/nvidia\.ko' "$moddep" 2>/dev/null; then
    mkdir -p "$(dirname "$moddep")"
    echo "kernel/drivers/video/nvidia.ko:" >> "$moddep"
    echo "listed nvidia.ko in $moddep"
    changed=1
fi

if [ "$changed" = 1 ]; then
    echo "install-node: changed"
else
    echo "install-node: unchanged"
fi

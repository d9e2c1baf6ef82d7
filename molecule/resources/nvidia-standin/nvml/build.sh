#!/bin/sh
# STAND-IN FOR TESTS: build the test bed's stand-in for the NVIDIA driver's
# user-space boundary, for the architecture the compiler makes code for (the
# machine that runs it, unless CC is a cross compiler):
#   OUTDIR/libnvidia-ml.so.1   NVML, answering from /etc/nvidia-standin/nvml.conf
#   OUTDIR/nvidia-smi          dlopens libnvidia-ml.so.1, as the real one does
#   OUTDIR/libcuda.so.1        CUDA's driver library: every call answers
#                              CUDA_ERROR_NO_DEVICE (tools find the driver's
#                              library directory by it)
# Usage: build.sh OUTDIR          (CC overrides the compiler, default cc)
#
# No rpath, no $ORIGIN: nvidia-smi finds the library the way the real one
# does (ld.so.cache, the multiarch directory), so in a container it sees the
# library the runtime mounted there. Same sources, same compiler: same bytes
# (no build id, no timestamps, relative source names).
set -eu

out="${1:?usage: build.sh OUTDIR}"
cc="${CC:-cc}"
here="$(cd "$(dirname "$0")" && pwd)"

if ! command -v "$cc" >/dev/null 2>&1; then
    echo "build.sh: no C compiler ($cc) found; install gcc (Debian: apt-get install gcc libc6-dev)" >&2
    exit 1
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

common="-O2 -Wall -Wextra -Werror=implicit-function-declaration -ffile-prefix-map=$here=. -Wl,--build-id=none"
cd "$here"
# shellcheck disable=SC2086  # $common is a list of flags
"$cc" $common -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 \
    -o "$work/libnvidia-ml.so.1" libnvidia-ml.c
# shellcheck disable=SC2086
"$cc" $common -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o "$work/libcuda.so.1" libcuda.c
# shellcheck disable=SC2086
"$cc" $common -o "$work/nvidia-smi" nvidia-smi.c -Wl,--as-needed -ldl
chmod 0755 "$work/libnvidia-ml.so.1" "$work/nvidia-smi" "$work/libcuda.so.1"
mv -f "$work/libnvidia-ml.so.1" "$work/nvidia-smi" "$work/libcuda.so.1" "$out/"
echo "stand-in NVML library, nvidia-smi and libcuda for $("$cc" -dumpmachine) in $out"

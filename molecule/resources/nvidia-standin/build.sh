#!/usr/bin/env bash
# Build the STAND-IN nvidia-container-toolkit package set and a flat apt
# repository for the test bed.
#
# The test bed has no GPUs and cannot reach NVIDIA's repositories, so the
# nvidia_container_runtime role is exercised the way an air-gapped site runs
# it: against a local repository. These packages carry the real package names
# and a version like 1.17.9-0standin1, but every description says STAND-IN FOR
# TESTS, and the binaries are small scripts:
#   nvidia-container-runtime  Python OCI runtime wrapper: logs each call, gives a
#                             `create` the GPUs NVIDIA_VISIBLE_DEVICES names (device
#                             files, NVML stand-in, nvidia-smi), then execs runc
#   nvidia-ctk                --version and `cdi generate` only
#   nvidia-container-cli      --version only
# From the 1.18 line, -base also carries what NVIDIA's does: the CDI refresh
# units (nvidia-cdi-refresh.path/.service, writing /var/run/cdi/nvidia.yaml),
# their environment file (a conffile), the preset, and a postinst that enables
# and starts them.
# and, at their own versions, the legacy runtimes the role removes (the test bed
# installs them before converge): nvidia-docker 1.0 (a wrapper, and a plugin
# service that stays up) and nvidia-docker2 (the wrapper).
# The GPUs themselves (the driver's side of the boundary: libnvidia-ml.so.1,
# nvidia-smi, /dev/nvidia*) are not packaged: nvml/ and install-node.sh put them
# on the GPU nodes, as a driver installation would (README.md).
#
# Usage: build.sh OUTDIR [UPSTREAM_VERSION...]   (default: 1.17.9 1.18.0, the
# ppc64le and the x86_64 defaults of the role; one repository holds them all)
# Writes OUTDIR/*.deb, OUTDIR/Packages and OUTDIR/Packages.gz; serve OUTDIR
# over http or file:// and point the role at it with
#   nvidia_container_runtime_apt_repo_url: <that URL>
#   nvidia_container_runtime_apt_trusted: true
# Needs dpkg-deb and dpkg-scanpackages (dpkg-dev) or apt-ftparchive (apt-utils).
set -euo pipefail

out="${1:?usage: build.sh OUTDIR [UPSTREAM_VERSION...]}"
shift
[ $# -gt 0 ] || set -- 1.17.9 1.18.0
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}"

mkdir -p "$out"
out="$(cd "$out" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# PKG_UPSTREAM=... [PKG_POSTINST=FILE] package NAME DEPENDS SUMMARY FILE:DEST...
# Files under /etc are conffiles; PKG_POSTINST (in files/) is the postinst.
package() {
    local name="$1" depends="$2" summary="$3"
    shift 3
    local upstream="$PKG_UPSTREAM"
    local version="${upstream}-0standin1"
    local root="$work/$name-$upstream"
    mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: all"
        echo "Maintainer: hpc.gpu_containers test bed <noreply@invalid>"
        echo "Section: misc"
        echo "Priority: optional"
        [ -n "$depends" ] && echo "Depends: $depends"
        echo "Description: STAND-IN FOR TESTS: $summary"
        echo " Not an NVIDIA package. Built by the hpc.gpu_containers test bed"
        echo " (molecule/resources/nvidia-standin/build.sh) to exercise the"
        echo " install path without GPUs or access to NVIDIA's repositories."
    } > "$root/DEBIAN/control"
    printf 'STAND-IN FOR TESTS: %s %s is not an NVIDIA package.\n' "$name" "$version" \
        > "$root/usr/share/doc/$name/README.standin"
    local spec src dest
    for spec in "$@"; do
        src="${spec%%:*}"
        dest="${spec#*:}"
        install -D -m 0755 "$here/files/$src" "$root$dest"
        case "$dest" in /usr/bin/*) ;; *) chmod 0644 "$root$dest" ;; esac
        case "$dest" in /etc/*) echo "$dest" >> "$root/DEBIAN/conffiles" ;; esac
        sed -i "s/@VERSION@/${upstream}/g" "$root$dest"
    done
    if [ -n "${PKG_POSTINST:-}" ]; then
        install -m 0755 "$here/files/$PKG_POSTINST" "$root/DEBIAN/postinst"
    fi
    find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
    dpkg-deb --root-owner-group -Zgzip --build "$root" "$out/${name}_${version}_all.deb" >/dev/null
}

# toolkit UPSTREAM: the four packages of one toolkit release.
toolkit() {
    local PKG_UPSTREAM="$1" version="$1-0standin1" refresh=()
    if dpkg --compare-versions "$1" ge 1.18.0; then
        refresh=(nvidia-cdi-refresh.service:/lib/systemd/system/nvidia-cdi-refresh.service
                 nvidia-cdi-refresh.path:/lib/systemd/system/nvidia-cdi-refresh.path
                 nvidia-cdi-refresh.env:/etc/nvidia-container-toolkit/nvidia-cdi-refresh.env
                 90-nvidia-container-toolkit.preset:/lib/systemd/system-preset/90-nvidia-container-toolkit.preset)
    fi
    package libnvidia-container1 "" "NVIDIA container runtime library (empty)"
    package libnvidia-container-tools "libnvidia-container1 (= $version)" \
        "NVIDIA container runtime CLI" nvidia-container-cli:/usr/bin/nvidia-container-cli
    PKG_POSTINST="${refresh:+nvidia-container-toolkit-base.postinst}" \
        package nvidia-container-toolkit-base "python3" \
        "NVIDIA container runtime and nvidia-ctk (runtime wraps runc)" \
        nvidia-container-runtime:/usr/bin/nvidia-container-runtime nvidia-ctk:/usr/bin/nvidia-ctk "${refresh[@]}"
    package nvidia-container-toolkit \
        "nvidia-container-toolkit-base (= $version), libnvidia-container-tools (= $version)" \
        "NVIDIA container toolkit (meta package)"
}

for upstream in "$@"; do
    toolkit "$upstream"
done
PKG_UPSTREAM=1.0.1 package nvidia-docker "" "legacy NVIDIA Docker wrapper and volume plugin (nvidia-docker 1.0)" \
    nvidia-docker:/usr/bin/nvidia-docker nvidia-docker-plugin:/usr/bin/nvidia-docker-plugin \
    nvidia-docker.service:/lib/systemd/system/nvidia-docker.service
PKG_UPSTREAM=2.14.0 package nvidia-docker2 "" "legacy NVIDIA Docker wrapper (nvidia-docker2)" \
    nvidia-docker:/usr/bin/nvidia-docker

cd "$out"
if command -v dpkg-scanpackages >/dev/null 2>&1; then
    dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages
elif command -v apt-ftparchive >/dev/null 2>&1; then
    apt-ftparchive packages . > Packages
else
    echo "build.sh: need dpkg-scanpackages (dpkg-dev) or apt-ftparchive (apt-utils)" >&2
    exit 1
fi
gzip -9n < Packages > Packages.gz
echo "stand-in repository with $(grep -c '^Package:' Packages) packages (toolkit $*) in $out"

#!/usr/bin/env bash
# Build the EL node image of the test bed: "the EL package path on a stand-in userland".
#
# The test bed's GPU node image (its package list and masked units, from the test bed's one root
# filesystem recipe, tools/debian-rootfs.sh) plus what the roles' RedHat-family task files need to run:
# dnf 4 with its Python bindings (python3-dnf, python3-rpm for Debian's /usr/bin/python3), rpm,
# createrepo-c, and the libraries and tools dockerd needs at run time, which an EL base install has
# (iptables, libdevmapper). It says it is Rocky Linux 9.5: a stand-in rocky-release RPM
# (rocky-release.spec), built and installed into the rpm database at build time, owns /etc/os-release,
# /etc/rocky-release, /etc/redhat-release and /etc/system-release and provides
# system-release(releasever) = 9 (dnf's $releasever). rpm's database is /var/lib/rpm, as on EL (Debian's
# rpm keeps one per user in ~/.rpmdb), and /etc/dnf/dnf.conf is Rocky 9's (Debian's skips a repository
# that fails, skip_if_unavailable=True; Rocky's fails the transaction). The Debian package tools (dpkg, dpkg-query, apt*) are moved off
# PATH to /usr/lib/el-standin/debian-bin: a Rocky node has none, and tools that ask dpkg first
# (the collection's package_info and drift fingerprint) would read dpkg's database instead of rpm's.
# Everything else is Debian 12: glibc, systemd, python3 3.11, no SELinux, no firewalld.
#
# Docker is NOT in the image: the docker_engine role installs docker-ce from the stand-in Docker
# repository (build.sh).
#
# Tag: localhost/el-hpc-el-node:<recipe-hash> (immutable) and localhost/el-hpc-el-node:rocky9 (moving).
# The recipe hash covers this script, rocky-release.spec and tools/debian-rootfs.sh. Nothing is pulled.
# Environment: NODE_MIRROR, NODE_SECURITY_MIRROR (as tools/node-image.sh); EL_IMAGE_REBUILD=1.
# Prints the immutable image reference on the last line of stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="$(cd "$here/../../.." && pwd)"
lib="$top/tools/debian-rootfs.sh"
# shellcheck source=tools/debian-rootfs.sh
. "$lib"
repo=localhost/el-hpc-el-node

recipe_hash="$(cat "${BASH_SOURCE[0]}" "$here/rocky-release.spec" "$lib" | sha256sum | cut -c1-12)"
image="${repo}:${recipe_hash}"

log() { printf 'el-image: %s\n' "$*" >&2; }

if cached_image "$image" "${repo}:rocky9" "${EL_IMAGE_REBUILD:-0}"; then
    exit 0
fi

ensure_mmdebstrap
debian_sources
# What the EL task files use, and what dockerd needs from the base system (iptables, libdevmapper).
packages="$NODE_PACKAGES,dnf,python3-dnf,python3-rpm,rpm,createrepo-c,iptables,libdevmapper1.02.1"
# Timers of the Debian package tools, which a Rocky node does not have.
node_container_hooks "$NODE_MASKED_UNITS apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer"

workdir="$(mktemp -d "${TMPDIR:-/tmp}/el-image.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

start=$(date +%s)
log "building $image"
# The hooks are single-quoted on purpose: mmdebstrap expands "$1", not this shell.
# shellcheck disable=SC2016
debian_rootfs amd64 "$packages" "$workdir/rootfs.tar" "${NODE_CONTAINER_HOOKS[@]}" \
    --customize-hook='mkdir -p "$1"/etc/rpm "$1"/var/lib/rpm "$1"/etc/yum.repos.d "$1"/etc/pki/rpm-gpg' \
    --customize-hook='printf "%s\n" "# EL layout (Debian rpm: ~/.rpmdb per user)" "%_dbpath /var/lib/rpm" > "$1"/etc/rpm/macros.el-standin' \
    --customize-hook='chroot "$1" rpmdb --initdb' \
    --customize-hook='printf "%s\n" "[main]" gpgcheck=1 installonly_limit=3 clean_requirements_on_remove=True best=True skip_if_unavailable=False > "$1"/etc/dnf/dnf.conf' \
    --customize-hook="upload $here/rocky-release.spec /tmp/rocky-release.spec" \
    --customize-hook='chroot "$1" rpmbuild --quiet -bb --define "_topdir /tmp/rr" /tmp/rocky-release.spec' \
    --customize-hook='chroot "$1" sh -c "rpm -i --nodeps /tmp/rr/RPMS/noarch/rocky-release-*.rpm /tmp/rr/RPMS/noarch/el-standin-userland-*.rpm && rm -rf /tmp/rr /tmp/rocky-release.spec"' \
    --customize-hook='rm -f "$1"/etc/debian_version' \
    --customize-hook='for l in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1; do ln -sfn /lib/x86_64-linux-gnu/$l "$1"/lib64/$l; done' \
    --customize-hook='mkdir -p "$1"/usr/lib/el-standin/debian-bin && for t in dpkg dpkg-query apt apt-get apt-cache apt-mark apt-config apt-key; do if [ -e "$1/usr/bin/$t" ]; then mv "$1/usr/bin/$t" "$1/usr/lib/el-standin/debian-bin/$t"; fi; done'
import_node_image "$workdir/rootfs.tar" "$image" el-hpc-el-node "$recipe_hash" \
    'CMD ["/lib/systemd/systemd"]' 'ENV container=docker'
docker tag "$image" "${repo}:rocky9"
size=$(docker image inspect --format '{{.Size}}' "$image")
log "built $image in $(( $(date +%s) - start )) s, $((size / 1000000)) MB"
echo "$image"

#!/usr/bin/env bash
# Build the test bed's LSF-family node image from Debian packages and the vendored volclava source, and
# import it into the local Docker engine; nothing is pulled.
#
#   localhost/hpc-volclava-node:debian12-<recipe-hash>   a node as a site with an LSF-family scheduler has
#       it: the node image's systemd base plus volclava (the open-source LSF lineage, OpenLava 2.0; its
#       lim, res, sbatchd, mbatchd and its commands: lsid, lshosts, bhosts, bjobs, bsub, lsadmin, badmin)
#       built from molecule/resources/volclava/ and installed under /opt/volclava as its installer leaves
#       it (the administrator `volclava`, /etc/init.d/volclava, /etc/profile.d/volclava.sh). The compiler
#       and the other build dependencies are removed again; the cluster's configuration (its hosts) and the
#       start of its daemons are a scenario's prepare step, as a site's are its own.
#
# The source's sha256 is checked before anything is built (molecule/resources/volclava/README.md says
# where it comes from). The recipe hash is the first 12 hex digits of the sha256 of this script,
# tools/debian-rootfs.sh and the source; a rerun with an unchanged recipe only re-points the moving tag
# (`:debian12`).
#
# Environment: NODE_MIRROR, NODE_SECURITY_MIRROR (as tools/node-image.sh), VOLCLAVA_IMAGE_REBUILD=1 to
# rebuild although the image exists, VOLCLAVA_IMAGE_REPO (default localhost/hpc-volclava-node).
# Prints the image reference on the last line of stdout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/debian-rootfs.sh"
# shellcheck source=tools/debian-rootfs.sh
. "$lib"

source_tar="$(cd "$here/.." && pwd)/molecule/resources/volclava/volclava-2.2.0-beta.tar.gz"
source_sha256=f41a65fa2aafb87abcbf32355c2f87b1f832d5a5672f6b7982f905c4f939cb4f
repo="${VOLCLAVA_IMAGE_REPO:-localhost/hpc-volclava-node}"
prefix=/opt/volclava

log() { printf 'volclava-image: %s\n' "$*" >&2; }

if [ ! -r "$source_tar" ]; then
    log "FAILED: the volclava source $source_tar is missing"
    exit 1
fi
actual="$(sha256sum "$source_tar" | cut -d' ' -f1)"
if [ "$actual" != "$source_sha256" ]; then
    log "FAILED: $source_tar has sha256 $actual, not $source_sha256 (molecule/resources/volclava/README.md)"
    exit 1
fi

recipe_hash="$(cat "${BASH_SOURCE[0]}" "$lib" "$source_tar" | sha256sum | cut -c1-12)"
image="${repo}:debian12-${recipe_hash}"
if cached_image "$image" "${repo}:debian12" "${VOLCLAVA_IMAGE_REBUILD:-0}"; then
    exit 0
fi

ensure_mmdebstrap
debian_sources
workdir="$(mktemp -d "${TMPDIR:-/tmp}/volclava-image.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT
start=$(date +%s)
log "building $image"

# What volclava's own installer asks of Debian (volcinstall.sh): a compiler, autotools, Tcl and ncurses.
# Only the build needs them; libtcl8.6 and libncurses6 (which its commands link) stay.
build_packages="autoconf,automake,make,gcc,libc6-dev,tcl-dev,libncurses-dev"
runtime_packages="libtcl8.6,libncurses6,psmisc"
# Its bootstrap.sh (autotools, then configure), make and make install, in the new root, as its
# README does; then the build's own files and packages go.
build_hook="chroot \"\$1\" sh -ec 'mkdir /tmp/volclava && tar -xzf /tmp/volclava.tar.gz -C /tmp/volclava --strip-components=1 && cd /tmp/volclava && ./bootstrap.sh --prefix=$prefix >/tmp/volclava.build.log 2>&1 && make -j\$(nproc) >>/tmp/volclava.build.log 2>&1 && make install >>/tmp/volclava.build.log 2>&1' || { tail -n 40 \"\$1\"/tmp/volclava.build.log >&2; exit 1; }"
purge_hook="chroot \"\$1\" sh -ec 'rm -rf /tmp/volclava /tmp/volclava.tar.gz /tmp/volclava.build.log; DEBIAN_FRONTEND=noninteractive apt-get purge -y --autoremove ${build_packages//,/ } >/dev/null'"
# What volclava's installer does after make install (volcinstall.sh): the administrator account `volclava`
# owning the log and work directories, the SysV script the daemons start by (systemd runs it through its
# sysv generator, as on a site), the profile in /etc/profile.d. The service is not enabled: a cluster with no
# host would not start; the scenario adds its hosts, then starts it.
setup_hook="chroot \"\$1\" sh -ec 'useradd -c \"volclava Administrator\" -m -d /home/volclava volclava && chown -R volclava: $prefix/log $prefix/work && install -m 0755 $prefix/etc/volclava /etc/init.d/volclava && ln -s $prefix/etc/volclava.sh /etc/profile.d/volclava.sh'"
# Every command of the cluster must find its libraries once the build packages are gone.
check_hook="chroot \"\$1\" sh -ec 'for f in $prefix/bin/* $prefix/sbin/*; do if ldd \"\$f\" 2>/dev/null | grep \"not found\"; then echo \"\$f: a library is missing\" >&2; exit 1; fi; done; test -x $prefix/bin/lsid && test -x $prefix/sbin/mbatchd'"

node_container_hooks "$NODE_MASKED_UNITS"
# shellcheck disable=SC2016
debian_rootfs amd64 "$NODE_PACKAGES,$runtime_packages,$build_packages" "$workdir/rootfs.tar" \
    --customize-hook="copy-in $source_tar /tmp" \
    --customize-hook='mv "$1"/tmp/volclava-*.tar.gz "$1"/tmp/volclava.tar.gz' \
    --customize-hook="$build_hook" \
    --customize-hook="$purge_hook" \
    --customize-hook="$setup_hook" \
    --customize-hook="$check_hook" \
    "${NODE_CONTAINER_HOOKS[@]}"
import_node_image "$workdir/rootfs.tar" "$image" hpc-volclava-node "$recipe_hash" \
    'CMD ["/lib/systemd/systemd"]' 'ENV container=docker'
log "built $image in $(( $(date +%s) - start )) s, $(( $(docker image inspect --format '{{.Size}}' "$image") / 1000000 )) MB"
docker tag "$image" "${repo}:debian12"
echo "$image"

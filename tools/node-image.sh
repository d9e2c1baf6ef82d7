#!/usr/bin/env bash
# Build the test-bed node image from Debian packages and import it into the
# local Docker engine.  No registry is involved: mmdebstrap writes a root
# filesystem tarball (tools/debian-rootfs.sh, the test bed's one recipe for
# it) and `docker import` turns it into an image.
#
# The image is keyed by this script's and tools/debian-rootfs.sh's content (the recipe): the tag is
#   localhost/hpc-gpu-node:debian12-<recipe-hash>         (amd64)
#   localhost/hpc-gpu-node:debian12-<arch>-<recipe-hash>  (other arches)
# and a moving tag without the hash (`:debian12`, `:debian12-<arch>`).
# A rerun with an unchanged recipe only re-points the moving tag.
#
# Docker itself is NOT in the image: the collection's docker_engine role
# installs docker.io from Debian's archive at converge time.
#
# Environment:
#   NODE_ARCH     Debian architecture (default amd64; e.g. ppc64el, needs
#                 qemu-user-static + binfmt on the build host)
#   NODE_MIRROR   Debian mirror (default http://deb.debian.org/debian)
#   NODE_SECURITY_MIRROR  (default http://deb.debian.org/debian-security;
#                 set it empty to leave bookworm-security out)
#   NODE_REBUILD  set to 1 to rebuild even when the image exists
#   NODE_IMAGE_REPO  image repository (default localhost/hpc-gpu-node)
# Prints the immutable image reference on the last line of stdout.
set -euo pipefail

arch="${NODE_ARCH:-amd64}"
repo="${NODE_IMAGE_REPO:-localhost/hpc-gpu-node}"
lib="$(dirname "${BASH_SOURCE[0]}")/debian-rootfs.sh"
# shellcheck source=tools/debian-rootfs.sh
. "$lib"

recipe_hash="$(cat "${BASH_SOURCE[0]}" "$lib" | sha256sum | cut -c1-12)"
if [ "$arch" = amd64 ]; then
    tag_moving="debian12"
else
    tag_moving="debian12-${arch}"
fi
image="${repo}:${tag_moving}-${recipe_hash}"

log() { printf 'node-image: %s\n' "$*" >&2; }

if cached_image "$image" "${repo}:${tag_moving}" "${NODE_REBUILD:-0}"; then
    exit 0
fi

ensure_mmdebstrap
debian_sources
node_container_hooks "$NODE_MASKED_UNITS"

# The root filesystem goes to a file first: `docker import` reading a pipe
# would import whatever arrived before a failed build and leave a broken image
# under the cached tag.
workdir="$(mktemp -d "${TMPDIR:-/tmp}/node-image.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

start=$(date +%s)
log "building $image (arch $arch, suite $DEBIAN_SUITE, ${DEBIAN_SOURCES[0]})"
debian_rootfs "$arch" "$NODE_PACKAGES" "$workdir/rootfs.tar" "${NODE_CONTAINER_HOOKS[@]}"
IMAGE_PLATFORM="linux/$( [ "$arch" = ppc64el ] && echo ppc64le || echo "$arch")" \
import_node_image "$workdir/rootfs.tar" "$image" hpc-gpu-node "$recipe_hash" \
    'CMD ["/lib/systemd/systemd"]' 'ENV container=docker'
docker tag "$image" "${repo}:${tag_moving}"
end=$(date +%s)
size=$(docker image inspect --format '{{.Size}}' "$image")
log "built $image in $((end - start)) s, $((size / 1000000)) MB"
echo "$image"

#!/usr/bin/env bash
# Build the test-bed node image from Debian packages and import it into the
# local Docker engine.  No registry is involved: mmdebstrap writes a root
# filesystem tarball to stdout and `docker import` turns it into an image.
#
# The image is keyed by this script's own content (the recipe): the tag is
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
mirror="${NODE_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${NODE_SECURITY_MIRROR-http://deb.debian.org/debian-security}"
repo="${NODE_IMAGE_REPO:-localhost/hpc-gpu-node}"
suite=bookworm

recipe_hash="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
if [ "$arch" = amd64 ]; then
    tag_moving="debian12"
else
    tag_moving="debian12-${arch}"
fi
image="${repo}:${tag_moving}-${recipe_hash}"

log() { printf 'node-image: %s\n' "$*" >&2; }

if [ "${NODE_REBUILD:-0}" != 1 ] && docker image inspect "$image" >/dev/null 2>&1; then
    log "cached: $image"
    docker tag "$image" "${repo}:${tag_moving}"
    echo "$image"
    exit 0
fi

if ! command -v mmdebstrap >/dev/null 2>&1; then
    log "mmdebstrap not found; installing it from Debian"
    if [ "$(id -u)" -ne 0 ]; then
        log "run as root or install mmdebstrap first"; exit 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >&2
fi

# The three source lines end up in the image's sources.list, as on an
# installed bookworm host, so nodes get docker.io with its security fixes.
# Packages a managed node needs and nothing more:
#   systemd/systemd-sysv/dbus  PID 1 and systemctl (services, handlers)
#   python3/python3-apt        Ansible modules, ansible.builtin.apt
#   iproute2                   network facts
#   sudo                       become
#   ca-certificates, procps    TLS to the archive, ps/pgrep for tests
#   gnupg                      apt repository keys (docker_engine may add one)
packages=systemd,systemd-sysv,dbus,python3,python3-apt,ca-certificates,iproute2,procps,sudo,gnupg,less

# Units that make no sense in a container (no tty, no udev, host owns time).
masked="getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service systemd-timesyncd.service systemd-firstboot.service systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount"

# The root filesystem goes to a file first: `docker import` reading a pipe
# would import whatever arrived before a failed build and leave a broken image
# under the cached tag.
workdir="$(mktemp -d "${TMPDIR:-/tmp}/node-image.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

sources=("deb $mirror $suite main" "deb $mirror $suite-updates main")
if [ -n "$security_mirror" ]; then
    sources+=("deb $security_mirror $suite-security main")
fi

start=$(date +%s)
log "building $image (arch $arch, suite $suite, mirror $mirror)"
# Engine 20.10 rejects STOPSIGNAL in `docker import --change`; containers are
# started with --stop-signal SIGRTMIN+3 instead (see molecule/README.md).
# The hooks are single-quoted on purpose: mmdebstrap expands "$1", not this shell.
# shellcheck disable=SC2016
# A fixed SOURCE_DATE_EPOCH makes the tarball reproducible for one package set.
SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}" \
mmdebstrap --variant=minbase --architectures="$arch" \
    --include="$packages" \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    --customize-hook='truncate -s0 "$1"/etc/machine-id' \
    --customize-hook="chroot \"\$1\" systemctl mask $masked" \
    "$suite" "$workdir/rootfs.tar" "${sources[@]}" >&2
docker import \
    --change 'CMD ["/lib/systemd/systemd"]' \
    --change 'ENV container=docker' \
    --change "LABEL org.opencontainers.image.title=hpc-gpu-node org.opencontainers.image.version=${recipe_hash} hpc.gpu_containers.recipe=${recipe_hash}" \
    --platform "linux/$( [ "$arch" = ppc64el ] && echo ppc64le || echo "$arch")" \
    "$workdir/rootfs.tar" "$image" >&2

docker tag "$image" "${repo}:${tag_moving}"
end=$(date +%s)
size=$(docker image inspect --format '{{.Size}}' "$image")
log "built $image in $((end - start)) s, $((size / 1000000)) MB"
echo "$image"

# shellcheck shell=bash
# The test bed's one Debian root filesystem recipe, sourced by every script that builds a test-bed
# image: tools/node-image.sh (the node containers), tools/slurm-image.sh (the Slurm node and MPI job
# images), molecule/resources/el-standin/image.sh (the EL stand-in node) and tools/ppc64le-node.sh
# (the POWER9 node's disk). Each of them puts this file in its recipe hash, so a change here rebuilds
# every image. Nothing is pulled: mmdebstrap builds from Debian's archive.
#
#   debian_sources                 DEBIAN_SOURCES from NODE_MIRROR and NODE_SECURITY_MIRROR
#   ensure_mmdebstrap              install mmdebstrap from Debian where it is missing (root only)
#   debian_rootfs ARCH PACKAGES TARGET [mmdebstrap options...]
#                                  minbase + PACKAGES, without man pages, docs (copyrights kept),
#                                  locales and info, reproducible for one package set
#   import_node_image TAR IMAGE TITLE RECIPE [docker import --change ...]
#   cached_image IMAGE MOVING_REF [REBUILD]
#                                  an image already built from this recipe: re-point the moving tag
#
# The callers' hooks are single-quoted on purpose: mmdebstrap expands "$1", not the shell.
# shellcheck disable=SC2016,SC2034

DEBIAN_SUITE=bookworm

# A managed node container's packages, and nothing more:
#   systemd/systemd-sysv/dbus  PID 1 and systemctl (services, handlers)
#   python3/python3-apt        Ansible modules, ansible.builtin.apt
#   iproute2                   network facts
#   sudo                       become
#   ca-certificates, procps    TLS to the archive, ps/pgrep for tests
#   gnupg                      apt repository keys (docker_engine may add one)
NODE_PACKAGES=systemd,systemd-sysv,dbus,python3,python3-apt,ca-certificates,iproute2,procps,sudo,gnupg,less

# Units that make no sense in a container (no tty, no udev, the host owns the time).
NODE_MASKED_UNITS="getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service systemd-timesyncd.service systemd-firstboot.service systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount"

# No apt lists in an image (a node updates them itself).
DEBIAN_NO_APT_LISTS='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin'

# node_container_hooks UNIT...: NODE_CONTAINER_HOOKS, the mmdebstrap hooks of a node container's root: no
# apt lists, an empty machine id (each container makes its own), the units masked.
node_container_hooks() {
    NODE_CONTAINER_HOOKS=(--customize-hook="$DEBIAN_NO_APT_LISTS"
                          --customize-hook='truncate -s0 "$1"/etc/machine-id'
                          "--customize-hook=chroot \"\$1\" systemctl mask $*")
}

# The archive's suite, its updates and (unless NODE_SECURITY_MIRROR is set empty) its security fixes, as on an
# installed bookworm host.
debian_sources() {
    local mirror="${NODE_MIRROR:-http://deb.debian.org/debian}"
    local security="${NODE_SECURITY_MIRROR-http://deb.debian.org/debian-security}"
    DEBIAN_SOURCES=("deb $mirror $DEBIAN_SUITE main" "deb $mirror $DEBIAN_SUITE-updates main")
    if [ -n "$security" ]; then
        DEBIAN_SOURCES+=("deb $security $DEBIAN_SUITE-security main")
    fi
}

ensure_mmdebstrap() {
    command -v mmdebstrap >/dev/null 2>&1 && return 0
    printf 'debian-rootfs: mmdebstrap not found; installing it from Debian\n' >&2
    if [ "$(id -u)" -ne 0 ]; then
        printf 'debian-rootfs: run as root or install mmdebstrap first\n' >&2
        return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >&2
}

# debian_rootfs ARCH PACKAGES TARGET [mmdebstrap options...]: from DEBIAN_SOURCES (debian_sources, or the
# caller's own). A fixed SOURCE_DATE_EPOCH makes the result reproducible for one package set. TARGET is a
# tarball (imported only once it is whole: a failed build is never imported) or a directory.
debian_rootfs() {
    local arch="$1" packages="$2" target="$3"
    shift 3
    SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}" \
    mmdebstrap --variant=minbase --architectures="$arch" \
        --include="$packages" \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        "$@" \
        "$DEBIAN_SUITE" "$target" "${DEBIAN_SOURCES[@]}" >&2
}

# import_node_image TAR IMAGE TITLE RECIPE [CHANGE...]: docker import with the image's title and recipe as
# labels and each CHANGE as a --change (Engine 20.10 rejects STOPSIGNAL there: nodes are started with
# --stop-signal SIGRTMIN+3, molecule/resources/node-container.options); IMAGE_PLATFORM, when set, is the
# image's platform (linux/ppc64le for a ppc64el root).
import_node_image() {
    local tar="$1" image="$2" title="$3" recipe="$4" change args=()
    shift 4
    for change in "$@"; do args+=(--change "$change"); done
    if [ -n "${IMAGE_PLATFORM:-}" ]; then args+=(--platform "$IMAGE_PLATFORM"); fi
    docker import "${args[@]}" \
        --change "LABEL org.opencontainers.image.title=$title org.opencontainers.image.version=$recipe hpc.gpu_containers.recipe=$recipe" \
        "$tar" "$image" >&2
}

# cached_image IMAGE MOVING_REF [REBUILD]: when IMAGE (its tag carries the recipe hash) exists and REBUILD is not 1,
# point MOVING_REF at it and print it; otherwise fail, and the caller builds it.
cached_image() {
    [ "${3:-0}" != 1 ] && docker image inspect "$1" >/dev/null 2>&1 || return 1
    printf '%s: cached: %s\n' "${0##*/}" "$1" >&2
    docker tag "$1" "$2"
    echo "$1"
}

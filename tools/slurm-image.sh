#!/usr/bin/env bash
# Build the two images of the Slurm test bed (molecule/slurm) from Debian
# packages and import them into the local Docker engine; nothing is pulled.
#
#   localhost/hpc-slurm-node:debian12-<recipe-hash>   a Slurm cluster node: the
#       node image's systemd base plus the site's existing Slurm (slurm-wlm:
#       slurmctld, slurmd, the client commands; munge). The collection's own
#       software (the Docker engine, the NVIDIA toolkit, srun-docker) is NOT in
#       it: the roles install that at converge time.
#   localhost/hpc-slurm-job:debian12-<recipe-hash>    the job image users run
#       with srun-docker: OpenMPI (with PMIx), mpi4py, sshd and ssh, no
#       host keys (every job brings its own).
#
# The recipe hash is the first 12 hex digits of this script's sha256; a rerun
# with an unchanged script only re-points the moving tags (`:debian12`).
#
# Environment: NODE_MIRROR, NODE_SECURITY_MIRROR (as tools/node-image.sh),
# SLURM_IMAGE_REBUILD=1 to rebuild although the images exist.
# Prints the node image reference, then the job image reference.
set -euo pipefail

mirror="${NODE_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${NODE_SECURITY_MIRROR-http://deb.debian.org/debian-security}"
suite=bookworm
recipe_hash="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
node_repo=localhost/hpc-slurm-node
job_repo=localhost/hpc-slurm-job

log() { printf 'slurm-image: %s\n' "$*" >&2; }

if ! command -v mmdebstrap >/dev/null 2>&1; then
    log "mmdebstrap not found; installing it from Debian"
    [ "$(id -u)" -eq 0 ] || { log "run as root or install mmdebstrap first"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >&2
fi

sources=("deb $mirror $suite main" "deb $mirror $suite-updates main")
if [ -n "$security_mirror" ]; then
    sources+=("deb $security_mirror $suite-security main")
fi
workdir="$(mktemp -d "${TMPDIR:-/tmp}/slurm-image.XXXXXX")"
trap 'rm -rf "$workdir"' EXIT

# build REPO TITLE PACKAGES [mmdebstrap options...] -- [docker import --change ...]
# The root filesystem goes to a file first: a failed build is never imported.
build() {
    local repo="$1" title="$2" packages="$3"
    shift 3
    local image="${repo}:debian12-${recipe_hash}" opts=() changes=()
    while [ "$#" -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ "$#" -gt 0 ] && shift
    changes=("$@")
    if [ "${SLURM_IMAGE_REBUILD:-0}" != 1 ] && docker image inspect "$image" >/dev/null 2>&1; then
        log "cached: $image"
    else
        local start
        start=$(date +%s)
        log "building $image"
        # shellcheck disable=SC2016
        SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}" \
        mmdebstrap --variant=minbase --architectures=amd64 \
            --include="$packages" \
            --dpkgopt='path-exclude=/usr/share/man/*' \
            --dpkgopt='path-exclude=/usr/share/doc/*' \
            --dpkgopt='path-include=/usr/share/doc/*/copyright' \
            --dpkgopt='path-exclude=/usr/share/locale/*' \
            --dpkgopt='path-exclude=/usr/share/info/*' \
            --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
            "${opts[@]}" \
            "$suite" "$workdir/$title.tar" "${sources[@]}" >&2
        local change_args=()
        for change in "${changes[@]}"; do change_args+=(--change "$change"); done
        docker import "${change_args[@]}" \
            --change "LABEL org.opencontainers.image.title=$title org.opencontainers.image.version=${recipe_hash} hpc.gpu_containers.recipe=${recipe_hash}" \
            "$workdir/$title.tar" "$image" >&2
        rm -f "$workdir/$title.tar"
        log "built $image in $(( $(date +%s) - start )) s, $(( $(docker image inspect --format '{{.Size}}' "$image") / 1000000 )) MB"
    fi
    docker tag "$image" "${repo}:debian12"
    echo "$image"
}

# The node: tools/node-image.sh's package set and masked units, plus Slurm and
# munge as a site has them installed. The packages' own munge key is removed:
# the test bed's prepare step gives the cluster one key, as a site does.
masked="getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service systemd-timesyncd.service systemd-firstboot.service systemd-modules-load.service sys-kernel-config.mount sys-kernel-debug.mount"
node_packages=systemd,systemd-sysv,dbus,python3,python3-apt,ca-certificates,iproute2,procps,sudo,gnupg,less,slurm-wlm,munge
# shellcheck disable=SC2016
build "$node_repo" hpc-slurm-node "$node_packages" \
    --customize-hook='truncate -s0 "$1"/etc/machine-id' \
    --customize-hook='rm -f "$1"/etc/munge/munge.key' \
    --customize-hook="chroot \"\$1\" systemctl mask $masked" \
    -- 'CMD ["/lib/systemd/systemd"]' 'ENV container=docker'

# The job image: what a user's MPI application image holds. sshd's host keys
# from the package's postinst are removed (srun-docker brings a key per job).
job_packages=openmpi-bin,openssh-server,openssh-client,python3-mpi4py,procps
# shellcheck disable=SC2016
build "$job_repo" hpc-slurm-job "$job_packages" \
    --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
    -- 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

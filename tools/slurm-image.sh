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
# The root filesystems come from the test bed's one recipe (tools/debian-rootfs.sh).
# The recipe hash is the first 12 hex digits of the sha256 of this script and
# that one; a rerun with an unchanged recipe only re-points the moving tags
# (`:debian12`).
#
# Environment: NODE_MIRROR, NODE_SECURITY_MIRROR (as tools/node-image.sh),
# SLURM_IMAGE_REBUILD=1 to rebuild although the images exist.
# Prints the node image reference, then the job image reference.
set -euo pipefail

lib="$(dirname "${BASH_SOURCE[0]}")/debian-rootfs.sh"
# shellcheck source=tools/debian-rootfs.sh
. "$lib"
recipe_hash="$(cat "${BASH_SOURCE[0]}" "$lib" | sha256sum | cut -c1-12)"
node_repo=localhost/hpc-slurm-node
job_repo=localhost/hpc-slurm-job

log() { printf 'slurm-image: %s\n' "$*" >&2; }

ensure_mmdebstrap
debian_sources
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
    if cached_image "$image" "${repo}:debian12" "${SLURM_IMAGE_REBUILD:-0}"; then
        return 0
    fi
    local start
    start=$(date +%s)
    log "building $image"
    debian_rootfs amd64 "$packages" "$workdir/$title.tar" "${opts[@]}"
    import_node_image "$workdir/$title.tar" "$image" "$title" "$recipe_hash" "${changes[@]}"
    rm -f "$workdir/$title.tar"
    log "built $image in $(( $(date +%s) - start )) s, $(( $(docker image inspect --format '{{.Size}}' "$image") / 1000000 )) MB"
    docker tag "$image" "${repo}:debian12"
    echo "$image"
}

# The node: the node containers' package set and masked units (tools/debian-rootfs.sh), plus Slurm and
# munge as a site has them installed. The packages' own munge key is removed: the test bed's prepare step
# gives the cluster one key, as a site does.
node_container_hooks "$NODE_MASKED_UNITS"
# shellcheck disable=SC2016
build "$node_repo" hpc-slurm-node "$NODE_PACKAGES,slurm-wlm,munge" \
    "${NODE_CONTAINER_HOOKS[@]}" \
    --customize-hook='rm -f "$1"/etc/munge/munge.key' \
    -- 'CMD ["/lib/systemd/systemd"]' 'ENV container=docker'

# The job image: what a user's MPI application image holds. sshd's host keys
# from the package's postinst are removed (srun-docker brings a key per job).
job_packages=openmpi-bin,openssh-server,openssh-client,python3-mpi4py,procps
# shellcheck disable=SC2016
build "$job_repo" hpc-slurm-job "$job_packages" \
    --customize-hook="$DEBIAN_NO_APT_LISTS" \
    --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
    -- 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

#!/usr/bin/env bash
# Build the stand-in EL package repositories of the test bed (STAND-IN FOR TESTS): Docker CE's, NVIDIA's
# container toolkit's, the site's EL base mirror and a registry release tarball, as an air-gapped EL site
# mirrors them, from Debian 12 packages only (rpm-repo.sh says what is in each). Nothing is pulled: the
# .debs come from `apt-get download` on this machine, the RPMs are built and signed inside a container of
# the EL node image (image.sh, built first if missing) with no network.
#
# Cached by recipe hash: ${EL_STANDIN_CACHE:-~/.cache/hpc.gpu_containers/el-standin}/<hash>/, the hash
# covering this script, rpm-repo.sh, the NVIDIA stand-in's build.sh and files/, and the EL node image's
# recipe hash; a rerun with an unchanged recipe prints the directory at once. The signing keys are made
# at build time and exist only there (gnupg/ is not kept; the public keys are in the repositories).
#
# Usage: build.sh            prints the repository directory on the last line of stdout; put it on a node
#                            at /srv/el-standin (the .repo files and URLs below assume that path).
# Environment: EL_STANDIN_REBUILD=1 rebuilds although the cache exists.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvidia_standin="$here/../nvidia-standin"
cache_root="${EL_STANDIN_CACHE:-$HOME/.cache/hpc.gpu_containers/el-standin}"
log() { printf 'el-standin: %s\n' "$*" >&2; }

image="$("$here/image.sh" | tail -n 1)"
recipe_hash="$( { cat "${BASH_SOURCE[0]}" "$here/rpm-repo.sh" "$nvidia_standin/build.sh";
                  cat "$nvidia_standin"/files/*; echo "$image"; } | sha256sum | cut -c1-12)"
dir="$cache_root/$recipe_hash"
if [ "${EL_STANDIN_REBUILD:-0}" != 1 ] && [ -f "$dir/MANIFEST" ]; then
    log "cached: $dir"
    echo "$dir"
    exit 0
fi

# Debian 12 packages whose payload goes into the RPMs: the Docker engine (docker.io, containerd, runc,
# tini), the registry, and the Python packages of the roles' EL installs with what they need beyond the
# node image (the EL base repository).
debs=(docker.io containerd runc tini docker-registry busybox-static
      python3-bcrypt python3-certifi python3-cffi-backend python3-chardet python3-charset-normalizer
      python3-cryptography python3-docker python3-idna python3-pkg-resources python3-requests python3-six
      python3-urllib3 python3-websocket)

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.build-$recipe_hash.XXXXXX")"
[ "${EL_STANDIN_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
start=$(date +%s)
log "building $dir (image $image)"
mkdir -p "$work/debs"
chmod 0777 "$work/debs"   # apt's _apt user downloads into it
(cd "$work/debs" && apt-get download -q "${debs[@]}" >&2)
# The stand-in NVIDIA toolkit .debs (1.17.9 and 1.18.0, the ppc64le and x86_64 defaults, and the legacy
# nvidia-docker packages), exactly as the Debian scenarios get them.
"$nvidia_standin/build.sh" "$work/nvidia-debs" >&2
docker run --rm --name "el-repo-build-$recipe_hash" --network none \
    -e SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-1700000000}" \
    -v "$work:$work" -v "$here:/recipe:ro" \
    "$image" nice -n 19 bash /recipe/rpm-repo.sh "$work" >&2
rm -rf "$dir"
mv "$work/out" "$dir"
log "built $dir in $(( $(date +%s) - start )) s, $(du -sm "$dir" | cut -f1) MB"
echo "$dir"

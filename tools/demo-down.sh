#!/usr/bin/env bash
# Remove the demo cluster of tools/demo.sh: its containers, their
# /var/lib/docker volumes, the network and the local state. The node image
# stays (tools/node-image.sh caches it).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix=demo-
for node in head gpu01 gpu02; do
    if docker container inspect "$prefix$node" >/dev/null 2>&1; then
        docker rm -f -v "$prefix$node" >/dev/null
        echo "removed container $prefix$node"
    fi
    if docker volume inspect "$prefix$node-docker" >/dev/null 2>&1; then
        docker volume rm "$prefix$node-docker" >/dev/null
        echo "removed volume $prefix$node-docker"
    fi
done
if docker network inspect hpc-gpu-demo >/dev/null 2>&1; then
    docker network rm hpc-gpu-demo >/dev/null
    echo "removed network hpc-gpu-demo"
fi
rm -rf "$root/.cache/demo"

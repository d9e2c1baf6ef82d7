#!/bin/sh
# TEST BED ONLY (verify.yml of the volclava scenario; never shipped by a role): the JOB_STARTER of a "docker"
# queue in volclava's lsb.queues, the experiment behind "Docker jobs on an OpenLava-lineage cluster" in
# docs/lsf.md. volclava's sbatchd runs it as the job's user, with the user's command line as its arguments:
#
#   JOB_STARTER = /usr/local/bin/testbed-docker-queue-starter IMAGE %USRCMD
#
# It runs the command in IMAGE, as the job's user (uid:gid), with no network and no GPU: volclava allocates no GPU
# by name and tells a job nothing of the resources it reserved (no resource requirement in the job's
# environment), so a starter cannot tell which GPUs, or how many, are the job's. Nothing of the job's environment
# reaches the container (no --env from it), so NVIDIA_VISIBLE_DEVICES=all in a submitter's environment changes
# nothing. The docker client talks to the node's dockerd as the job's user: only a member of the docker group
# gets that far.
set -eu
if [ "$#" -lt 2 ]; then
    echo "testbed-docker-queue-starter: usage: testbed-docker-queue-starter IMAGE COMMAND [ARG...]" >&2
    exit 64
fi
image=$1
shift
exec /usr/bin/docker run --rm --network none --user "$(id -u):$(id -g)" --runtime nvidia \
    --env NVIDIA_VISIBLE_DEVICES=void --env NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    --label "testbed.volclava.job=${LSB_JOBID:-none}" "$image" "$@"

#!/usr/bin/env bash
# Start the local Docker engine when its socket does not answer (CI machines start without one).
set -euo pipefail
DOCKER=/usr/bin/docker
if ! command -v dockerd >/dev/null 2>&1; then
    echo "dockerd missing: installing docker.io" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if $DOCKER version >/dev/null 2>&1; then
    exit 0
fi
mkdir -p /var/log
nohup dockerd >/var/log/pai-dockerd.log 2>&1 &
for _ in $(seq 1 60); do
    if $DOCKER version >/dev/null 2>&1; then
        echo "dockerd is up" >&2
        exit 0
    fi
    sleep 1
done
echo "dockerd did not start; see /var/log/pai-dockerd.log" >&2
tail -20 /var/log/pai-dockerd.log >&2 || true
exit 1

#!/usr/bin/env bash
# Build the portal's base image offline (no container registry here): a minimal Debian tree made
# by mmdebstrap from the Debian mirror, imported into the local engine as pai-portal/base:latest.
# The tarball is cached under var/cache/, so a second run (or a fresh engine) is fast; when the
# image already exists nothing is done at all. FORCE=1 rebuilds both. `build-base-image.sh
# training` builds pai-portal/training:latest, the base with PyTorch and OpenMPI (Debian's);
# `build-base-image.sh notebook` pai-portal/notebook:latest, the base with Jupyter Notebook.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCKER=/usr/bin/docker
SUITE=${PAI_BASE_SUITE:-bookworm}
# What a task needs: python3 for scripts, sshd for SSH, ps/ip for debugging, ping/nc/getent
# (libc-bin) for checking the job network.
PACKAGES=python3,openssh-server,procps,iproute2,iputils-ping,netcat-openbsd,ca-certificates
if [ "${1:-}" = training ]; then
    # The distributed-training image (docs/user/distributed.md): PyTorch (CPU, gloo) and
    # OpenMPI with mpi4py from Debian, and the ssh client mpirun starts its daemons with.
    IMAGE=${PAI_TRAINING_IMAGE:-pai-portal/training:latest}
    PACKAGES=$PACKAGES,openssh-client,python3-torch,openmpi-bin,python3-mpi4py
elif [ "${1:-}" = notebook ]; then
    # The interactive image (docs/user/apps.md): Debian's Jupyter Notebook and
    # its Python kernel, for the jupyter runtime plugin.
    IMAGE=${PAI_NOTEBOOK_IMAGE:-pai-portal/notebook:latest}
    PACKAGES=$PACKAGES,jupyter-notebook,python3-ipykernel
else
    IMAGE=${PAI_BASE_IMAGE:-pai-portal/base:latest}
fi
CACHE_DIR=${PAI_IMAGE_CACHE:-var/cache}
# The cache key changes when the package list or the suite changes.
KEY=$(printf '%s|%s' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)
TARBALL="$CACHE_DIR/pai-base-$SUITE-$KEY.tar"

if [ "${FORCE:-0}" != 1 ] && $DOCKER image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "$IMAGE already present" >&2
    exit 0
fi

mkdir -p "$CACHE_DIR"
if ! command -v mmdebstrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing mmdebstrap (Debian package) to build the image" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
    else
        echo "make image needs mmdebstrap: sudo apt-get install mmdebstrap" >&2
        exit 1
    fi
fi
if [ "${FORCE:-0}" = 1 ] || [ ! -s "$TARBALL" ]; then
    echo "building $TARBALL with mmdebstrap ($PACKAGES)" >&2
    tmp="$CACHE_DIR/.partial-$KEY.tar"
    rm -f "$tmp"
    # merged-usr hook: avoids pulling perl into minbase. Host keys are removed so that no two
    # containers share one (the runtime generates an ed25519 key per container).
    mmdebstrap --variant=minbase --mode=auto \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --include="$PACKAGES" \
        --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
        "$SUITE" "$tmp"
    mv "$tmp" "$TARBALL"
fi

echo "importing $TARBALL as $IMAGE" >&2
$DOCKER import \
    --change 'CMD ["/bin/bash"]' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    "$TARBALL" "$IMAGE" >/dev/null
echo "$IMAGE ready" >&2

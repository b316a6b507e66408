# On the device machine, from the repo root:  bash scripts/gpu/device-run.sh  (the bundle in .gpu/,
# made here by scripts/gpu/bundle.sh, carried beside the checkout)
# Installs the portal's wheels into /tmp/site and Debian's bubblewrap + passt into /tmp/pkgs
# (never into /), prints what the machine has, then runs scripts/gpu_check.py; exits with its code.
# $OUT (if set) receives gpu_check.log and env.log.
# Tried on a machine without a GPU (Python 3.12 as python3, scripts/gpu/fake-nvidia-smi first on PATH as nvidia-smi;
# only CUDA's checks and the device node's fail there):
#   mkdir -p /tmp/fake && ln -sf "$(command -v python3.12)" /tmp/fake/python3 && cp scripts/gpu/fake-nvidia-smi /tmp/fake/nvidia-smi
#   GPU_TMP=/tmp/gpu-try OUT=/tmp/gpu-try/out PATH=/tmp/fake:$PATH bash scripts/gpu/device-run.sh
set -u
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")/../.." && pwd)/.gpu
T=${GPU_TMP:-/tmp}      # (another folder when tried on a shared machine)
SITE=$T/site            # the portal's Python packages
PKGS=$T/pkgs            # bwrap, pasta: their bin/ goes on PATH (nothing else is in it)
EXTRA=$T/pkgs-extra     # libraries and setpriv, used only where the machine lacks them
export PYTHONUNBUFFERED=1 PIP_ROOT_USER_ACTION=ignore

echo "== wheels"
timeout 120 python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$HERE"/whl/*.whl || { echo "pip install failed"; exit 2; }
export PYTHONPATH=$SITE

echo "== debs"
rm -rf "$PKGS" "$EXTRA"; mkdir -p "$PKGS" "$EXTRA"
# The sandbox's tools on PATH (bwrap; pasta and ip for the task's own network); the rest is libraries.
for deb in "$HERE"/deb/bubblewrap_*.deb "$HERE"/deb/passt_*.deb "$HERE"/deb/iproute2_*.deb; do dpkg -x "$deb" "$PKGS"; done
for deb in "$HERE"/deb/*.deb; do
    case $deb in */bubblewrap_*|*/passt_*|*/iproute2_*) ;; *) dpkg -x "$deb" "$EXTRA";; esac
done
export PATH="$PKGS/usr/bin:$PKGS/bin:$PATH"
for tool in "$PKGS/usr/bin/bwrap" "$PKGS/bin/ip"; do
    if ldd "$tool" | grep -q "not found"; then
        # The supervisor passes on PATH alone (no LD_LIBRARY_PATH): a wrapper brings the libraries.
        echo "$(basename "$tool") lacks libraries here: $(ldd "$tool" | grep 'not found' | xargs)"
        mv "$tool" "$tool.real"
        printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' \
            "$EXTRA/lib/x86_64-linux-gnu:$EXTRA/usr/lib/x86_64-linux-gnu" "$tool.real" > "$tool"
        chmod 755 "$tool"
    fi
done
if ! command -v setpriv >/dev/null; then
    echo "no setpriv here: Debian's util-linux one"
    ln -s "$EXTRA/usr/bin/setpriv" "$PKGS/usr/bin/setpriv"
fi

echo "== machine"
{
    cat /etc/os-release 2>/dev/null | grep -E '^(PRETTY_NAME|VERSION_ID)='
    echo "kernel $(uname -r)"; id
    nvidia-smi -L
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version --format=csv,noheader
    ls -l /dev/nvidia* /dev/nvidia-caps 2>&1
    ls -l /dev/net/tun 2>&1
    echo "python3: $(command -v python3) -> $(readlink -f "$(command -v python3)")"
    python3 -c "import torch, django; print('torch', torch.__version__, 'django', django.__version__)"
    { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -E 'libcuda\.so|libnvidia-ml\.so' | head -4
    echo "bwrap: $(command -v bwrap) $(bwrap --version)"
    echo "pasta: $(command -v pasta) $(pasta --version 2>&1 | head -1)"
    echo "ip: $(command -v ip) $(ip -V 2>&1)"; echo "nsenter: $(command -v nsenter)"
    echo "setpriv: $(command -v setpriv) $(setpriv --version)"
    for knob in /proc/sys/user/max_user_namespaces /proc/sys/kernel/unprivileged_userns_clone \
            /proc/sys/kernel/apparmor_restrict_unprivileged_userns; do
        [ -e "$knob" ] && echo "$knob = $(cat "$knob")"
    done
    echo "cgroup: $(stat -fc %T /sys/fs/cgroup)"
    nvidia-smi -q | grep -iE '^GPU |minor number'
    ls -ld /opt/torch /opt/torch/.venv 2>&1
    # The sandbox by hand, as a plain uid, before the portal tries it: the GPU's devices bound in.
    plain="setpriv --reuid=2000123 --regid=2000123 --clear-groups --no-new-privs --inh-caps=-all --bounding-set=-all --"
    devices=$(for d in /dev/nvidia*; do [ -c "$d" ] && printf -- '--dev-bind %s %s ' "$d" "$d"; done)
    timeout 20 $plain bwrap --unshare-all --share-net --ro-bind / / --dev /dev --proc /proc -- id \
        && echo "bwrap as a plain uid: works" || echo "bwrap as a plain uid: FAILED"
    timeout 20 $plain bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc -- true \
        && echo "bwrap --unshare-net as a plain uid: works" || echo "bwrap --unshare-net as a plain uid: FAILED"
    timeout 60 $plain bwrap --unshare-all --share-net --ro-bind / / --dev /dev $devices --proc /proc \
        --tmpfs /tmp --setenv HOME /tmp -- python3 -c \
        "import torch; n = torch.cuda.device_count(); print('by hand, torch sees', n, *map(torch.cuda.get_device_name, range(n)))" \
        || echo "torch in bwrap as a plain uid: FAILED"
} 2>&1 | tee "$OUT/env.log"

echo "== gpu_check"
set -o pipefail
timeout 240 python3 scripts/gpu_check.py 2>&1 | tee "$OUT/gpu_check.log"
code=$?
echo "gpu_check exit code: $code"
exit $code

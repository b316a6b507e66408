#!/usr/bin/env bash
# What pip needs to build the packages that have no wheel: python-ldap compiles against OpenLDAP's
# and Cyrus SASL's headers (libldap-dev, libsasl2-dev), with a C compiler and Python's own headers.
# As root with apt-get, installs what is missing; otherwise says what to install and exits 1.
# Usage: scripts/ensure-build-deps.sh [python]   (the interpreter the venv is made from; python3)
set -euo pipefail
PYTHON=${1:-python3}

missing=()
[ -f /usr/include/ldap.h ] || missing+=(libldap-dev)
[ -f /usr/include/sasl/sasl.h ] || missing+=(libsasl2-dev)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
include=$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("include"))')
[ -f "$include/Python.h" ] || missing+=(python3-dev)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing build dependencies: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    exit 0
fi
echo "pip needs these to build python-ldap; install them first (as root):" >&2
echo "    apt-get install ${missing[*]}" >&2
echo "(elsewhere: OpenLDAP's and Cyrus SASL's development headers, a C compiler, Python's headers)" >&2
exit 1

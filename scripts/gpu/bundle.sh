#!/usr/bin/env bash
# Builds .gpu/ (ignored by git) for scripts/gpu/device-run.sh on a GPU machine with no network and
# Python 3.12: the portal's wheels for CPython 3.12 (without what the check never imports: the
# production server granian, PostgreSQL's driver, honcho) and Debian's bubblewrap, passt and iproute2 (the sandbox and the task's own network) with
# the libraries an Ubuntu image may lack. Carry `.gpu` with the checkout (about 35 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .gpu && mkdir -p .gpu/whl .gpu/deb
grep -Ev '^(#|$)|^(granian|psycopg|honcho)' requirements.txt > .gpu/requirements.txt
platforms=()
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 manylinux1 manylinux_2_34 manylinux_2_35; do
    platforms+=(--platform "${tag}_x86_64")
done
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp "${platforms[@]}" \
    -d .gpu/whl -r .gpu/requirements.txt
(cd .gpu/deb && apt-get download bubblewrap passt iproute2 libbpf1 libmnl0 libxtables12 libelf1 libcap2 libselinux1 \
    libpcre2-8-0 util-linux libcap-ng0)
for deb in .gpu/deb/*.deb; do  # plain names (no %3a, ~ or +): dpkg -x does not care
    plain=$(basename "$deb" | tr '~+' '--' | sed 's/%3a/-/g'); [ "$plain" = "$(basename "$deb")" ] || mv "$deb" ".gpu/deb/$plain"
done
du -sh .gpu

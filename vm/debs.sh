# shellcheck shell=bash
# Sourced by vm/ scripts: Debian packages fetched with apt-get download (the package registry
# is the only network they use), cached in ${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}.
VM_CACHE=${IVCUDA_VM_CACHE:-/var/cache/ivcuda-vm}

# fetch_deb PACKAGE → prints the path of its .deb in the cache, downloading it if absent.
fetch_deb() {
    local deb
    mkdir -p "$VM_CACHE"
    deb=$(ls "$VM_CACHE"/"$1"_*.deb 2>/dev/null | head -1 || true)
    if [ -z "$deb" ]; then
        (cd "$VM_CACHE" && apt-get download -q "$1" >/dev/null 2>&1) || {
            echo "apt-get download $1 failed (run 'apt-get update' first?)" >&2; return 1; }
        deb=$(ls "$VM_CACHE"/"$1"_*.deb | head -1)
    fi
    echo "$deb"
}

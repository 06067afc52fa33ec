#!/bin/bash
# Installs what kind on Podman and make kind-node-image need (root):
# Podman with runc (crun refuses cgroup v1 hybrid hosts), netavark and
# aardvark-dns (container names resolve on kind's network), debootstrap
# (the node's Debian tree). Only what is missing is installed. Podman's
# settings come from hack/kind/containers.conf through CONTAINERS_CONF,
# not from /etc. /lib/modules is created when missing: kind bind-mounts it
# into every node and Podman refuses a missing source (kernels without
# loadable modules have none).
set -euo pipefail
cd "$(dirname "$0")"
missing=()
while read -r pkg; do
  [ -z "$pkg" ] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < kind-packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
mkdir -p /lib/modules

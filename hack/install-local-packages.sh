#!/bin/bash
# Installs the Debian packages the local provider (framework/localk8s) runs:
# containerd 1.6, runc, the CNI plugins, iptables, ipset, nftables (nft: the
# wipe removes istio-cni's nftables tables), conntrack. Only
# what is missing is installed; containerd's own service is not started (the
# provider runs its own containerd with its own config and socket).
set -euo pipefail
cd "$(dirname "$0")"
missing=()
while read -r pkg; do
  [ -z "$pkg" ] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < local-packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -q
  # policy-rc.d 101: on hosts with an init system, do not start the
  # packaged containerd service.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

#!/bin/bash
# Installs the disposable-VM layer conntrack.table-full runs in: Debian's
# user-mode-linux (a Linux 6.1 kernel that runs as host processes, with
# its conntrack modules under /usr/lib/uml/modules). Only installed when
# missing; it needs root (apt-get), as CI has.
set -euo pipefail
pkg=user-mode-linux
if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "$pkg is not installed and installing it needs root: run 'make vm-deps' as root (or apt-get install $pkg)" >&2
  exit 1
fi
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg"

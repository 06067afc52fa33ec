#!/bin/bash
# Installs the disposable-VM layer conntrack.table-full runs in: Debian's
# user-mode-linux (a Linux kernel that runs as host processes, with its
# conntrack modules under /usr/lib/uml/modules). Only installed when
# missing; it needs root (apt-get), as CI has.
#
# On a host CPU with AMX (Intel Sapphire Rapids and later), bookworm's UML
# (6.1) cannot start its init: "userspace - ptrace set fp regs failed,
# errno = 14", then "Attempted to kill init! exitcode=0x0000000b". Seen
# here with bookworm's 6.1um4 and trixie's 6.12um1; sid's 7.2um1 boots.
# There, this also takes sid's user-mode-linux and the libc6 it is built
# against with apt-get download (a private apt configuration naming sid,
# the system's sources untouched), unpacks both under $1 (bin/uml) and
# points the kernel's ELF interpreter at that libc (patchelf), since sid's
# libc cannot replace bookworm's. framework/umlvm prefers that kernel and
# the report names it.
set -euo pipefail
pkg=user-mode-linux
dest=${1:-}
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "$1 needs root: run 'make vm-deps' as root" >&2
    exit 1
  fi
}
if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
  need_root "installing $pkg"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg"
fi

grep -qw amx_tile /proc/cpuinfo || exit 0
[ -n "$dest" ] || { echo "this host's CPU has AMX: give the directory for sid's user-mode-linux (make vm-deps passes bin/uml)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
[ -x "$dest/root/usr/bin/linux.uml" ] && exit 0
need_root "taking sid's $pkg for this AMX host"
if ! command -v patchelf >/dev/null; then
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends patchelf
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
echo "deb http://deb.debian.org/debian sid main" > "$work/sources.list"
apt_sid=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
  -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_sid[@]}" update -q
(cd "$work/debs" && apt-get "${apt_sid[@]}" download "$pkg" libc6)
rm -rf "$dest/root.new"
for d in "$work"/debs/*.deb; do dpkg-deb -x "$d" "$dest/root.new"; done
lib="$dest/root/usr/lib/x86_64-linux-gnu"
patchelf --set-interpreter "$lib/ld-linux-x86-64.so.2" --set-rpath "$lib" "$dest/root.new/usr/bin/linux.uml"
(cd "$work/debs" && ls *.deb) > "$dest/root.new/PACKAGES"
rm -rf "$dest/root"
mv "$dest/root.new" "$dest/root"
echo "sid's $pkg for this AMX host: $(cat "$dest/root/PACKAGES" | tr '\n' ' ')"

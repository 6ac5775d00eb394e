#!/usr/bin/env bash
# boot-root.sh ROOT [SECONDS] — boot the systemd of the Debian root ROOT
# as PID 1 of new PID, mount, cgroup, UTS and IPC namespaces, and wait until
# it powers off (a unit in ROOT must run `systemctl poweroff`), at most
# SECONDS (default 300): then the whole namespace is killed. What it did
# is in ROOT's journal (journalctl -D ROOT/var/log/journal). Exits 0 once
# it powered off; anything else is an error. Needs root; used by
# scripts/test-package.sh to run nomarr.service under a real systemd.
#
# What systemd-nspawn would do, without its need for a system bus on the
# host, and with the cgroup controllers writable: nspawn mounts cgroup v1
# controllers read-only in a container, so on a host with the hybrid
# hierarchy (the memory controller on v1) systemd could not apply
# MemoryMax=. Here the controllers are mounted afresh in the new cgroup
# namespace, whose root is this process's cgroup: the container's systemd
# makes its slices below it and writes their limits. On a unified host
# (cgroup2 only) the one hierarchy is mounted.
#
# Nothing outside ROOT is left: the mounts live in the new mount
# namespace and go with its last process, /dev is a tmpfs with nodes of
# its own (null, zero, full, random, urandom, tty, a devpts instance), and
# the cgroups the container's systemd made are removed once it is gone.
set -euo pipefail

if [ "${1:-}" = --inner ]; then
	root=$2
	mount --make-rprivate /
	mount -t proc proc "$root/proc"
	# The kernel's settings stay the host's: /proc/sys and sysrq read-only
	# (systemd-sysctl then skips), /sys read-only, as nspawn has them.
	for p in "$root/proc/sys" "$root/proc/sysrq-trigger"; do
		[ -e "$p" ] || continue
		mount --bind "$p" "$p"
		mount -o remount,bind,ro "$p"
	done
	mount -t sysfs -o ro sysfs "$root/sys"
	cg=$root/sys/fs/cgroup
	if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		mount -t cgroup2 cgroup2 "$cg"
	else
		mount -t tmpfs -o mode=0755 tmpfs "$cg"
		# Each v1 hierarchy the host mounts, then systemd's own and cgroup2.
		# Controllers the host mounts together (cpu,cpuacct) are mounted
		# together.
		for ctl in $(awk '$3 == "cgroup" { print $4 }' /proc/self/mounts | while read -r opts; do
			tr ',' '\n' <<<"$opts" | grep -vxE 'rw|ro|relatime|nosuid|nodev|noexec|clone_children|xattr|noprefix|name=.*|release_agent=.*' | paste -sd, -
		done | grep . | sort -u); do
			mkdir -p "$cg/$ctl"
			mount -t cgroup -o "$ctl" cgroup "$cg/$ctl"
		done
		mkdir -p "$cg/systemd" "$cg/unified"
		mount -t cgroup -o none,name=systemd cgroup "$cg/systemd"
		mount -t cgroup2 cgroup2 "$cg/unified"
		mount -o remount,ro "$cg"
	fi
	# Device nodes of its own (a bind of the host's would let the
	# container's systemd chown and chmod the host's nodes), and no
	# console: systemd then logs to the journal only.
	mount -t tmpfs -o mode=0755,nosuid tmpfs "$root/dev"
	mknod -m 0666 "$root/dev/null" c 1 3
	mknod -m 0666 "$root/dev/zero" c 1 5
	mknod -m 0666 "$root/dev/full" c 1 7
	mknod -m 0666 "$root/dev/random" c 1 8
	mknod -m 0666 "$root/dev/urandom" c 1 9
	mknod -m 0666 "$root/dev/tty" c 5 0
	mkdir -p "$root/dev/pts" "$root/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
	ln -s pts/ptmx "$root/dev/ptmx"
	mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
	mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$root/run"
	exec chroot "$root" /usr/bin/env -i container=nomarr-test PATH=/usr/sbin:/usr/bin:/sbin:/bin /lib/systemd/systemd
fi

root=${1:?usage: boot-root.sh ROOT [SECONDS]}
limit=${2:-300}
[ "$(id -u)" = 0 ] || { echo "boot-root.sh: needs root" >&2; exit 1; }
[ -x "$root/lib/systemd/systemd" ] || { echo "boot-root.sh: no systemd in $root" >&2; exit 1; }
root=$(cd "$root" && pwd)

# unitcgroups lists the cgroups named like systemd units (init.scope,
# system.slice, …) in every hierarchy of this machine.
unitcgroups() {
	find /sys/fs/cgroup -mindepth 1 -type d \( -name '*.scope' -o -name '*.slice' -o -name '*.service' \
		-o -name '*.mount' -o -name '*.socket' -o -name '*.swap' \) 2>/dev/null | sort
}
before=$(mktemp)
trap 'rm -f "$before"' EXIT
unitcgroups >"$before"
rc=0
# unshare ignores SIGTERM and SIGINT while it waits; killed (SIGKILL),
# its --kill-child takes PID 1 and with it every process of the
# namespace. So the time limit, and a signal to this script, kill
# unshare itself: a limit around this script would leave unshare and the
# booted system running.
unshare --pid --fork --kill-child --mount --uts --ipc --cgroup "${BASH_SOURCE[0]}" --inner "$root" &
upid=$!
sleep "$limit" &
spid=$!
trap 'kill -KILL "$upid" "$spid" 2>/dev/null' INT TERM HUP
wait -n "$upid" "$spid" || true
if kill -0 "$upid" 2>/dev/null; then
	kill -KILL "$upid" 2>/dev/null || true
fi
kill "$spid" 2>/dev/null || true
wait "$upid" || rc=$?
wait "$spid" 2>/dev/null || true
trap - INT TERM HUP
# The container's systemd made its cgroups below this process's, in the
# host's hierarchies; those it left (init.scope, a slice, a few mounts'),
# empty once its processes are gone (a killed namespace takes a moment),
# are removed, deepest first. One still in use after 10 s stays.
for _ in $(seq 1 20); do
	left=$(unitcgroups | comm -13 "$before" - | sort -r)
	[ -n "$left" ] || break
	while read -r d; do rmdir "$d" 2>/dev/null || true; done <<<"$left"
	[ -z "$(unitcgroups | comm -13 "$before" -)" ] && break
	sleep 0.5
done
# systemctl poweroff in a PID namespace ends its PID 1 with SIGINT
# (reboot(2)): 128 + 2.
case $rc in
130) exit 0 ;;
137) echo "boot-root.sh: systemd in $root did not power off within $limit s (or this script was stopped): killed" >&2 ;;
*) echo "boot-root.sh: systemd in $root ended with status $rc, not by powering off" >&2 ;;
esac
exit 1

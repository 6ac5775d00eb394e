#!/usr/bin/env bash
# test-package.sh [DEB] — install the Debian package into a throwaway Debian
# 12 root and check it (make test-package; needs root). Never installs
# into this machine.
#
# The root: debootstrap --variant=minbase bookworm from this machine's
# Debian mirror, with the package's dependencies downloaded (not
# installed) into its apt cache and systemd installed (systemd-analyze, and
# the service check boots it); kept in $PKGTEST_CACHE (default
# .cache/package-test/bookworm) and reused. Each run works on an overlay
# of it (a copy where overlayfs is refused), thrown away at the end, with
# /proc and /dev mounted (the workers start through /proc/self/exe) and
# unmounted on any exit.
#
# Checks, in order:
#   install   apt-get install ./nomarr.deb pulls ffmpeg and TagLib from
#             Depends; the user, /var/lib/nomarr and the conffile exist;
#             systemd-analyze verify finds nothing inroot nomarr.service
#   tag       `env -i PATH=/usr/bin:/bin nomarr tag DIR` from / tags a
#             small demo library (scripts/testaudio.sh): every file holds
#             nom_version after, read by ffprobe
#             (the store in root's home: /root/.local/share/nomarr); as
#             nobody (no home) it exits 2 naming --data-dir
#   service   the root's systemd booted as PID 1 (scripts/boot-root.sh)
#             runs nomarr.service with library_root set and a drop-in
#             opening a library under /home: it tags the library; the
#             service runs as nomarr with NoNewPrivs, / and /home
#             read-only, the library and /var/lib/nomarr read-write, a
#             private /tmp, a 1 GiB memory limit on its cgroup and its 2
#             workers in it; `systemctl stop` ends it with exit 0 within
#             stop_grace, and the journal has its lines; under
#             MemoryMax=300M it refuses its 2 workers (exit 2) and is not
#             restarted
#   upgrade   the same .deb again: the config edit and the store stay,
#             and the store's files stay tagged
#   remove    the binary goes; the store and the config stay
#   purge     says it removes /var/lib/nomarr; nothing named nomarr is
#             left on the root's file system but the library, root's own
#             store and the drop-ins (which it says it keeps), and the
#             nomarr user is kept
# Without DEB, scripts/build-deb.sh builds the package first. Prints each
# phase's time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SUITE=bookworm
CACHE=${PKGTEST_CACHE:-.cache/package-test/$SUITE}

log() { echo "test-package: $*" >&2; }
die() {
	log "FAIL: $*"
	exit 1
}
phase_start=$SECONDS
phase() {
	log "--- $1 (previous phase: $((SECONDS - phase_start)) s)"
	phase_start=$SECONDS
}

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, mounts); CI runs as root"

# need PKG...: install this machine's tools the test uses (debootstrap;
# lintian, which build-deb.sh runs) when missing.
need() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return
	log "installing ${missing[*]} on this machine (test tools)"
	{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"; } >&2 ||
		die "could not install ${missing[*]}"
}
need debootstrap lintian

deb=${1:-}
if [ -z "$deb" ]; then
	phase "build the package"
	deb=$(scripts/build-deb.sh)
fi
[ -f "$deb" ] || die "$deb not found"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
version=$(dpkg-deb -f "$deb" Version)

# mirror is the Debian mirror this machine's apt uses (deb822 or one-line
# sources), else deb.debian.org.
mirror() {
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^URIs:/ {u=$2} /^Suites:/ && u ~ /debian\/?$/ && $0 ~ / '"$SUITE"'( |$)/ {print u; exit}')
	[ -n "$m" ] || m=$(grep -hE "^deb (\[[^]]*\] )?[^ ]+/debian/? $SUITE " /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -E 's/^deb (\[[^]]*\] )?([^ ]+).*/\2/' | head -n 1)
	echo "${m:-http://deb.debian.org/debian}"
}

# The cached root: minbase, and the dependencies' packages in the apt cache.
if [ ! -f "$CACHE/.complete" ]; then
	phase "debootstrap $SUITE into $CACHE (once; cached)"
	if [ ! -f "$CACHE/.debootstrapped" ]; then
		rm -rf "$CACHE"
		mkdir -p "$(dirname "$CACHE")"
		debootstrap --variant=minbase "$SUITE" "$CACHE" "$(mirror)" >&2 || die "debootstrap failed"
		touch "$CACHE/.debootstrapped"
	fi
	deps=$(dpkg-deb -f "$deb" Depends | sed -E 's/\([^)]*\)//g; s/,/ /g')
	chroot "$CACHE" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin apt-get update >&2 || die "apt-get update in the root failed"
	# systemd, for systemd-analyze verify against the root's own units.
	chroot "$CACHE" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends systemd >&2 || die "installing systemd in the root failed"
	chroot "$CACHE" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends --download-only $deps >&2 || die "downloading $deps failed"
	touch "$CACHE/.complete"
fi

phase "prepare a throwaway root"
work=$(mktemp -d "${TMPDIR:-/tmp}/nomarr-pkgtest.XXXXXX")
root=$work/root
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null ||
			log "could not unmount ${mounted[i]}"
	done
	# Only remove the work tree once nothing is mounted in it.
	if ! grep -q " $work/" /proc/self/mounts; then
		rm -rf "$work"
	else
		log "left $work: still mounted"
	fi
}
trap cleanup EXIT
mkdir -p "$work"/upper "$work"/w "$root"
if mount -t overlay overlay -o "lowerdir=$(cd "$CACHE" && pwd),upperdir=$work/upper,workdir=$work/w" "$root" 2>/dev/null; then
	mounted+=("$root")
else
	log "overlayfs refused: copying the cached root"
	cp -a "$CACHE"/. "$root"/
fi
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount --bind /dev "$root/dev" && mounted+=("$root/dev")

# inroot runs a command in the root as root, with a bare environment.
inroot() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }

phase "install $(basename "$deb") with apt"
cp "$deb" "$root/tmp/nomarr.deb"
inroot apt-get install -y --no-install-recommends /tmp/nomarr.deb </dev/null >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log" >&2; die "apt-get install failed"; }
grep -q "systemctl enable --now nomarr" "$work/install.log" || die "install did not say how to start the service"
[ "$(inroot dpkg-query -W -f='${Status} ${Version}' nomarr)" = "install ok installed $version" ] || die "nomarr $version not installed"
for p in ffmpeg libtag1v5-vanilla; do
	inroot dpkg-query -W -f='${Status}' "$p" | grep -q 'install ok installed' || die "$p was not installed from Depends"
done
inroot getent passwd nomarr | grep -q ':/var/lib/nomarr:/usr/sbin/nologin$' || die "no nomarr system user"
[ "$(inroot stat -c '%U:%G %a' /var/lib/nomarr)" = "nomarr:nomarr 750" ] || die "/var/lib/nomarr: $(inroot stat -c '%U:%G %a' /var/lib/nomarr)"
grep -qx /etc/nomarr/config.yaml "$root/var/lib/dpkg/info/nomarr.conffiles" || die "config.yaml is not a conffile"
if grep -vE '^(#.*)?$' "$root/etc/nomarr/config.yaml"; then die "config.yaml sets a key as shipped"; fi
inroot nomarr version | grep -qF "$version" || die "nomarr version does not print $version"
# --man=no: the minbase root has no man to look Documentation=man:nomarr(1)
# up with; the page is there, and man on this machine formats it.
out=$(inroot systemd-analyze verify --man=no /lib/systemd/system/nomarr.service 2>&1) || die "systemd-analyze verify: $out"
[ -z "$out" ] || die "systemd-analyze verify: $out"
log "systemd-analyze verify nomarr.service: clean"
if command -v man >/dev/null 2>&1; then
	out=$(MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$root/usr/share/man/man1/nomarr.1.gz" 2>&1 >/dev/null) ||
		die "man nomarr: $out"
	[ -z "$out" ] || die "man nomarr warns: $out"
	log "man nomarr: formats without a warning"
else
	[ -s "$root/usr/share/man/man1/nomarr.1.gz" ] || die "no /usr/share/man/man1/nomarr.1.gz"
fi

phase "nomarr tag from / with a bare environment"
demo=$work/demo
scripts/testaudio.sh "$demo" >/dev/null 2>&1 || die "scripts/testaudio.sh failed (sox, espeak-ng, ffmpeg: scripts/deps.sh --test)"
files=(speech.flac chord.mp3 mix.ogg noise.opus mix.m4a)
mkdir -p "$root/srv/music"
for f in "${files[@]}"; do cp "$demo/good/$f" "$root/srv/music/"; done
# tagged DIR: every demo file in DIR holds nom_version (read by ffprobe:
# nom:nom_version in ID3 and MP4, NOM_NOM_VERSION in Vorbis comments).
tagged() {
	local f
	for f in "${files[@]}"; do
		inroot ffprobe -v error -show_entries format_tags:stream_tags -of default=nw=1 "$1/$f" |
			grep -qiE '^TAG:nom[:_]nom_version=.' || return 1
	done
}
if tagged /srv/music; then die "the demo files hold nom tags before tagging"; fi
chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin nomarr tag /srv/music >"$work/tag.log" 2>&1 ||
	{ cat "$work/tag.log" >&2; die "nomarr tag /srv/music failed"; }
tagged /srv/music || { cat "$work/tag.log" >&2; die "nomarr tag left files without nom_version"; }
log "tagged ${#files[@]} files: $(tail -n 1 "$work/tag.log")"
# With no HOME the store is under the home the user database gives
# (root's), never under the working directory.
[ -f "$root/root/.local/share/nomarr/nomarr.db" ] || die "env -i nomarr tag kept no store in /root/.local/share/nomarr"
[ ! -e "$root/.local" ] || die "env -i nomarr tag made a store under the working directory /"
# A user with no home (nobody: /nonexistent) is told to set data_dir.
rc=0
chroot --userspec=nobody:nogroup "$root" /usr/bin/env -i PATH=/usr/bin:/bin nomarr tag /srv/music >"$work/nohome.log" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--data-dir" "$work/nohome.log" ||
	{ cat "$work/nohome.log" >&2; die "nomarr tag as a user without a home: exit $rc, want 2 naming --data-dir"; }
log "as a user without a home: $(head -n 1 "$work/nohome.log")"

phase "the service: nomarr.service under the root's systemd"
# The library lies under /home, owned by nomarr and shared with the group
# music (a media server's), as README.Debian says to set it up: nomarr
# rewrites a file only when it can keep its owner and group. The drop-in
# README.Debian describes opens it (ProtectHome read-only, the library
# read-write, the group). The root's systemd boots
# as PID 1 in namespaces of its own (scripts/boot-root.sh) and runs
# unit-check.sh: it starts the unit, waits for the tags, checks the
# hardening from the service's side, stops it, then starts it again under
# a MemoryMax too small for its workers; its findings come back as
# key=value lines.
svclib=/home/music/library
port=$((20000 + RANDOM % 20000))
printf 'library_root: %s\nhttp_addr: 127.0.0.1:%d\nrescan_interval: 0\n' "$svclib" "$port" >>"$root/etc/nomarr/config.yaml"
inroot groupadd --system music
mkdir -p "$root$svclib"
for f in "${files[@]}"; do cp "$demo/good/$f" "$root$svclib/"; done
inroot chown -R nomarr:music "$svclib"
chmod 0755 "$root/home/music"
chmod 2775 "$root$svclib"
chmod 0664 "$root$svclib"/*
mkdir -p "$root/etc/systemd/system/nomarr.service.d"
printf '[Service]\nProtectHome=read-only\nReadWritePaths=%s\nSupplementaryGroups=music\n' "$svclib" \
	>"$root/etc/systemd/system/nomarr.service.d/library.conf"
cat >"$root/root/unit-check.sh" <<'EOF'
#!/bin/sh
# Run by unit-check.service in the booted test root; writes KEY=VALUE lines
# to /root/unit-check.out, the unit's journal to /root/unit-journal*.txt,
# then powers the root off.
lib=/home/music/library
out=/root/unit-check.out
exec >/root/unit-check.log 2>&1
set -x
say() { echo "$1=$2" >>"$out"; }
tagged() {
	for f in "$lib"/*; do
		ffprobe -v error -show_entries format_tags:stream_tags -of default=nw=1 "$f" |
			grep -qiE '^TAG:nom[:_]nom_version=.' || return 1
	done
}
# mountopt PID PATH: the options of the mount PATH lies on in PID's view
# (the last mounted of the longest mount point above it).
mountopt() {
	awk -v p="$2" '($5 == p || index(p, $5 "/") == 1 || $5 == "/") && length($5) >= n { n = length($5); o = $6 } END { print o }' \
		"/proc/$1/mountinfo"
}
cgfile() {
	for d in /sys/fs/cgroup/memory /sys/fs/cgroup/unified /sys/fs/cgroup; do
		[ -e "$d/system.slice/nomarr.service/$1" ] && { cat "$d/system.slice/nomarr.service/$1"; return; }
	done
}

ntagged() {
	n=0
	for f in "$lib"/*; do
		ffprobe -v error -show_entries format_tags:stream_tags -of default=nw=1 "$f" |
			grep -qiE '^TAG:nom[:_]nom_version=.' && n=$((n + 1))
	done
	echo "$n"
}
# stopped PREFIX: how the last stop went.
stopped() {
	say "$1result" "$(systemctl show -P Result nomarr.service)"
	say "$1exit_code" "$(systemctl show -P ExecMainCode nomarr.service)"
	say "$1exit_status" "$(systemctl show -P ExecMainStatus nomarr.service)"
}

# A stop while the workers start: as soon as the scan queued the files
# (they load the models, about 1 s, then tag).
systemctl start nomarr.service
say busy_start $?
i=0
until journalctl -u nomarr.service -o cat | grep -q 'msg="scanned library"' || [ $i -ge 300 ]; do
	sleep 0.1
	i=$((i + 1))
done
t0=$(date +%s%N)
systemctl stop nomarr.service
say busy_stop $?
say busy_stop_ms $((($(date +%s%N) - t0) / 1000000))
say busy_tagged_after "$(ntagged)"
stopped busy_

# A file in the root's /tmp (made after the boot, which empties /tmp),
# which a private /tmp does not show.
touch /tmp/outside-private-tmp
start=$(date +%s%N)
systemctl start nomarr.service
say start $?
i=0
while [ $i -lt 1800 ] && systemctl -q is-active nomarr.service && ! tagged; do
	journalctl -u nomarr.service -o cat | grep -q file_failed && break
	sleep 0.1
	i=$((i + 1))
done
tagged && say tagged yes || say tagged no
say tag_ms $((($(date +%s%N) - start) / 1000000))
pid=$(systemctl show -P MainPID nomarr.service)
say user "$(stat -c %U "/proc/$pid")"
say nonewprivs "$(awk '$1 == "NoNewPrivs:" { print $2 }' "/proc/$pid/status")"
say root_mount "$(mountopt "$pid" /)"
say home_mount "$(mountopt "$pid" /home)"
say library_mount "$(mountopt "$pid" "$lib")"
say state_mount "$(mountopt "$pid" /var/lib/nomarr)"
[ -e "/proc/$pid/root/tmp/outside-private-tmp" ] && say private_tmp no || say private_tmp yes
say memory_max "$(systemctl show -P MemoryMax nomarr.service)"
say memory_limit "$(cgfile memory.limit_in_bytes)$(cgfile memory.max)"
say procs "$(cgfile cgroup.procs | wc -l)"
say store "$(ls /var/lib/nomarr/nomarr.db)"

t0=$(date +%s%N)
systemctl stop nomarr.service
say stop $?
say stop_ms $((($(date +%s%N) - t0) / 1000000))
stopped ""
journalctl -b -u nomarr.service -o short-monotonic --no-pager >/root/unit-journal.txt

# Too little memory for the default 2 workers: nomarr refuses at start
# (exit 2) and the unit does not restart it.
printf '[Service]\nMemoryMax=300M\n' >/etc/systemd/system/nomarr.service.d/zz-small.conf
systemctl daemon-reload
cursor=$(journalctl -n 0 --show-cursor -q | sed -n 's/^-- cursor: //p')
systemctl start nomarr.service
i=0
while [ $i -lt 300 ] && ! systemctl -q is-failed nomarr.service; do
	sleep 0.1
	i=$((i + 1))
done
say small_state "$(systemctl show -P ActiveState nomarr.service)/$(systemctl show -P SubState nomarr.service)"
say small_result "$(systemctl show -P Result nomarr.service)"
say small_exit_status "$(systemctl show -P ExecMainStatus nomarr.service)"
say small_restarts "$(systemctl show -P NRestarts nomarr.service)"
journalctl --after-cursor="$cursor" -u nomarr.service -o cat --no-pager >/root/unit-journal-small.txt
rm /etc/systemd/system/nomarr.service.d/zz-small.conf
say done yes
systemctl poweroff
EOF
chmod 0755 "$root/root/unit-check.sh"
printf '[Unit]\nDescription=check nomarr.service\n[Service]\nExecStart=/root/unit-check.sh\n[Install]\nWantedBy=multi-user.target\n' \
	>"$root/etc/systemd/system/unit-check.service"
ln -s /etc/systemd/system/unit-check.service "$root/etc/systemd/system/multi-user.target.wants/unit-check.service"
boot=$SECONDS
scripts/boot-root.sh "$root" 300 || {
	cat "$root/root/unit-check.log" "$root/root/unit-check.out" >&2 2>/dev/null
	inroot journalctl -b -u nomarr.service -u unit-check.service --no-pager >&2 || true
	die "the root's systemd did not run the check and power off in 300 s"
}
boot=$((SECONDS - boot))
val() { sed -n "s/^$1=//p" "$root/root/unit-check.out"; }
report() {
	cat "$root/root/unit-check.out" "$root/root/unit-journal.txt" "$root/root/unit-journal-small.txt" >&2 2>/dev/null || true
	die "$@"
}
[ "$(val done)" = yes ] || { cat "$root/root/unit-check.log" >&2; report "unit-check.sh did not finish"; }
[ "$(val start)" = 0 ] || report "systemctl start nomarr failed"
[ "$(val tagged)" = yes ] || report "nomarr.service did not tag $svclib within 180 s"
[ "$(val user)" = nomarr ] || report "the service runs as $(val user), not nomarr"
[ "$(val nonewprivs)" = 1 ] || report "NoNewPrivileges is not in effect"
[[ "$(val root_mount)" == ro,* ]] || report "/ is not read-only to the service (ProtectSystem=strict): $(val root_mount)"
[[ "$(val home_mount)" == ro,* ]] || report "/home is not read-only to the service (ProtectHome=read-only): $(val home_mount)"
[[ "$(val library_mount)" == rw,* ]] || report "the library is not read-write to the service (ReadWritePaths=): $(val library_mount)"
[[ "$(val state_mount)" == rw,* ]] || report "/var/lib/nomarr is not read-write to the service: $(val state_mount)"
[ "$(val private_tmp)" = yes ] || report "the service sees the root's /tmp (PrivateTmp=)"
[ "$(val memory_max)" = 1073741824 ] || report "MemoryMax is $(val memory_max), want 1G"
[ "$(val memory_limit)" = 1073741824 ] || report "the service's cgroup memory limit is $(val memory_limit), want 1G"
[ "$(val procs)" -ge 3 ] || report "$(val procs) processes in the service's cgroup, want the main process and its 2 workers"
[ "$(val store)" = /var/lib/nomarr/nomarr.db ] || report "no store in /var/lib/nomarr (STATE_DIRECTORY)"
grace_ms=$(($(inroot nomarr help serve | awk '$1 == "--stop-grace" { sub(/s$/, "", $2); print $2 }') * 1000))
for p in busy_ ""; do
	[ "$(val ${p}stop)" = 0 ] || report "systemctl stop nomarr failed (${p:-idle})"
	# ExecMainCode is 1 (exited) or, when systemd saw the cgroup empty
	# before it reaped the process, 0 (unknown); 2 or 3 (killed, dumped)
	# with status 15 would be a death by SIGTERM, which Result=success
	# alone allows.
	[[ "$(val ${p}result)/$(val ${p}exit_code)/$(val ${p}exit_status)" =~ ^success/[01]/0$ ]] ||
		report "the ${p:-idle} stop ended $(val ${p}result), code $(val ${p}exit_code), status $(val ${p}exit_status); want success, exited, 0"
	[ "$(val ${p}stop_ms)" -le "$grace_ms" ] || report "the ${p:-idle} stop took $(val ${p}stop_ms) ms, over stop_grace ($grace_ms ms)"
done
[ "$(val busy_start)" = 0 ] || report "systemctl start nomarr failed"
for line in 'msg=serving ' 'msg="scanned library"' 'msg=stopped' 'nomarr.service: Deactivated successfully'; do
	grep -q "$line" "$root/root/unit-journal.txt" || report "the journal lacks '$line'"
done
[ "$(val small_state)" = failed/failed ] || report "under MemoryMax=300M the unit is $(val small_state), want failed"
[ "$(val small_result)/$(val small_exit_status)/$(val small_restarts)" = exit-code/2/0 ] ||
	report "under MemoryMax=300M: $(val small_result), status $(val small_exit_status), $(val small_restarts) restarts; want exit-code, 2, 0"
grep -q "too many for this host's memory" "$root/root/unit-journal-small.txt" ||
	report "under MemoryMax=300M the journal does not say why nomarr refused"
log "systemd booted, ran nomarr.service and powered off in $boot s: stopped right after the scan in $(val busy_stop_ms) ms (exit 0, $(val busy_tagged_after) of ${#files[@]} files tagged); started again, tagged the rest in $(val tag_ms) ms, stopped in $(val stop_ms) ms (exit 0)"
log "hardening in effect: user nomarr, NoNewPrivs, / $(val root_mount | cut -d, -f1), /home $(val home_mount | cut -d, -f1), library $(val library_mount | cut -d, -f1), private /tmp, memory limit $(val memory_limit)"
grep -E 'msg=serving |msg=stopped|Stopp|Deactivated' "$root/root/unit-journal.txt" | cut -c1-150 | sed 's/^/test-package: journal: /' >&2
log "under MemoryMax=300M: exit 2, no restart: $(grep -o "workers [0-9]* is too many for this host's memory[^\"]*" "$root/root/unit-journal-small.txt" | head -n 1)"
rm -rf "$root/root/unit-check.sh" "$root/root/unit-check".* "$root/root/unit-journal"*.txt \
	"$root/etc/systemd/system/unit-check.service" "$root/etc/systemd/system/multi-user.target.wants/unit-check.service"

# service_run: a nomarr command as the unit's user with its environment
# and the STATE_DIRECTORY systemd gives it.
mapfile -t unit_env < <(sed -n 's/^Environment=//p' "$root/lib/systemd/system/nomarr.service")
service_run() {
	chroot --userspec=nomarr:nomarr "$root" /usr/bin/env -i PATH=/usr/bin:/bin "${unit_env[@]}" \
		STATE_DIRECTORY=/var/lib/nomarr nomarr "$@"
}

phase "upgrade over the same version"
cp "$deb" "$root/tmp/nomarr.deb" # the boot emptied /tmp
db_before=$(stat -c '%i %s' "$root/var/lib/nomarr/nomarr.db")
inroot apt-get install -y --reinstall /tmp/nomarr.deb </dev/null >"$work/upgrade.log" 2>&1 ||
	{ cat "$work/upgrade.log" >&2; die "reinstalling over $version failed"; }
grep -qx "library_root: $svclib" "$root/etc/nomarr/config.yaml" || die "the upgrade lost the config edit"
[ ! -e "$root/etc/nomarr/config.yaml.dpkg-new" ] || die "the upgrade left config.yaml.dpkg-new"
[ "$(stat -c '%i %s' "$root/var/lib/nomarr/nomarr.db")" = "$db_before" ] || die "the upgrade changed the store"
service_run tag "$svclib" >"$work/retag.log" 2>&1 || { cat "$work/retag.log" >&2; die "tag after the upgrade failed"; }
grep -q "nothing to tag" "$work/retag.log" || { cat "$work/retag.log" >&2; die "after the upgrade the store lost what it tagged"; }

phase "apt remove"
inroot apt-get remove -y nomarr </dev/null >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; die "apt-get remove failed"; }
[ ! -e "$root/usr/bin/nomarr" ] || die "remove left /usr/bin/nomarr"
[ -f "$root/var/lib/nomarr/nomarr.db" ] || die "remove deleted the store"
grep -qx "library_root: $svclib" "$root/etc/nomarr/config.yaml" || die "remove lost the config"
grep -q "kept the store in /var/lib/nomarr" "$work/remove.log" || die "remove did not say it kept the store"
[ "$(inroot dpkg-query -W -f='${Status}' nomarr)" = "deinstall ok config-files" ] || die "not in config-files state after remove"

phase "apt purge"
inroot apt-get purge -y nomarr </dev/null >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; die "apt-get purge failed"; }
grep 'nomarr: purge:' "$work/purge.log" >&2 || true
grep -q "removing /var/lib/nomarr" "$work/purge.log" || die "purge did not say it removes /var/lib/nomarr"
for p in /var/lib/nomarr /etc/nomarr /usr/lib/nomarr /usr/share/nomarr /usr/share/doc/nomarr; do
	[ ! -e "$root$p" ] || die "purge left $p"
done
# The bare-environment tag above kept root's own store: a user's store is
# not the package's, and purge leaves it, as it leaves the drop-in.
[ -f "$root/root/.local/share/nomarr/nomarr.db" ] || die "purge removed the store of a user's own nomarr tag"
grep -q "kept /etc/systemd/system/nomarr.service.d" "$work/purge.log" || die "purge did not say it keeps the drop-ins"
left=$(cd "$root" && find . -xdev -name '*nomarr*' -not -path './srv/*' -not -path './tmp/nomarr.deb' \
	-not -path './root/.local/share/nomarr*' -not -path './etc/systemd/system/nomarr.service.d*' \
	-not -path './var/cache/apt/*' -not -path './proc/*' | sort)
[ -z "$left" ] || die "purge left: $left"
inroot getent passwd nomarr >/dev/null || die "purge removed the nomarr user (files may be owned by it)"
tagged "$svclib" || die "purge touched the library's tags"

log "ok: nomarr $version installs, tags, serves, upgrades, removes and purges in a $SUITE root"

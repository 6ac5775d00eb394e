#!/usr/bin/env bash
# test-package.sh [DEB] — install the Debian package into a throwaway Debian
# 12 root and check it (make test-package; needs root). Never installs
# into this machine.
#
# The root: debootstrap --variant=minbase bookworm from this machine's
# Debian mirror, with the package's dependencies downloaded (not
# installed) into its apt cache and systemd installed (systemd-analyze); kept in $PKGTEST_CACHE (default
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
#   service   `nomarr serve` with the unit's ExecStart, Environment, User
#             and WorkingDirectory (no systemd in a chroot), the config
#             edited to set library_root: it tags the library, and SIGTERM
#             stops it with exit 0 within the unit's TimeoutStopSec
#   upgrade   the same .deb again: the config edit and the store stay,
#             and the store's files stay tagged
#   remove    the binary goes; the store and the config stay
#   purge     says it removes /var/lib/nomarr; nothing named nomarr is
#             left on the root's file system but the library, and the
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
serve=
cleanup() {
	local i
	# A serve left running by a failed check holds the mounts: kill its
	# whole group (the workers, their ffmpeg).
	if [ -n "$serve" ]; then kill -KILL -- "-$serve" 2>/dev/null || true; fi
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
out=$(inroot systemd-analyze verify /lib/systemd/system/nomarr.service 2>&1) || die "systemd-analyze verify: $out"
[ -z "$out" ] || die "systemd-analyze verify: $out"
log "systemd-analyze verify nomarr.service: clean"

phase "nomarr tag from / with a bare environment"
demo=$work/demo
scripts/testaudio.sh "$demo" >/dev/null 2>&1 || die "scripts/testaudio.sh failed (sox, espeak-ng, ffmpeg: scripts/deps.sh --test)"
files=(speech.flac chord.mp3 mix.ogg noise.opus mix.m4a)
for dir in music service; do
	mkdir -p "$root/srv/$dir"
	for f in "${files[@]}"; do cp "$demo/good/$f" "$root/srv/$dir/"; done
done
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

phase "the service: nomarr serve as the unit runs it"
unit=$root/lib/systemd/system/nomarr.service
unitval() { sed -n "s/^$1=//p" "$unit"; }
exec_start=$(unitval ExecStart)
user=$(unitval User)
cwd=$(unitval WorkingDirectory)
stop_timeout=$(unitval TimeoutStopSec | sed 's/s$//')
mapfile -t unit_env < <(unitval Environment)
port=$((20000 + RANDOM % 20000))
printf 'library_root: /srv/service\nhttp_addr: 127.0.0.1:%d\nrescan_interval: 0\n' "$port" >>"$root/etc/nomarr/config.yaml"
chown -R --reference="$root/var/lib/nomarr" "$root/srv/service"
# setsid: a group of its own, for the cleanup; the test's SIGTERM goes to
# the main process only, as KillMode=mixed sends it.
setsid chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin "${unit_env[@]}" \
	sh -c 'cd "$1" && shift && exec "$@"' sh "$cwd" $exec_start >"$work/serve.log" 2>&1 &
serve=$!
for _ in $(seq 1 180); do
	tagged /srv/service && break
	kill -0 "$serve" 2>/dev/null || { cat "$work/serve.log" >&2; die "nomarr serve exited early"; }
	sleep 1
done
tagged /srv/service || { cat "$work/serve.log" >&2; die "nomarr serve did not tag /srv/service in 180 s"; }
log "serve tagged the library in $((SECONDS - phase_start)) s"
stop=$SECONDS
kill -TERM "$serve"
rc=0
wait "$serve" || rc=$?
serve=
[ "$rc" = 0 ] || { cat "$work/serve.log" >&2; die "nomarr serve exited $rc after SIGTERM"; }
[ $((SECONDS - stop)) -le "$stop_timeout" ] || die "serve took $((SECONDS - stop)) s to stop, over TimeoutStopSec $stop_timeout s"
log "serve stopped on SIGTERM with exit 0 in $((SECONDS - stop)) s (TimeoutStopSec ${stop_timeout}s)"
[ -f "$root/var/lib/nomarr/nomarr.db" ] || die "no store in /var/lib/nomarr"

# service_run: a nomarr command as the unit's user with its environment.
service_run() {
	chroot --userspec="$user:$user" "$root" /usr/bin/env -i PATH=/usr/bin:/bin "${unit_env[@]}" nomarr "$@"
}

phase "upgrade over the same version"
db_before=$(stat -c '%i %s' "$root/var/lib/nomarr/nomarr.db")
inroot apt-get install -y --reinstall /tmp/nomarr.deb </dev/null >"$work/upgrade.log" 2>&1 ||
	{ cat "$work/upgrade.log" >&2; die "reinstalling over $version failed"; }
grep -qx "library_root: /srv/service" "$root/etc/nomarr/config.yaml" || die "the upgrade lost the config edit"
[ ! -e "$root/etc/nomarr/config.yaml.dpkg-new" ] || die "the upgrade left config.yaml.dpkg-new"
[ "$(stat -c '%i %s' "$root/var/lib/nomarr/nomarr.db")" = "$db_before" ] || die "the upgrade changed the store"
service_run tag /srv/service >"$work/retag.log" 2>&1 || { cat "$work/retag.log" >&2; die "tag after the upgrade failed"; }
grep -q "nothing to tag" "$work/retag.log" || { cat "$work/retag.log" >&2; die "after the upgrade the store lost what it tagged"; }

phase "apt remove"
inroot apt-get remove -y nomarr </dev/null >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; die "apt-get remove failed"; }
[ ! -e "$root/usr/bin/nomarr" ] || die "remove left /usr/bin/nomarr"
[ -f "$root/var/lib/nomarr/nomarr.db" ] || die "remove deleted the store"
grep -qx "library_root: /srv/service" "$root/etc/nomarr/config.yaml" || die "remove lost the config"
grep -q "kept the store in /var/lib/nomarr" "$work/remove.log" || die "remove did not say it kept the store"
[ "$(inroot dpkg-query -W -f='${Status}' nomarr)" = "deinstall ok config-files" ] || die "not in config-files state after remove"

phase "apt purge"
inroot apt-get purge -y nomarr </dev/null >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; die "apt-get purge failed"; }
grep 'nomarr: purge:' "$work/purge.log" >&2 || true
grep -q "removing /var/lib/nomarr" "$work/purge.log" || die "purge did not say it removes /var/lib/nomarr"
for p in /var/lib/nomarr /etc/nomarr /usr/lib/nomarr /usr/share/nomarr /usr/share/doc/nomarr; do
	[ ! -e "$root$p" ] || die "purge left $p"
done
# The bare-environment tag above kept its own store in its data_dir: with
# no HOME, ./.local/share/nomarr from /. A user's store is not the
# package's: purge leaves it.
[ -f "$root/.local/share/nomarr/nomarr.db" ] || die "purge removed the store of a user's own nomarr tag"
left=$(cd "$root" && find . -xdev -name '*nomarr*' -not -path './srv/*' -not -path './tmp/nomarr.deb' \
	-not -path './.local/share/nomarr*' -not -path './var/cache/apt/*' -not -path './proc/*' | sort)
[ -z "$left" ] || die "purge left: $left"
inroot getent passwd nomarr >/dev/null || die "purge removed the nomarr user (files may be owned by it)"
tagged /srv/service || die "purge touched the library's tags"

log "ok: nomarr $version installs, tags, serves, upgrades, removes and purges in a $SUITE root"

#!/usr/bin/env bash
# build-deb.sh [OUTDIR] — build the Debian package dist/nomarr_<version>_amd64.deb
# (make deb) with dpkg-deb, from this checkout:
#
#   /usr/bin/nomarr                          go build with cgo (TagLib)
#   /usr/lib/nomarr/libonnxruntime.so.1      scripts/fetch-ort.sh's library
#   /usr/share/nomarr/models/musicnn/        $MODELS_DIR (../shared/models/musicnn)
#                                            and LICENSE, from its README
#   /etc/nomarr/config.yaml                  packaging/configyaml (a conffile)
#   /lib/systemd/system/nomarr.service       packaging/nomarr.service
#   /usr/share/man/man1/nomarr.1.gz          packaging/nomarr.1 (TestManPage makes it)
#   /usr/share/doc/nomarr/                   README.Debian, copyright, changelog.gz
#   /usr/share/lintian/overrides/nomarr      packaging/debian/lintian-overrides
#   DEBIAN/                                  packaging/debian: control, maintainer scripts
#
# Depends is what dpkg-shlibdeps reads off the binary and the runtime
# library (libc6, libstdc++6, libgcc-s1, TagLib's runtime libtag1v5-vanilla),
# plus ffmpeg. The version is $VERSION, else 0.0~git<commit time>.<commit>
# (+dirty for a tree with changes). Then lintian, when installed
# (LINTIAN=0 skips it), must find no error. Prints the package's path last,
# on stdout; progress on stderr.
#
# Needs: Go with cgo (a C compiler, libtag1-dev), dpkg-deb, dpkg-shlibdeps
# (dpkg-dev), gzip; lintian for the check.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
outdir=${1:-dist}
MODELS_DIR=${MODELS_DIR:-../shared/models/musicnn}
MAINTAINER=${MAINTAINER:-Nomarr <nomarr@users.noreply.github.com>}
GO=${GO:-go}

log() { echo "build-deb: $*" >&2; }
die() {
	log "ERROR: $*"
	exit 1
}

[ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ] || die "builds amd64 packages only, on an amd64 Debian host"
for tool in dpkg-deb gzip "$GO"; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done
[ "$($GO env CGO_ENABLED)" = 1 ] || die "cgo is off (no C compiler?): the package's binary needs TagLib and ONNX Runtime (make deps)"
for f in "$MODELS_DIR"/msd-musicnn-1.onnx "$MODELS_DIR"/../README.md; do
	[ -f "$f" ] || die "$f not found: put the shared folder beside the checkout or set MODELS_DIR"
done

if [ -z "${VERSION:-}" ]; then
	commit=$(git rev-parse --short=12 HEAD)
	VERSION=0.0~git$(TZ=UTC git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).$commit
	[ -z "$(git status --porcelain --untracked-files=no)" ] || VERSION+=+dirty
fi
[[ $VERSION =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "version $VERSION is not a Debian version"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}

ort=$(scripts/fetch-ort.sh)

stage=$(mktemp -d "${TMPDIR:-/tmp}/nomarr-deb.XXXXXX")
trap 'rm -rf "$stage"' EXIT
pkg=$stage/nomarr
install -d "$pkg"/DEBIAN "$pkg"/usr/bin "$pkg"/usr/lib/nomarr "$pkg"/usr/share/nomarr/models/musicnn \
	"$pkg"/etc/nomarr "$pkg"/lib/systemd/system "$pkg"/usr/share/doc/nomarr

log "building nomarr $VERSION"
# The build flags are the tests': Go's cache then has every package built
# already (-trimpath or -buildmode=pie would rebuild them all, minutes on
# two cores); lintian warns of the missing PIE, no error.
CGO_ENABLED=1 $GO build -ldflags "-s -w -X main.version=$VERSION" -o "$pkg"/usr/bin/nomarr ./cmd/nomarr
install -m 0644 "$ort" "$pkg"/usr/lib/nomarr/libonnxruntime.so.1
install -m 0644 "$MODELS_DIR"/*.onnx "$pkg"/usr/share/nomarr/models/musicnn/
# The models' README ends with their license: LICENSE is that section.
sed -n '/^## License/,$p' "$MODELS_DIR"/../README.md >"$pkg"/usr/share/nomarr/models/musicnn/LICENSE
[ -s "$pkg"/usr/share/nomarr/models/musicnn/LICENSE ] || die "no '## License' section in $MODELS_DIR/../README.md"
$GO run ./packaging/configyaml >"$pkg"/etc/nomarr/config.yaml
install -m 0644 packaging/nomarr.service "$pkg"/lib/systemd/system/nomarr.service
install -d "$pkg"/usr/share/man/man1
gzip -9n <packaging/nomarr.1 >"$pkg"/usr/share/man/man1/nomarr.1.gz
install -m 0644 packaging/debian/README.Debian packaging/debian/copyright "$pkg"/usr/share/doc/nomarr/
install -D -m 0644 packaging/debian/lintian-overrides "$pkg"/usr/share/lintian/overrides/nomarr
{
	echo "nomarr ($VERSION) unstable; urgency=medium"
	echo
	echo "  * Build of commit $(git rev-parse HEAD)."
	echo
	echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$pkg"/usr/share/doc/nomarr/changelog.gz
chmod 0644 "$pkg"/etc/nomarr/config.yaml "$pkg"/usr/share/nomarr/models/musicnn/LICENSE \
	"$pkg"/usr/share/doc/nomarr/changelog.gz "$pkg"/usr/share/man/man1/nomarr.1.gz

# Depends: the shared libraries' packages, read off the ELF files (the
# workers dlopen the runtime library, so it counts too), and ffmpeg.
if command -v dpkg-shlibdeps >/dev/null 2>&1; then
	mkdir -p "$stage"/src/debian
	printf 'Source: nomarr\n\nPackage: nomarr\nArchitecture: amd64\n' >"$stage"/src/debian/control
	shlibs=$(cd "$stage"/src && dpkg-shlibdeps -O "$pkg"/usr/bin/nomarr "$pkg"/usr/lib/nomarr/libonnxruntime.so.1 2>/dev/null |
		sed -n 's/^shlibs:Depends=//p')
else
	log "dpkg-shlibdeps not found (dpkg-dev): using the dependencies measured on Debian 12"
	shlibs="libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 11), libtag1v5-vanilla (>= 1.11)"
fi
[ -n "$shlibs" ] || die "dpkg-shlibdeps found no dependencies"
depends="$shlibs, ffmpeg"
log "Depends: $depends"

install -m 0644 packaging/debian/conffiles "$pkg"/DEBIAN/conffiles
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$pkg"/DEBIAN/
size=$(du -k -s --exclude=DEBIAN "$pkg" | cut -f1)
sed -e "s|@VERSION@|$VERSION|" -e "s|@MAINTAINER@|$MAINTAINER|" -e "s|@INSTALLED_SIZE@|$size|" \
	-e "s|@DEPENDS@|$depends|" packaging/debian/control.in >"$pkg"/DEBIAN/control
(cd "$pkg" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$pkg"/DEBIAN/md5sums
chmod 0644 "$pkg"/DEBIAN/md5sums "$pkg"/DEBIAN/control
find "$pkg" -type d -exec chmod 0755 {} +

mkdir -p "$outdir"
deb=$outdir/nomarr_${VERSION}_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$deb" >&2
log "$deb: $(du -h "$deb" | cut -f1) ($size KiB installed)"

if [ "${LINTIAN:-1}" != 0 ]; then
	if command -v lintian >/dev/null 2>&1; then
		# Errors fail the build; warnings are printed.
		lintian --fail-on error "$deb" >&2 || die "lintian found errors in $deb"
	else
		log "lintian not installed: not checked (apt-get install lintian)"
	fi
fi
echo "$root/$deb"

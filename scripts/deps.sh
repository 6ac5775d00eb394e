#!/usr/bin/env bash
# Installs the Debian packages Nomarr needs (idempotent):
#   ffmpeg       audio decoding (adapters/audio: the ffmpeg decoder, and
#                the test library)
#   libavformat-dev, libavcodec-dev, libswresample-dev, libavutil-dev
#                audio decoding inside the worker through cgo (adapters/audio
#                libav.go; the nolibav build tag leaves it out)
#   libtag1-dev  tag writing (TagLib)
#   pkg-config   locating TagLib for cgo
#   sox          test-library generation (scripts/testaudio.sh)
#   espeak-ng    speech for the test library
#   gcc, libc6-dev  a C compiler, when none is on PATH (no cc or gcc): without
#                one Go builds without cgo, and such a binary cannot run the
#                MusiCNN analyzer (ONNX Runtime) or write tags (TagLib)
# With --test (make test), also what only the tests use:
#   python3-mutagen  reads back the tags written (adapters/tagwrite), a
#                reader that shares no code with TagLib; required: those
#                tests fail without it
#   libjmac-java Monkey's Audio encoder (jmac) for the .ape files of the
#                tag-writing tests (ffmpeg decodes APE but cannot encode
#                it); required: those tests fail without it. It runs on
#                Java: default-jre-headless (about 45 MB to download, 190 MB
#                installed) is added when no java is on PATH
#   chromium     the browser the page tests drive (test/browser); required
#                in make test (NOMARR_TEST_REQUIRE_BROWSER)
#   qemu-user    runs the simulator's arm64 build (cross-machine
#                determinism); best effort: a test that needs it says so
#                and skips
# Packages already installed are skipped; `apt-get update` runs only when
# something is missing. Needs root, or sudo when not root.
set -euo pipefail

PACKAGES=(ffmpeg libavformat-dev libavcodec-dev libswresample-dev libavutil-dev libtag1-dev pkg-config sox espeak-ng)
# A C compiler is looked for on PATH, not by package: one installed by other
# means (clang as cc, a toolchain of its own) is taken as it is.
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then
	PACKAGES+=(gcc libc6-dev)
fi
OPTIONAL=()
case "${1:-}" in
--test)
	PACKAGES+=(python3-mutagen libjmac-java chromium)
	# Like the C compiler, any Java on PATH runs jmac.
	if ! command -v java >/dev/null 2>&1; then
		PACKAGES+=(default-jre-headless)
	fi
	OPTIONAL=(qemu-user)
	;;
"") ;;
*)
	echo "usage: deps.sh [--test]" >&2
	exit 2
	;;
esac

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: this script needs a Debian/Ubuntu system (dpkg, apt-get)." >&2
	echo "deps.sh: install these packages by other means: ${PACKAGES[*]}" >&2
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	if installed "$p"; then
		echo "deps.sh: $p already installed"
	else
		missing+=("$p")
	fi
done
optional=()
for p in "${OPTIONAL[@]}"; do
	if installed "$p"; then
		echo "deps.sh: $p already installed"
	else
		optional+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
	echo "deps.sh: all packages present"
	exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	elif [ ${#missing[@]} -eq 0 ]; then
		echo "deps.sh: warning: not root and no sudo: cannot install ${optional[*]}; the tests that need them will say so and skip" >&2
		exit 0
	else
		echo "deps.sh: missing packages: ${missing[*]}" >&2
		echo "deps.sh: not root and sudo is not available; run as root:" >&2
		echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
fi

echo "deps.sh: installing ${missing[*]} ${optional[*]}"
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update; then
	echo "deps.sh: apt-get update failed" >&2
	[ ${#missing[@]} -eq 0 ] || exit 1
fi
if [ ${#missing[@]} -ne 0 ] && ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${missing[@]}"; then
	echo "deps.sh: apt-get install failed for: ${missing[*]}" >&2
	exit 1
fi
if [ ${#optional[@]} -ne 0 ] && ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${optional[@]}"; then
	echo "deps.sh: warning: could not install ${optional[*]}; the tests that need them will say so and skip" >&2
fi

still=()
for p in "${missing[@]}"; do
	installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	echo "deps.sh: still not installed: ${still[*]}" >&2
	exit 1
fi
echo "deps.sh: done"

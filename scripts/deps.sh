#!/usr/bin/env bash
# Installs the Debian packages Nomarr needs (idempotent):
#   ffmpeg       audio decoding (adapters/audio)
#   libtag1-dev  tag writing (TagLib)
#   pkg-config   locating TagLib for cgo
#   sox          test-library generation (scripts/testaudio.sh)
#   espeak-ng    speech for the test library
# With --test (make test), also what only the tests use:
#   qemu-user    runs the simulator's arm64 build (cross-machine determinism)
# Packages already installed are skipped; `apt-get update` runs only when
# something is missing. Needs root, or sudo when not root.
set -euo pipefail

PACKAGES=(ffmpeg libtag1-dev pkg-config sox espeak-ng)
case "${1:-}" in
--test) PACKAGES+=(qemu-user) ;;
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

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps.sh: all packages present"
	exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	else
		echo "deps.sh: missing packages: ${missing[*]}" >&2
		echo "deps.sh: not root and sudo is not available; run as root:" >&2
		echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
fi

echo "deps.sh: installing ${missing[*]}"
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update; then
	echo "deps.sh: apt-get update failed" >&2
	exit 1
fi
if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends "${missing[@]}"; then
	echo "deps.sh: apt-get install failed for: ${missing[*]}" >&2
	exit 1
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

#!/usr/bin/env bash
# fetch-ort.sh [CACHE_DIR] — fetch the ONNX Runtime shared library that
# adapters/inference loads (via github.com/yalue/onnxruntime_go), idempotently.
#
# Source: the npm package onnxruntime-node@1.30.0, which ships the official
# Linux build of libonnxruntime.so.1 (CPU execution provider built in; the
# CUDA provider libraries are not in the package — onnxruntime-node's own
# install script downloads them from NuGet — so on a machine without them the
# adapter falls back to the CPU with a warning).
#
# CACHE_DIR defaults to .cache/onnxruntime (relative to the current
# directory). Prints the absolute path of libonnxruntime.so.1 on stdout; all
# progress goes to stderr. A second run with an intact, verified library does
# nothing but print the path.
#
# Needs: npm (or curl, as a fallback), tar, sha256sum.
# Point Nomarr at the result with NOMARR_ONNXRUNTIME_LIB or the
# `onnxruntime_lib` config key.
set -euo pipefail

ORT_NPM_PACKAGE=onnxruntime-node
ORT_NPM_VERSION=1.30.0
# sha1 of the npm tarball as published by the registry (dist.shasum).
ORT_TARBALL_SHA1=8d4c4a75f31088ec846f08cccb62f3272a7bf44a
# sha256 of the extracted libraries, recorded from a verified download.
ORT_SHA256_x64=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
ORT_SHA256_arm64=1f549d46250b005580b597f4164984aaf75b3bcb9f3aeb07c7f8a8fe60b23c76

cache_dir=${1:-.cache/onnxruntime}
lib_name=libonnxruntime.so.1

log() { echo "fetch-ort: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ "$(uname -s)" = Linux ] || die "only Linux is supported (got $(uname -s))"
case "$(uname -m)" in
x86_64 | amd64) arch=x64 want_sha=$ORT_SHA256_x64 elf_machine=3e00 ;;
aarch64 | arm64) arch=arm64 want_sha=$ORT_SHA256_arm64 elf_machine=b700 ;;
*) die "unsupported architecture $(uname -m) (onnxruntime-node ships x64 and arm64)" ;;
esac

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# is_ok FILE: FILE is the expected library (ELF, 64-bit, right machine, checksum).
is_ok() {
	local f=$1
	[ -f "$f" ] || return 1
	# e_ident: 7f 45 4c 46 ("\x7fELF"), class 02 (64-bit); e_machine at 18.
	[ "$(head -c 5 "$f" | od -An -tx1 | tr -d ' \n')" = 7f454c4602 ] || return 1
	[ "$(od -An -tx1 -j18 -N2 "$f" | tr -d ' \n')" = "$elf_machine" ] || return 1
	[ "$(sha256 "$f")" = "$want_sha" ]
}

mkdir -p "$cache_dir"
cache_dir=$(cd "$cache_dir" && pwd)
target=$cache_dir/$lib_name

if is_ok "$target"; then
	echo "$target"
	exit 0
fi
[ -e "$target" ] && log "replacing $target (checksum mismatch)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-ort.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

tarball=$tmp/$ORT_NPM_PACKAGE-$ORT_NPM_VERSION.tgz
log "downloading $ORT_NPM_PACKAGE@$ORT_NPM_VERSION (~110 MB)"
if command -v npm >/dev/null 2>&1; then
	(cd "$tmp" && npm pack --silent "$ORT_NPM_PACKAGE@$ORT_NPM_VERSION" >/dev/null) ||
		die "npm pack $ORT_NPM_PACKAGE@$ORT_NPM_VERSION failed"
elif command -v curl >/dev/null 2>&1; then
	url=https://registry.npmjs.org/$ORT_NPM_PACKAGE/-/$ORT_NPM_PACKAGE-$ORT_NPM_VERSION.tgz
	curl -fsSL --retry 3 -o "$tarball" "$url" || die "download of $url failed"
else
	die "need npm or curl to download $ORT_NPM_PACKAGE@$ORT_NPM_VERSION"
fi
[ -f "$tarball" ] || die "npm pack did not produce $tarball"

got=$(sha1sum "$tarball" | cut -d' ' -f1)
[ "$got" = "$ORT_TARBALL_SHA1" ] || die "tarball sha1 $got, want $ORT_TARBALL_SHA1"

dir=package/bin/napi-v6/linux/$arch
tar -xzf "$tarball" -C "$tmp" "$dir" || die "cannot extract $dir from the tarball"
is_ok "$tmp/$dir/$lib_name" || die "$dir/$lib_name failed the ELF/sha256 check"

# install_file SRC DST: copy, then rename into place (concurrent runs never
# see a partial file).
install_file() {
	local part
	part=$(mktemp "$cache_dir/.$(basename "$2").XXXXXX")
	cp "$1" "$part"
	chmod 0644 "$part"
	mv -f "$part" "$2"
	log "installed $2"
}

# Install every shared library of the directory (today only
# libonnxruntime.so.1; libonnxruntime_providers_*.so if a release adds them),
# each by an atomic rename inside the cache directory, the main one last.
for f in "$tmp/$dir"/*.so "$tmp/$dir"/*.so.*; do
	[ -f "$f" ] || continue
	name=$(basename "$f")
	[ "$name" = "$lib_name" ] && continue
	install_file "$f" "$cache_dir/$name"
done
install_file "$tmp/$dir/$lib_name" "$target"
echo "$target"

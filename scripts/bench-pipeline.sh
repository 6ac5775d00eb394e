#!/usr/bin/env bash
# Usage: scripts/bench-pipeline.sh [--streamed] [PIPELINE FLAGS...]
#
# Side-by-side benchmark of the tagging pipeline (docs/design.md §9 steps 1–3):
# Nomarr's (adapters/audio ffmpeg decode → adapters/features → adapters/inference,
# single-threaded: GOMAXPROCS=1, ONNX Runtime intra-op threads 1) against the
# reference (bench/pipeline/reference.js: the same ffmpeg decode, essentia.js
# features, onnxruntime-node inference, also single-threaded), on a
# generated test set: the 25 good files of scripts/testaudio.sh (5 sources ×
# mp3/flac/ogg/opus/m4a, 6 s each) plus one 60 s FLAC (the five FLAC sources
# concatenated twice with sox) and one 240 s MP3 (eight times, a track of
# typical length; files ≥ 60 s get their own real-time factors, as starting
# ffmpeg costs ≈ 70 ms a file, which dominates the 6 s ones). Prints a per-file table, per-stage totals, the
# real-time factors, the speed ratio, the largest prediction difference and
# our peak RSS; exits 1 when a prediction differs from the reference's by
# more than 1e-3 (see bench/pipeline/main.go).
#
# Prepares what is missing: the ONNX Runtime library (scripts/fetch-ort.sh,
# or NOMARR_ONNXRUNTIME_LIB) and bench/pipeline's node modules
# (npm ci --prefix bench/pipeline). Models: NOMARR_MODELS_DIR, default
# ../shared/models/musicnn. Needs go, node, npm, ffmpeg, sox, espeak-ng.
# Flags are passed to the benchmark program, e.g. -batch 16 or
# -ref-cpu-arena=false. Takes about two and a half minutes on 2 cores.
#
# --streamed measures the streamed pipeline of a worker instead
# (bench/pipeline -streamed, docs/benchmarks.md "Streamed pipeline"): the
# same 240 s track in four formats (MP3 320k, FLAC, Ogg Vorbis, AAC),
# STREAMED_ROUNDS interleaved rounds (default 3) with the reference in
# each, CPU time per stage and real-time factor per core, then one round
# over a 10-minute and a 2-hour MP3 (a 220 Hz tone and noise) for the
# peak RSS at length. About 15 minutes on 2 cores, most of it the
# reference.
set -euo pipefail

streamed=
if [ "${1:-}" = --streamed ]; then
	streamed=1
	shift
fi

cd "$(dirname "$0")/.."

log() { echo "bench-pipeline: $*" >&2; }
die() { log "ERROR: $*"; exit 2; }

for tool in go node npm ffmpeg sox espeak-ng; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (scripts/deps.sh installs the audio tools)"
done

models=${NOMARR_MODELS_DIR:-../shared/models/musicnn}
[ -f "$models/msd-musicnn-1.onnx" ] || die "no MusiCNN models in $models (set NOMARR_MODELS_DIR)"

if [ -n "${NOMARR_ONNXRUNTIME_LIB:-}" ]; then
	lib=$NOMARR_ONNXRUNTIME_LIB
else
	lib=$(scripts/fetch-ort.sh) # idempotent: verifies the cached library
fi

# The reference's node modules, unless already installed at the locked
# versions. ONNXRUNTIME_NODE_INSTALL=skip: onnxruntime-node's install script
# would otherwise try to download CUDA libraries; the CPU provider is built in.
if ! (cd bench/pipeline && node -e '
	const want = require("./package.json").dependencies;
	for (const [name, version] of Object.entries(want)) {
		if (require(name + "/package.json").version !== version) process.exit(1);
	}' >/dev/null 2>&1); then
	log "installing node modules (npm ci --prefix bench/pipeline)"
	ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix bench/pipeline --no-audit --no-fund --loglevel=error >&2
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-pipeline.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

log "generating test audio"
scripts/testaudio.sh "$tmp/audio" >/dev/null
good=$tmp/audio/good
sox -V1 "$good"/{speech,chord,noise,silence,mix}.flac "$good"/{speech,chord,noise,silence,mix}.flac "$tmp/audio/long60.flac"
dur=$(soxi -D "$tmp/audio/long60.flac")
[ "${dur%%.*}" = 60 ] || die "long60.flac is $dur s, want 60"
# A track of typical length: the five sources eight times over, 240 s, MP3.
sources=()
for _ in 1 2 3 4 5 6 7 8; do sources+=("$good"/{mix,speech,chord,noise,silence}.flac); done
sox -V1 "${sources[@]}" "$tmp/audio/track240.flac"
enc() { ffmpeg -nostdin -hide_banner -v error "$@"; }

log "building bench/pipeline"
go build -o "$tmp/pipeline" ./bench/pipeline

if [ -n "$streamed" ]; then
	a=$tmp/audio
	enc -i "$a/track240.flac" -c:a libmp3lame -b:a 320k "$a/track240.mp3"
	enc -i "$a/track240.flac" -c:a libvorbis -q:a 6 "$a/track240.ogg"
	enc -i "$a/track240.flac" -c:a aac -b:a 256k "$a/track240.m4a"
	log "generating a 10-minute and a 2-hour MP3"
	long() {
		enc -f lavfi -i "sine=f=220:d=$1:r=44100" -f lavfi -i "anoisesrc=d=$1:r=44100:a=0.05" \
			-filter_complex "[0][1]amix=2,aformat=channel_layouts=stereo" -c:a libmp3lame -b:a "$2" "$3"
	}
	long 600 192k "$a/long600.mp3"
	long 7200 128k "$a/long7200.mp3"
	log "running the streamed pipeline (ours and the reference, ${STREAMED_ROUNDS:-3} rounds)"
	"$tmp/pipeline" -lib "$lib" -models "$models" -streamed "${STREAMED_ROUNDS:-3}" -with-reference "$@" \
		"$a"/track240.{mp3,flac,ogg,m4a}
	log "peak RSS at length (ours, one round)"
	"$tmp/pipeline" -lib "$lib" -models "$models" -streamed 1 "$@" "$a/long600.mp3" "$a/long7200.mp3"
	exit 0
fi

enc -i "$tmp/audio/track240.flac" -c:a libmp3lame -b:a 192k "$tmp/audio/track240.mp3"
rm "$tmp/audio/track240.flac"

log "running (ours, then the reference)"
rc=0
GOMAXPROCS=1 "$tmp/pipeline" -lib "$lib" -models "$models" "$@" \
	"$good"/*.mp3 "$good"/*.flac "$good"/*.ogg "$good"/*.opus "$good"/*.m4a "$tmp/audio/long60.flac" "$tmp/audio/track240.mp3" || rc=$?
exit "$rc"

#!/usr/bin/env bash
# Usage: scripts/testaudio.sh OUTDIR
#
# Generates a small, deterministic test library (needs sox, espeak-ng and
# ffmpeg; scripts/deps.sh installs them):
#
#   OUTDIR/good/{speech,chord,noise,silence,mix}.{mp3,flac,ogg,opus,m4a}
#       speech   espeak-ng sentence, resampled to 44.1 kHz stereo, padded to 6 s
#       chord    sine 220 + 277 + 330 Hz, 6 s, -3 dBFS peak
#       noise    white noise, 6 s, -3 dBFS peak (repeatable seed: sox -R)
#       silence  digital silence, 6 s
#       mix      speech + chord
#     encoded as mp3 (libmp3lame), flac, ogg (libvorbis), opus (libopus),
#     m4a (aac); every source is exactly 6.000 s of 44.1 kHz stereo audio.
#   OUTDIR/bad/
#       notaudio.mp3   a text file renamed .mp3
#       truncated.mp3  the first 2 KB of good/speech.mp3
#       empty.flac     a 0-byte file
#       short.flac     0.5 s of sine (too short for one MusiCNN patch)
#       noaudio.mkv    one video frame, no audio stream
#
# Outputs are bit-identical between runs on the same tool versions (sox -R,
# ffmpeg -bitexact, no metadata). Takes a few seconds.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
out=$1

for tool in sox espeak-ng ffmpeg; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "testaudio.sh: $tool not found; run scripts/deps.sh" >&2
		exit 1
	fi
done

mkdir -p "$out/good" "$out/bad"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT

RATE=44100
SOX=(sox -R -D -V1) # repeatable random numbers, no dither, errors only
FMT=(-r "$RATE" -b 16 -c 2)

# --- sources (wav) -----------------------------------------------------------
espeak-ng -v en -s 150 -w "$src/espeak.wav" \
	"The quick brown fox jumps over the lazy dog, while the music plays softly in the background tonight."
"${SOX[@]}" "$src/espeak.wav" "${FMT[@]}" "$src/speech.wav" pad 0 6 trim 0 6 gain -n -3
"${SOX[@]}" -r "$RATE" -c 3 -n "${FMT[@]}" "$src/chord.wav" \
	synth 6 sine 220 sine 277 sine 330 remix 1,2,3 1,2,3 gain -n -3
"${SOX[@]}" -r "$RATE" -c 2 -n "${FMT[@]}" "$src/noise.wav" synth 6 whitenoise gain -n -3
"${SOX[@]}" -r "$RATE" -c 2 -n "${FMT[@]}" "$src/silence.wav" trim 0 6
"${SOX[@]}" -m "$src/speech.wav" "$src/chord.wav" "${FMT[@]}" "$src/mix.wav" gain -n -3
"${SOX[@]}" -r "$RATE" -c 2 -n "${FMT[@]}" "$src/short.wav" synth 0.5 sine 440 gain -n -3

# --- encodes -----------------------------------------------------------------
# -bitexact everywhere: no encoder version strings, fixed Ogg serial numbers.
FF=(ffmpeg -nostdin -hide_banner -loglevel error -y -fflags +bitexact)
FFOUT=(-map_metadata -1 -flags:a +bitexact -bitexact)

encode() { # encode SRC.wav DEST
	local in=$1 dest=$2 codec
	case "$dest" in
	*.mp3) codec=(-c:a libmp3lame -b:a 128k) ;;
	*.flac) codec=(-c:a flac) ;;
	*.ogg) codec=(-c:a libvorbis -q:a 4) ;;
	*.opus) codec=(-c:a libopus -b:a 96k -ar 48000) ;;
	*.m4a) codec=(-c:a aac -b:a 128k) ;;
	*) echo "testaudio.sh: no codec for $dest" >&2; return 1 ;;
	esac
	"${FF[@]}" -i "$in" "${codec[@]}" "${FFOUT[@]}" "$dest"
}

pids=()
for s in speech chord noise silence mix; do
	for ext in mp3 flac ogg opus m4a; do
		encode "$src/$s.wav" "$out/good/$s.$ext" &
		pids+=($!)
	done
done
encode "$src/short.wav" "$out/bad/short.flac" &
pids+=($!)
"${FF[@]}" -f lavfi -i color=c=black:s=16x16:r=1 -frames:v 1 -c:v ffv1 \
	"${FFOUT[@]}" "$out/bad/noaudio.mkv" &
pids+=($!)
fail=0
for p in "${pids[@]}"; do
	wait "$p" || fail=1
done
if [ "$fail" -ne 0 ]; then
	echo "testaudio.sh: an encode failed" >&2
	exit 1
fi

# --- other bad files ---------------------------------------------------------
printf 'This is a text file, not audio.\nNomarr must reject it as permanent.\n' >"$out/bad/notaudio.mp3"
head -c 2048 "$out/good/speech.mp3" >"$out/bad/truncated.mp3"
: >"$out/bad/empty.flac"

echo "testaudio.sh: wrote $(find "$out/good" "$out/bad" -type f | wc -l) files to $out"

#!/usr/bin/env bash
# Usage: scripts/testformats.sh OUTDIR
#
# Generates a small library in every format Nomarr writes tags into, each
# file already tagged the way a user's library is (needs ffmpeg, jmac and
# python3-mutagen; scripts/deps.sh --test installs them):
#
#   OUTDIR/chord.{mp3,flac,ogg,opus,oga,m4a,wav,aiff,wv,ape,wma}
#       6 s of a chord (220 + 277 + 330 Hz, 44.1 kHz stereo; Opus 48 kHz)
#       MP3, FLAC, Ogg Vorbis, Opus, Ogg FLAC, MP4 (AAC), WAV, AIFF,
#       WavPack, Monkey's Audio (jmac: ffmpeg cannot encode it), WMA
#   tags  title "Chord <ext>", artist "The Artist", album "Eleven
#         Formats", GENRE "Jazz", MOOD "Mélancolie", each in the format's
#         own field (mutagen writes them: ID3v2 TCON/TMOO, MP4 ©gen and
#         ----:com.apple.iTunes:MOOD, Vorbis comments and APEv2 items
#         GENRE/MOOD, ASF WM/Genre/WM/Mood; a WAV's in an ID3v2 chunk)
#   cover a 64×64 JPEG front cover, where the format holds one (all but
#         WAV and WMA)
#
# The library of the Navidrome check (docs/media-servers.md) and of a
# manual `nomarr tag` over every format.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 OUTDIR" >&2
	exit 2
fi
out=$1
# Debian's Python has python3-mutagen; another python3 first on PATH may not.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
for tool in ffmpeg jmac "$PY"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "testformats.sh: $tool not found; run scripts/deps.sh --test" >&2
		exit 1
	fi
done
if ! "$PY" -c 'import mutagen' 2>/dev/null; then
	echo "testformats.sh: python3-mutagen not found; run scripts/deps.sh --test" >&2
	exit 1
fi

mkdir -p "$out"
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT

FF=(ffmpeg -nostdin -hide_banner -loglevel error -y)
"${FF[@]}" -f lavfi -i "sine=f=220:d=6" -f lavfi -i "sine=f=277:d=6" -f lavfi -i "sine=f=330:d=6" \
	-filter_complex "amix=inputs=3,pan=stereo|c0=c0|c1=c0" -ar 44100 -c:a pcm_s16le "$src/chord.wav"
"${FF[@]}" -f lavfi -i testsrc=s=64x64 -frames:v 1 "$src/cover.jpg"

pic=(-i "$src/cover.jpg" -map 0:a -map 1:v -c:v copy -disposition:v attached_pic)
for ext in mp3 flac ogg opus oga m4a wav aiff wv wma; do
	case $ext in
	mp3) args=("${pic[@]}" -c:a libmp3lame -b:a 128k) ;;
	flac) args=("${pic[@]}" -c:a flac) ;;
	ogg) args=(-c:a libvorbis) ;;
	opus) args=(-c:a libopus -ar 48000) ;;
	oga) args=(-c:a flac -f ogg) ;;
	m4a) args=("${pic[@]}" -c:a aac -b:a 128k) ;;
	wav) args=(-c:a pcm_s16le) ;;
	aiff) args=("${pic[@]}" -c:a pcm_s16be) ;;
	wv) args=(-c:a wavpack) ;;
	wma) args=(-c:a wmav2 -b:a 128k) ;;
	esac
	"${FF[@]}" -i "$src/chord.wav" "${args[@]}" -map_metadata -1 "$out/chord.$ext"
done
jmac c2 "$src/chord.wav" "$out/chord.ape" >/dev/null

# The user's tags, in each format's own fields, and the covers ffmpeg
# cannot write (Ogg, WavPack, Monkey's Audio).
"$PY" - "$out" "$src/cover.jpg" <<'EOF'
import base64, os, sys
import mutagen
from mutagen.apev2 import APEv2, APEValue, BINARY
from mutagen.asf import ASF
from mutagen.flac import Picture
from mutagen.id3 import ID3, TALB, TCON, TIT2, TMOO, TPE1
from mutagen.mp4 import MP4, MP4FreeForm

out, cover = sys.argv[1], sys.argv[2]
jpeg = open(cover, "rb").read()
pic = Picture()
pic.type, pic.mime, pic.width, pic.height, pic.depth, pic.data = 3, "image/jpeg", 64, 64, 24, jpeg
album, genre, mood = "Eleven Formats", "Jazz", "Mélancolie"
for ext in ["mp3", "flac", "ogg", "opus", "oga", "m4a", "wav", "aiff", "wv", "ape", "wma"]:
    path = os.path.join(out, "chord." + ext)
    title = "Chord " + ext
    f = mutagen.File(path)
    if ext in ("mp3", "wav", "aiff"):
        if f.tags is None:
            f.add_tags()
        for frame in (TIT2(encoding=3, text=title), TPE1(encoding=3, text="The Artist"), TALB(encoding=3, text=album),
                      TCON(encoding=3, text=genre), TMOO(encoding=3, text=mood)):
            f.tags.add(frame)
        f.save(v2_version=4) if ext == "mp3" else f.save()
    elif ext == "m4a":
        f.tags["\xa9nam"], f.tags["\xa9ART"], f.tags["\xa9alb"], f.tags["\xa9gen"] = title, "The Artist", album, genre
        f.tags["----:com.apple.iTunes:MOOD"] = [MP4FreeForm(mood.encode())]
        f.save()
    elif ext in ("wv", "ape"):
        t = APEv2()
        t["Title"], t["Artist"], t["Album"], t["Genre"], t["Mood"] = title, "The Artist", album, genre, mood
        t["Cover Art (Front)"] = APEValue(b"cover.jpg\x00" + jpeg, BINARY)
        t.save(path)
    elif ext == "wma":
        f.tags["Title"], f.tags["Author"], f.tags["WM/AlbumTitle"] = title, "The Artist", album
        f.tags["WM/Genre"], f.tags["WM/Mood"] = genre, mood
        f.save()
    else:  # Vorbis comments: FLAC, Ogg Vorbis, Opus, Ogg FLAC
        f.tags["TITLE"], f.tags["ARTIST"], f.tags["ALBUM"], f.tags["GENRE"], f.tags["MOOD"] = title, "The Artist", album, genre, mood
        if ext != "flac":
            f.tags["METADATA_BLOCK_PICTURE"] = base64.b64encode(pic.write()).decode()
        f.save()
EOF
echo "testformats.sh: wrote $(find "$out" -maxdepth 1 -name 'chord.*' | wc -l) files to $out"

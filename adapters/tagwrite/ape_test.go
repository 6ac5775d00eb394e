package tagwrite

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// jmacHint says where the Monkey's Audio encoder of the tests comes from.
const jmacHint = "jmac (Debian libjmac-java and a Java runtime; scripts/deps.sh --test installs them)"

// makeAPE encodes a 2 s tone as Monkey's Audio at out with jmac (ffmpeg has
// no APE encoder) and gives it an APEv2 tag with title, artist, album and
// the cover picture as "Cover Art (Front)", as Monkey's Audio's own tools
// tag a file. Without jmac the test fails: it is a test dependency, like
// mutagen.
func makeAPE(t *testing.T, dir, cover, out string) string {
	t.Helper()
	jmac, err := exec.LookPath("jmac")
	if err != nil {
		t.Fatalf("no Monkey's Audio encoder: %s: %v", jmacHint, err)
	}
	wav := filepath.Join(dir, "ape-source.wav")
	run(t, "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=2", "-c:a", "pcm_s16le",
		"-map_metadata", "-1", "-fflags", "+bitexact", wav)
	run(t, jmac, "c2", wav, out)
	if err := os.Remove(wav); err != nil {
		t.Fatal(err)
	}
	jpeg, err := os.ReadFile(cover)
	if err != nil {
		t.Fatal(err)
	}
	tag := apeTagOf([]apeItem{
		{key: "Title", value: []byte("Tïtle")},
		{key: "Artist", value: []byte("The Artist")},
		{key: "Album", value: []byte("An Album")},
		{key: "Cover Art (Front)", value: append([]byte("cover.jpg\x00"), jpeg...), binary: true},
	})
	fh, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(tag); err != nil {
		fh.Close()
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// apeAudioSum is the SHA-256 of a Monkey's Audio file's bytes in front of
// its tags at the end (an APEv2 tag, an ID3v1 tag after it): the audio
// that a tag write must leave as it was.
func apeAudioSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= 128 && string(b[len(b)-128:len(b)-125]) == "TAG" {
		b = b[:len(b)-128]
	}
	if len(b) >= 32 && string(b[len(b)-32:len(b)-24]) == "APETAGEX" {
		footer := b[len(b)-32:]
		size := int(binary.LittleEndian.Uint32(footer[12:])) // items and footer
		header := binary.LittleEndian.Uint32(footer[20:])&(1<<31) != 0
		if header {
			size += 32
		}
		if size > len(b) || header && !bytes.HasPrefix(b[len(b)-size:], []byte("APETAGEX")) {
			t.Fatalf("%s: no APEv2 tag of %d bytes at the end", path, size)
		}
		b = b[:len(b)-size]
	}
	return fmt.Sprintf("audio bytes %x", sha256.Sum256(b))
}

package tagwrite

import (
	"strings"
	"testing"
)

// TestReadInfo: the artist, title and album ffmpeg wrote into a file of
// each format are read back, where TagLib lists them among the fields
// (a WMA's title and author are not; a WAV's RIFF INFO chunk is read),
// and they survive our tag write.
func TestReadInfo(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	full := Info{Artist: "The Artist", Title: "Tïtle", Album: "An Album"}
	for kind, want := range map[string]Info{
		"mp3": full, "mp3-id3v23": full, "flac": full, "m4a": full, "ogg": full, "opus": full, "aiff": full, "wv": full,
		"wma": {Album: "An Album"}, "wav": full,
	} {
		path := makeFile(t, dir, kind)
		got, err := ReadInfo(path)
		if err != nil || got != want {
			t.Errorf("%s: ReadInfo = %+v, %v; want %+v", kind, got, err, want)
			continue
		}
		if kind == "wma" {
			continue
		}
		if err := Write(path, map[string]string{"nom_version": "v1"}); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if got, err := ReadInfo(path); err != nil || got != want {
			t.Errorf("%s after a write: ReadInfo = %+v, %v; want %+v", kind, got, err, want)
		}
	}
	if _, err := ReadInfo(dir); err == nil {
		t.Error("ReadInfo of a directory: no error")
	}
}

func TestCutKeepsCharacters(t *testing.T) {
	s := strings.Repeat("é", 600) // 1200 bytes
	c := cut(s, MaxInfoText)
	if len(c) != MaxInfoText || !strings.HasPrefix(s, c) {
		t.Fatalf("cut to %d bytes", len(c))
	}
	if c := cut("aé", 2); c != "a" {
		t.Fatalf("cut(aé, 2) = %q", c)
	}
}

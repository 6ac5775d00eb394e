package tagwrite

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/tags"
)

// riffChunk is the bytes of the first top-level chunk of the WAV file's
// RIFF form with id (a LIST chunk: of type INFO), header included; nil
// when there is none.
func riffChunk(t *testing.T, path, id, listType string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for off := 12; off+8 <= len(b); {
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		end := min(off+8+size+size%2, len(b))
		if string(b[off:off+4]) == id && (listType == "" || bytes.HasPrefix(b[off+8:end], []byte(listType))) {
			return b[off:end]
		}
		off = end
	}
	return nil
}

// TestWAVTaggedOnlyInInfo: a WAV whose tags are only in its RIFF INFO
// chunk keeps them visible to readers that prefer ID3v2 (TagLib,
// Navidrome): the first write gives the new ID3v2 tag the INFO chunk's
// title, artist, album and genre, the INFO genre counts as the user's
// GENRE value (kept first, never recorded as Nomarr's), and the INFO
// chunk keeps its bytes.
func TestWAVTaggedOnlyInInfo(t *testing.T) {
	needTools(t)
	for _, c := range []struct {
		name, genre string
		nomGenre    []string
		wantGenre   []string
		written     string
	}{
		{"other genre", "Blues", []string{"Rock", "Pop"}, []string{"Blues", "Rock", "Pop"}, "Rock; Pop"},
		{"same genre", "Rock", []string{"Rock"}, []string{"Rock"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "info.wav")
			run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", "-c:a", "pcm_s16le",
				"-metadata", "title=Info Title", "-metadata", "artist=Info Artist", "-metadata", "album=Info Album",
				"-metadata", "genre="+c.genre, path)
			info := riffChunk(t, path, "LIST", "INFO")
			if info == nil || riffChunk(t, path, "ID3 ", "") != nil || riffChunk(t, path, "id3 ", "") != nil {
				t.Fatal("fixture: want an INFO chunk and no ID3v2 chunk")
			}
			decoded := md5Of(t, path, "-map", "0:a")
			if held, err := ReadStandard(path); err != nil || !slices.Equal(held[tags.FieldGenre], []string{c.genre}) {
				t.Fatalf("ReadStandard = %v, %v; want the INFO genre %q", held, err, c.genre)
			}
			if err := WriteAll(path, map[string]string{"nom_version": "v"},
				Standard{tags.FieldMood: {"happy"}, tags.FieldGenre: c.nomGenre}); err != nil {
				t.Fatal(err)
			}
			m := mutagenTags(t, path)
			for name, want := range map[string][]string{
				"TIT2": {"Info Title"}, "TPE1": {"Info Artist"}, "TALB": {"Info Album"},
				"TCON": c.wantGenre, "TMOO": {"happy"},
			} {
				if !slices.Equal(m[name], want) {
					t.Errorf("mutagen: %s = %q, want %q", name, m[name], want)
				}
			}
			if got := strings.Join(m["TXXX:"+FileName(WAV, tags.WrittenKey(tags.FieldGenre))], "; "); got != c.written {
				t.Errorf("genre written by Nomarr %q, want %q", got, c.written)
			}
			if got := riffChunk(t, path, "LIST", "INFO"); !bytes.Equal(got, info) {
				t.Errorf("INFO chunk changed:\n%q\n%q", info, got)
			}
			if md5Of(t, path, "-map", "0:a") != decoded {
				t.Error("audio changed")
			}
			// A later write replaces only Nomarr's values.
			if err := WriteAll(path, map[string]string{"nom_version": "v"}, Standard{tags.FieldGenre: {"Jazz"}}); err != nil {
				t.Fatal(err)
			}
			want := append([]string{c.genre}, "Jazz")
			if c.genre == "Jazz" {
				want = want[:1]
			}
			if got := mutagenTags(t, path)["TCON"]; !slices.Equal(got, want) {
				t.Errorf("after a second write TCON = %q, want %q", got, want)
			}
			noTemps(t, dir)
		})
	}
}

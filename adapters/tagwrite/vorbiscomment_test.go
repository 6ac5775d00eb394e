package tagwrite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// taggedFLAC generates a FLAC whose Vorbis comment holds another program's
// tags, and returns its path and the offset of its comment block's content.
func taggedFLAC(t *testing.T) (string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tagged.flac")
	run(t, "ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
		"-metadata", "ARTIST=Some Artist", "-metadata", "TITLE=Some Title",
		"-metadata", "REPLAYGAIN_TRACK_GAIN=-3.20 dB", "-metadata", "MOOD=calm", path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	off := 4
	for {
		typ, n := data[off]&0x7f, int(data[off+1])<<16|int(data[off+2])<<8|int(data[off+3])
		if typ == 4 {
			return path, off + 4
		}
		if data[off]&0x80 != 0 {
			t.Fatal("ffmpeg wrote no Vorbis comment block")
		}
		off += 4 + n
	}
}

// patched writes data with fn applied to a copy of it at path.
func patched(t *testing.T, path string, fn func(b []byte)) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file whose Vorbis comment TagLib would not carry over whole (a damaged
// field count, a field name it drops) is refused, permanently and
// untouched, where it was written with every other tag lost.
func TestDamagedVorbisCommentRefused(t *testing.T) {
	needTools(t)
	countAt := func(b []byte, block int) int {
		return block + 4 + int(binary.LittleEndian.Uint32(b[block:]))
	}
	rename := func(from, to string) func([]byte, int) {
		return func(b []byte, block int) {
			i := bytes.Index(b[block:], []byte(from))
			if i < 0 || len(from) != len(to) {
				t.Fatalf("field %q not found", from)
			}
			copy(b[block+i:], to)
		}
	}
	for name, damage := range map[string]func([]byte, int){
		"count 1000":       func(b []byte, block int) { binary.LittleEndian.PutUint32(b[countAt(b, block):], 1000) },
		"count 100000":     func(b []byte, block int) { binary.LittleEndian.PutUint32(b[countAt(b, block):], 100000) },
		"count 0xFFFFFFFF": func(b []byte, block int) { binary.LittleEndian.PutUint32(b[countAt(b, block):], 0xFFFFFFFF) },
		"count one short": func(b []byte, block int) {
			c := countAt(b, block)
			binary.LittleEndian.PutUint32(b[c:], binary.LittleEndian.Uint32(b[c:])-1)
		},
		"name with =":     rename("MOOD=calm", "=OOD=calm"),
		"non-ASCII name":  rename("MOOD=calm", "M\xc3\x96D=calm"),
		"control in name": rename("MOOD=calm", "MO\x01D=calm"),
	} {
		t.Run(name, func(t *testing.T) {
			path, block := taggedFLAC(t)
			patched(t, path, func(b []byte) { damage(b, block) })
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			err = Write(path, map[string]string{"nom_version": "v1", "mood-strict": "happy"})
			if !errors.Is(err, ErrTagsAtRisk) || !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Write = %v, want ErrTagsAtRisk (permanent: ErrUnsupported)", err)
			}
			t.Log(err)
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the file changed")
			}
			noTemps(t, filepath.Dir(path))
		})
	}
}

// An intact file is written, every other tag kept.
func TestVorbisCommentOthersKept(t *testing.T) {
	needTools(t)
	path, _ := taggedFLAC(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	before, err := rawComment(f, FLAC)
	f.Close()
	if err != nil || len(before) != 5 { // the four above and ffmpeg's ENCODER
		t.Fatalf("rawComment = %v, %v", before, err)
	}
	want := map[string]string{"nom_version": "v1", "mood-strict": "happy"}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(path); err != nil || !maps.Equal(got, want) {
		t.Fatalf("Read = %v, %v", got, err)
	}
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	after, err := rawComment(f, FLAC)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(countFields(before, notOurs), countFields(after, notOurs)) {
		t.Errorf("other tags %v, then %v", before, after)
	}
}

func TestParseCommentStrict(t *testing.T) {
	le := binary.LittleEndian
	comment := func(count uint32, fields ...string) []byte {
		b := le.AppendUint32(nil, 3)
		b = append(b, "ven"...)
		b = le.AppendUint32(b, count)
		for _, f := range fields {
			b = le.AppendUint32(b, uint32(len(f)))
			b = append(b, f...)
		}
		return b
	}
	if fs, err := parseComment(comment(2, "artist=A", "TITLE=a=b"), false); err != nil ||
		len(fs) != 2 || fs[0] != (field{"ARTIST", "A"}) || fs[1] != (field{"TITLE", "a=b"}) {
		t.Errorf("parseComment = %v, %v", fs, err)
	}
	if _, err := parseComment(append(comment(1, "A=1"), 1), true); err != nil {
		t.Errorf("with framing bit: %v", err)
	}
	if _, err := parseComment(append(comment(1, "A=1"), 0, 0), false); err != nil {
		t.Errorf("zero padding: %v", err)
	}
	for name, b := range map[string][]byte{
		"count too large":  comment(3, "A=1", "B=2"),
		"count too small":  comment(1, "A=1", "B=2"),
		"no '='":           comment(1, "A1"),
		"empty name":       comment(1, "=1"),
		"name above 0x7D":  comment(1, "A~=1"),
		"no framing bit":   comment(1, "A=1"),
		"length past end":  append(comment(0), 1, 0, 0, 0, 'A', 0xff, 0xff, 0xff, 0x7f),
		"vendor past end":  {0xff, 0xff, 0, 0},
		"cut in the count": {0, 0, 0, 0, 1},
	} {
		if _, err := parseComment(b, name == "no framing bit"); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

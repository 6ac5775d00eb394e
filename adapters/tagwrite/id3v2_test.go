package tagwrite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// id3v2Tag builds an ID3v2 tag of version major with header flags, body
// (frames, and any extended header before them) and 64 bytes of padding.
// With the unsynchronisation flag (0x80) in a 2.2/2.3 tag, body is encoded
// (a 0x00 after every 0xFF).
func id3v2Tag(major, flags byte, body ...[]byte) []byte {
	var b []byte
	for _, part := range body {
		b = append(b, part...)
	}
	if flags&0x80 != 0 && major < 4 {
		var enc []byte
		for _, c := range b {
			enc = append(enc, c)
			if c == 0xff {
				enc = append(enc, 0)
			}
		}
		b = enc
	}
	b = append(b, make([]byte, 64)...)
	n := len(b)
	h := []byte{'I', 'D', '3', major, 0, flags, byte(n >> 21 & 0x7f), byte(n >> 14 & 0x7f), byte(n >> 7 & 0x7f), byte(n & 0x7f)}
	return append(h, b...)
}

// frame23 is an ID3v2.3 frame (plain big-endian size) with status flags.
func frame23(id string, flags byte, data []byte) []byte {
	n := len(data)
	b := append([]byte(id), byte(n>>24), byte(n>>16), byte(n>>8), byte(n), flags, 0)
	return append(b, data...)
}

// frame22 is an ID3v2.2 frame (3-byte id and size).
func frame22(id string, data []byte) []byte {
	n := len(data)
	b := append([]byte(id), byte(n>>16), byte(n>>8), byte(n))
	return append(b, data...)
}

// latin1 is the content of a text frame in ISO-8859-1.
func latin1(s string) []byte { return append([]byte{0}, s...) }

var (
	rvad = []byte{0x03, 0x10, 0x01, 0x00, 0x01, 0x00, 0, 0, 0, 0}
	equa = []byte{0x10, 0x80, 0x64, 0x01, 0x00}
)

// id3Cases are ID3v2 tags with the frames TagLib drops when it saves them as
// version 2.4 (lost) and the frame ids the saved tag then holds, ours
// (TXXX) aside (after).
var id3Cases = []struct {
	name  string
	tag   []byte
	lost  []string
	after []string
	tdrc  string // the date TagLib saves, where there is one
}{
	{"v2.3 frames without a 2.4 equivalent",
		id3v2Tag(3, 0, frame23("TIT2", 0, latin1("Title")), frame23("TRDA", 0, latin1("4th-7th June")),
			frame23("TSIZ", 0, latin1("12345")), frame23("RVAD", 0, rvad), frame23("EQUA", 0, equa)),
		[]string{"EQUA", "RVAD", "TRDA", "TSIZ"}, []string{"TIT2"}, ""},
	{"v2.3 date merged into TDRC, TORY and IPLS converted",
		id3v2Tag(3, 0, frame23("TIT2", 0, latin1("Title")), frame23("TYER", 0, latin1("2004")),
			frame23("TDAT", 0, latin1("0106\x00")), frame23("TIME", 0, latin1("1230")),
			frame23("TORY", 0, latin1("1999")), frame23("IPLS", 0, latin1("mix\x00Someone"))),
		nil, []string{"TIT2", "TDRC", "TDOR", "TIPL"}, "2004-06-01T12:30"},
	{"v2.3 TDAT and TIME without TYER",
		id3v2Tag(3, 0, frame23("TIT2", 0, latin1("Title")), frame23("TDAT", 0, latin1("0106")), frame23("TIME", 0, latin1("1230"))),
		[]string{"TDAT", "TIME"}, []string{"TIT2"}, ""},
	{"v2.3 TIME not 4 characters",
		id3v2Tag(3, 0, frame23("TYER", 0, latin1("2004")), frame23("TDAT", 0, latin1("0106")), frame23("TIME", 0, latin1("12:30"))),
		[]string{"TIME"}, []string{"TDRC"}, "2004-06-01"},
	{"v2.3 unsynchronised",
		id3v2Tag(3, 0x80, frame23("TIT2", 0, latin1("Ti\xfftle")), frame23("RVAD", 0, rvad), frame23("TPE1", 0, latin1("Artist"))),
		[]string{"RVAD"}, []string{"TIT2", "TPE1"}, ""},
	{"v2.3 extended header",
		id3v2Tag(3, 0x40, []byte{0, 0, 0, 6, 0, 0, 0, 0, 0, 0}, frame23("TIT2", 0, latin1("Title")), frame23("TPE1", 0, latin1("Artist"))),
		[]string{"TIT2", "TPE1"}, nil, ""},
	{"v2.3 frame marked discard-on-alteration, unknown frame",
		id3v2Tag(3, 0, frame23("TIT2", 0, latin1("Title")), frame23("TSIZ", 0x80, latin1("1")), frame23("XYZW", 0, latin1("kept"))),
		nil, []string{"TIT2", "XYZW"}, ""},
	{"v2.2 frames without a 2.4 equivalent",
		id3v2Tag(2, 0, frame22("TT2", latin1("Title")), frame22("RVA", []byte{1, 2, 3, 4}), frame22("XYZ", latin1("zz")),
			frame22("TYE", latin1("2004")), frame22("TDA", latin1("0106"))),
		[]string{"RVA", "TDA", "XYZ"}, []string{"TIT2", "TDRC"}, "2004"},
	{"v2.2 picture",
		id3v2Tag(2, 0, frame22("TT2", latin1("Title")), frame22("PIC", append([]byte{0}, "JPG\x03\x00\xff\xd8\xff"...))),
		nil, []string{"TIT2", "APIC"}, ""},
	{"v2.4",
		id3v2Tag(4, 0, frame23("TIT2", 0, latin1("Title")), frame23("RVA2", 0, []byte{'a', 0, 1, 0, 0})),
		nil, []string{"TIT2", "RVA2"}, ""},
}

// rawMP3 is MPEG audio without any tag.
func rawMP3(t *testing.T, dir string) []byte {
	t.Helper()
	raw := filepath.Join(dir, "raw.mp3")
	run(t, "ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=duration=2", "-c:a", "libmp3lame",
		"-write_xing", "0", "-id3v2_version", "0", raw)
	audio, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	return audio
}

func frameIDs(tag *id3Tag) []string {
	var ids []string
	if tag != nil {
		for _, f := range tag.frames {
			if f.id != "TXXX" {
				ids = append(ids, f.id)
			}
		}
	}
	return ids
}

// TestID3v2LossModelMatchesTagLib guards the model of what TagLib drops when
// it saves an ID3v2.2/2.3 tag as 2.4 (lostID3v2Frames): for each case the
// model predicts the lost frames, and TagLib, saving a copy, leaves exactly
// the expected frames.
func TestID3v2LossModelMatchesTagLib(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	audio := rawMP3(t, dir)
	for i, c := range id3Cases {
		t.Run(c.name, func(t *testing.T) {
			before, after := saveThroughTagLib(t, filepath.Join(dir, strings.Repeat("x", i+1)+".mp3"), c.tag, audio)
			if got := lostID3v2Frames(before); !slices.Equal(got, c.lost) {
				t.Errorf("lostID3v2Frames = %v, want %v", got, c.lost)
			}
			if got := frameIDs(after); !slices.Equal(got, c.after) {
				t.Errorf("TagLib saved frames %v, want %v", got, c.after)
			}
			for _, f := range after.frames {
				if f.id == "TDRC" && id3String(f.data) != c.tdrc {
					t.Errorf("TagLib saved the date %q, want %q", id3String(f.data), c.tdrc)
				}
			}
		})
	}
}

// TestID3v2FramesTagLibWouldDropRefused guards "every other tag is
// preserved" against TagLib's conversion of ID3v2.3 (and 2.2) tags to 2.4:
// Write refuses a file whose ID3v2 tag holds a frame TagLib would drop —
// MP3, or FLAC with an ID3v2 tag in front — with an error wrapping
// ErrUnsupported that names the frames, and leaves the file as it was; a
// tag TagLib converts whole is written.
func TestID3v2FramesTagLibWouldDropRefused(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	mp3 := rawMP3(t, dir)
	flac, err := os.ReadFile(makeFile(t, dir, "flac"))
	if err != nil {
		t.Fatal(err)
	}
	for _, audio := range []struct{ ext, name string }{{".mp3", "MP3"}, {".flac", "FLAC"}} {
		for i, c := range id3Cases {
			t.Run(audio.name+"/"+c.name, func(t *testing.T) {
				p := filepath.Join(dir, "t"+strings.Repeat("x", i)+audio.ext)
				data := append(slices.Clone(c.tag), map[string][]byte{".mp3": mp3, ".flac": flac}[audio.ext]...)
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				before := sha(t, p)
				err := Write(p, map[string]string{"nom_version": "x"})
				if c.lost == nil {
					if err != nil {
						t.Fatalf("Write = %v, want success", err)
					}
					return
				}
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Write = %v, want ErrUnsupported", err)
				}
				want := "frames " + strings.Join(c.lost, ", ") + " would be lost"
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
				if sha(t, p) != before {
					t.Error("file changed")
				}
				noTemps(t, dir)
			})
		}
	}
}

// saveThroughTagLib writes tag followed by audio to p, has TagLib save one
// tag of ours into it, and returns the ID3v2 tag as read before and after
// the save (always version 2.4 after).
func saveThroughTagLib(t *testing.T, p string, tag, audio []byte) (before, after *id3Tag) {
	t.Helper()
	if err := os.WriteFile(p, append(append([]byte{}, tag...), audio...), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if before, err = readID3v2(f); err != nil || before == nil {
		t.Fatalf("readID3v2 = %v, %v", before, err)
	}
	if err := taglibWrite(f, MP3, id3Prefix, [][2]string{{"nom:k", "v"}}, nil); err != nil {
		t.Fatal(err)
	}
	if after, err = readID3v2(f); err != nil || after == nil || after.major != 4 {
		t.Fatalf("after TagLib's save: %+v, %v", after, err)
	}
	return before, after
}

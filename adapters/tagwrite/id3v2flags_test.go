package tagwrite

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// flagFrame is a frame of a test tag: its id, format flags, content as
// stored (raw, after the frame header) and content once the format flags
// are undone (plain), and whether TagLib saves it whole.
type flagFrame struct {
	id         string
	format     byte
	raw, plain []byte
	kept       bool
}

// frameWithFlags is a frame of an ID3v2 tag of version major (3: plain
// size, 4: synchsafe) with format flags.
func frameWithFlags(major byte, id string, format byte, data []byte) []byte {
	n := len(data)
	b := []byte(id)
	if major == 4 {
		b = append(b, byte(n>>21&0x7f), byte(n>>14&0x7f), byte(n>>7&0x7f), byte(n&0x7f))
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	return append(append(b, 0, format), data...)
}

func deflate(s string) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// lengthInd is a data length indicator (synchsafe) for n bytes.
func lengthInd(n int) []byte {
	return []byte{byte(n >> 21 & 0x7f), byte(n >> 14 & 0x7f), byte(n >> 7 & 0x7f), byte(n & 0x7f)}
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// id3FlagCases are ID3v2 tags whose frames carry format flags.
var id3FlagCases = []struct {
	name   string
	major  byte
	frames []flagFrame
}{
	{"v2.3 grouped", 3, []flagFrame{
		{"TIT2", id3v23Grouped, cat([]byte{7}, latin1("Title")), latin1("Title"), false},
		{"XYZW", id3v23Grouped, []byte("\x07hello"), []byte("hello"), false},
		{"TPE1", 0, latin1("Artist"), latin1("Artist"), true},
	}},
	{"v2.3 encrypted", 3, []flagFrame{
		{"XYZW", id3v23Encrypted, []byte("\x80secret"), []byte("secret"), false},
	}},
	{"v2.3 compressed", 3, []flagFrame{
		{"XYZW", id3v23Compressed, cat(binary.BigEndian.AppendUint32(nil, 11), deflate("hello world")), []byte("hello world"), true},
		{"TIT2", id3v23Compressed, cat(binary.BigEndian.AppendUint32(nil, 6), deflate("\x00Title")), latin1("Title"), true},
	}},
	{"v2.4 grouped", 4, []flagFrame{
		{"TIT2", id3v24Grouped, cat([]byte{7}, latin1("Title")), latin1("Title"), false},
		{"XYZW", id3v24Grouped | id3v24LengthInd, cat([]byte{7}, lengthInd(5), []byte("hello")), []byte("hello"), false},
	}},
	{"v2.4 encrypted", 4, []flagFrame{
		{"XYZW", id3v24Encrypted, []byte("\x80secret"), []byte("secret"), false},
		{"TPE1", 0, latin1("Artist"), latin1("Artist"), true},
	}},
	{"v2.4 compressed without a data length indicator", 4, []flagFrame{
		{"XYZW", id3v24Compressed, deflate("hello"), []byte("hello"), false},
	}},
	{"v2.4 unsynchronised, data length indicator, compressed", 4, []flagFrame{
		{"XYZW", 0x02, []byte("a\xff\x00\xe0b"), []byte("a\xff\xe0b"), true},
		{"XYZV", 0x02 | id3v24LengthInd, cat(lengthInd(4), []byte("a\xff\x00\xe0b")), []byte("a\xff\xe0b"), true},
		{"TIT2", id3v24LengthInd, cat(lengthInd(6), latin1("Title")), latin1("Title"), true},
		{"TPE1", id3v24Compressed | id3v24LengthInd, cat(lengthInd(7), deflate("\x00Artist")), latin1("Artist"), true},
	}},
}

// flagTag is the tag of case frames, version major.
func flagTag(major byte, frames []flagFrame) []byte {
	var body [][]byte
	for _, f := range frames {
		body = append(body, frameWithFlags(major, f.id, f.format, f.raw))
	}
	return id3v2Tag(major, 0, body...)
}

// refusedFrames is what flaggedID3v2Frames should name: the frames TagLib
// does not keep, by id.
func refusedFrames(frames []flagFrame) []string {
	var ids []string
	for _, f := range frames {
		if !f.kept {
			ids = append(ids, f.id)
		}
	}
	return ids
}

func flaggedIDs(t *id3Tag) []string {
	var ids []string
	for _, s := range flaggedID3v2Frames(t) {
		ids = append(ids, strings.Fields(s)[0])
	}
	return ids
}

// TestID3v2FormatFlagModelMatchesTagLib guards the model of what TagLib
// does with frames that carry format flags (flaggedID3v2Frames): it saves
// every frame without them, undoing compression, the data length indicator
// and unsynchronisation but not grouping or encryption (their bytes become
// the content: a grouped title is saved empty) and dropping a 2.4 frame
// compressed without a data length indicator. For each case the model
// names exactly the frames that TagLib, saving a copy, does not keep whole.
func TestID3v2FormatFlagModelMatchesTagLib(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	audio := rawMP3(t, dir)
	for i, c := range id3FlagCases {
		t.Run(c.name, func(t *testing.T) {
			before, after := saveThroughTagLib(t, filepath.Join(dir, "f"+strings.Repeat("x", i)+".mp3"), flagTag(c.major, c.frames), audio)
			if got, want := flaggedIDs(before), refusedFrames(c.frames); !slices.Equal(got, want) {
				t.Errorf("flaggedID3v2Frames = %v, want %v", flaggedID3v2Frames(before), want)
			}
			for _, ff := range c.frames {
				i := slices.IndexFunc(after.frames, func(g id3Frame) bool { return g.id == ff.id })
				whole := i >= 0 && after.frames[i].format == 0 && bytes.Equal(after.frames[i].data, ff.plain)
				if whole != ff.kept {
					got := "dropped"
					if i >= 0 {
						got = string(after.frames[i].data)
					}
					t.Errorf("%s (format %#02x): TagLib saved %q, kept whole %v; want kept %v", ff.id, ff.format, got, whole, ff.kept)
				}
			}
		})
	}
}

// TestID3v2FormatFlagsRefused guards that Write refuses, with an error
// wrapping ErrUnsupported that names the frames, a file whose ID3v2 tag
// holds a frame TagLib would damage because of its format flags (grouped,
// encrypted; 2.4 compressed without a data length indicator), for 2.3 and
// 2.4 tags, and leaves it as it was; the flags TagLib undoes are written.
func TestID3v2FormatFlagsRefused(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	audio := rawMP3(t, dir)
	for i, c := range id3FlagCases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "w"+strings.Repeat("x", i)+".mp3")
			if err := os.WriteFile(p, append(flagTag(c.major, c.frames), audio...), 0o644); err != nil {
				t.Fatal(err)
			}
			before := sha(t, p)
			err := Write(p, map[string]string{"nom_version": "x"})
			refused := refusedFrames(c.frames)
			if len(refused) == 0 {
				if err != nil {
					t.Fatalf("Write = %v, want success", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Write = %v, want ErrUnsupported", err)
			}
			for _, id := range refused {
				if !strings.Contains(err.Error(), id+" (") {
					t.Errorf("error %q does not name %s", err, id)
				}
			}
			if sha(t, p) != before {
				t.Error("file changed")
			}
			noTemps(t, dir)
		})
	}
}

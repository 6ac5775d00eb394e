package tagwrite

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apeTag is an APEv2 tag with a header and a footer holding text items
// (key, value) in the order given.
func apeTag(items ...[2]string) []byte {
	its := make([]apeItem, len(items))
	for i, it := range items {
		its[i] = apeItem{key: it[0], value: []byte(it[1])}
	}
	return apeTagOf(its)
}

// apeItem is an item of an APEv2 tag: UTF-8 text, or binary data (a cover
// picture: its file name, a 0 byte, the image).
type apeItem struct {
	key    string
	value  []byte
	binary bool
}

// apeTagOf is an APEv2 tag with a header and a footer holding items in the
// order given.
func apeTagOf(items []apeItem) []byte {
	var body []byte
	for _, it := range items {
		var flags uint32 // UTF-8 text, read-write
		if it.binary {
			flags = 1 << 1
		}
		body = binary.LittleEndian.AppendUint32(body, uint32(len(it.value)))
		body = binary.LittleEndian.AppendUint32(body, flags)
		body = append(body, it.key...)
		body = append(body, 0)
		body = append(body, it.value...)
	}
	block := func(flags uint32) []byte {
		b := []byte("APETAGEX")
		b = binary.LittleEndian.AppendUint32(b, 2000)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(body)+32)) // items and footer
		b = binary.LittleEndian.AppendUint32(b, uint32(len(items)))
		b = binary.LittleEndian.AppendUint32(b, flags)
		return append(b, make([]byte, 8)...)
	}
	out := block(0xa0000000) // has a header; this is the header
	out = append(out, body...)
	return append(out, block(0x80000000)...)
}

// id3v1Tag is an ID3v1.0 tag (a 30-byte comment, no track number); the
// fields are cut or padded with spaces to their width.
func id3v1Tag(title, artist, album, year, comment string, genre byte) []byte {
	field := func(s string, n int) string { return (s + strings.Repeat(" ", n))[:n] }
	b := []byte("TAG" + field(title, 30) + field(artist, 30) + field(album, 30) + field(year, 4) + field(comment, 30))
	return append(b, genre)
}

// TestMP3OtherTagsKeptByteForByte guards "ID3v1 and APE tags are kept as
// they are": writing our tags into an MP3 saves its ID3v2 tag only.
// TagLib, asked to save every tag type, renders the ID3v1 tag again (a
// 30-character ID3v1.0 comment cut to 28, spaces stripped) and the APE tag
// too (items reordered). The ID3v2 tag here grows, so both trailing tags
// move: they and the MPEG audio must come out byte for byte.
func TestMP3OtherTagsKeptByteForByte(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	audio := rawMP3(t, dir)
	front := id3v2Tag(4, 0, frame23("TIT2", 0, latin1("Title")))
	ape := apeTag([2]string{"Title", "APE Title"}, [2]string{"Artist", "APE Artist"},
		[2]string{"Custom Key", " spaced value "})
	v1 := id3v1Tag("  Title with spaces", "Artist  ", "Album", "1999",
		" "+strings.Repeat("c", 28)+" ", 17)
	path := filepath.Join(dir, "tagged.mp3")
	data := append(append(append(append([]byte(nil), front...), audio...), ape...), v1...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, derived(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < id3HeaderSize || string(b[:3]) != "ID3" {
		t.Fatal("no ID3v2 tag in front")
	}
	audioStart := id3HeaderSize + int(syncsafe(b[6:10]))
	if audioStart <= len(front) {
		t.Fatalf("the ID3v2 tag did not grow (%d bytes, was %d): the test needs the trailing tags moved", audioStart, len(front))
	}
	if len(b) < audioStart+len(ape)+len(v1) {
		t.Fatalf("file of %d bytes, shorter than its tags", len(b))
	}
	tail := b[audioStart:]
	if got := tail[len(tail)-len(v1):]; !bytes.Equal(got, v1) {
		t.Errorf("ID3v1 tag\n got %q\nwant %q", got, v1)
	}
	if got := tail[len(tail)-len(v1)-len(ape) : len(tail)-len(v1)]; !bytes.Equal(got, ape) {
		t.Errorf("APE tag\n got %q\nwant %q", got, ape)
	}
	if got := tail[:len(tail)-len(v1)-len(ape)]; !bytes.Equal(got, audio) {
		t.Errorf("MPEG audio changed (%d bytes, was %d)", len(got), len(audio))
	}
}

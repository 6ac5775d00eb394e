package tagwrite

import (
	"encoding/binary"
	"io"
	"strings"
)

// checkID3v2Of runs checkID3v2 on the ID3v2 tag TagLib would save again:
// the one at the start of the file, or for WAV and AIFF the one in the
// file's "ID3 " chunk.
func checkID3v2Of(f io.ReaderAt, format Format) error {
	switch format {
	case WAV, AIFF:
		off, size, ok := id3Chunk(f, format == AIFF)
		if !ok {
			return nil
		}
		return checkID3v2(io.NewSectionReader(f, off, size))
	}
	return checkID3v2(f)
}

// id3Chunk finds the first "ID3 " (or "id3 ") chunk of a RIFF WAVE file
// (little-endian sizes) or an AIFF file (bigEndian): its data's offset and
// size. The walk stops at the first chunk that does not fit the file's
// own size, as TagLib's does.
func id3Chunk(f io.ReaderAt, bigEndian bool) (off, size int64, ok bool) {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	h := make([]byte, 12)
	if n, _ := f.ReadAt(h, 0); n < 12 {
		return 0, 0, false
	}
	end := 8 + int64(order.Uint32(h[4:8]))
	pos := int64(12)
	for pos+8 <= end {
		if n, _ := f.ReadAt(h[:8], pos); n < 8 {
			return 0, 0, false
		}
		id, n := string(h[:4]), int64(order.Uint32(h[4:8]))
		if pos+8+n > end {
			return 0, 0, false
		}
		if strings.EqualFold(id, "ID3 ") {
			return pos + 8, n, true
		}
		pos += 8 + n + n&1 // chunks are padded to an even size
	}
	return 0, 0, false
}

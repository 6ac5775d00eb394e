package tagwrite

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/nomarr/nomarr/core/tags"
)

// ErrTagsAtRisk: the file's Vorbis comment holds tags that TagLib would
// not carry over into the file it saves: a damaged block (a field count
// larger than the block, lengths running past it, data after the last
// field) or fields TagLib drops (a name empty, outside ASCII 0x20–0x7D,
// no '='). Errors wrapping it wrap ErrUnsupported too: the same file fails
// the same way every time, and it is left untouched.
var ErrTagsAtRisk = errors.New("tagwrite: the file's other tags would be lost")

// pictureFields are the Vorbis comment fields TagLib reads as pictures,
// not as fields (it writes them back from its picture list).
var pictureFields = []string{"METADATA_BLOCK_PICTURE", "COVERART"}

// maxCommentPacket bounds the Ogg comment packet read (pictures included).
const maxCommentPacket = 64 << 20

// field is one Vorbis comment field: its name upper-cased (names are
// case-insensitive) and its value as stored.
type field struct{ name, value string }

// rawComment reads the Vorbis comment of a FLAC or Ogg file itself, with
// a strict parser independent of TagLib: nil (and no error) when the file
// has none; an error saying what is damaged when the block does not hold
// exactly the fields it announces, each a valid name, '=', a value.
func rawComment(f *os.File, format Format) ([]field, error) {
	var block []byte
	var err error
	switch format {
	case FLAC:
		block, err = flacComment(f)
	case Vorbis, Opus, OggFLAC:
		block, err = oggComment(f, format)
	default:
		return nil, nil
	}
	if err != nil || block == nil {
		return nil, err
	}
	return parseComment(block, format == Vorbis)
}

// parseComment parses a Vorbis comment: vendor, field count, fields (all
// lengths 32-bit little-endian), then, with framing, Vorbis's framing bit.
// Bytes after the last field must be zero (padding TagLib drops).
func parseComment(b []byte, framing bool) ([]field, error) {
	le := binary.LittleEndian
	pos := 0
	u32 := func(what string) (int, error) {
		if len(b)-pos < 4 {
			return 0, fmt.Errorf("Vorbis comment cut short in the %s (%d bytes)", what, len(b))
		}
		v := le.Uint32(b[pos:])
		pos += 4
		return int(v), nil
	}
	vendor, err := u32("vendor length")
	if err != nil {
		return nil, err
	}
	if vendor > len(b)-pos {
		return nil, fmt.Errorf("Vorbis comment vendor length %d exceeds its block (%d bytes)", vendor, len(b))
	}
	pos += vendor
	count, err := u32("field count")
	if err != nil {
		return nil, err
	}
	if count > (len(b)-pos)/4 {
		return nil, fmt.Errorf("Vorbis comment announces %d fields, more than its %d-byte block can hold", uint32(count), len(b))
	}
	fields := make([]field, 0, count)
	for i := range count {
		n, err := u32(fmt.Sprintf("length of field %d of %d", i+1, count))
		if err != nil {
			return nil, err
		}
		if n > len(b)-pos {
			return nil, fmt.Errorf("Vorbis comment field %d of %d: length %d exceeds its block", i+1, count, n)
		}
		raw := b[pos : pos+n]
		pos += n
		name, value, ok := bytes.Cut(raw, []byte("="))
		if !ok {
			return nil, fmt.Errorf("Vorbis comment field %d has no '=': %q", i+1, clip(raw))
		}
		if !validFieldName(name) {
			return nil, fmt.Errorf("Vorbis comment field %d has an invalid name %q (want ASCII 0x20–0x7D without '=')", i+1, clip(name))
		}
		fields = append(fields, field{strings.ToUpper(string(name)), string(value)})
	}
	rest := b[pos:]
	if framing {
		if len(rest) == 0 || rest[0]&1 == 0 {
			return nil, errors.New("Vorbis comment without its framing bit")
		}
		rest = rest[1:]
	}
	if len(bytes.Trim(rest, "\x00")) > 0 {
		return nil, fmt.Errorf("Vorbis comment holds %d bytes after its %d fields", len(rest), count)
	}
	return fields, nil
}

// validFieldName: non-empty, ASCII 0x20 through 0x7D except '=' (the Vorbis
// comment specification, as TagLib checks it).
func validFieldName(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for _, c := range name {
		if c < 0x20 || c > 0x7d || c == '=' {
			return false
		}
	}
	return true
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

// flacComment returns the content of the first VORBIS_COMMENT metadata
// block of a FLAC file (after an ID3v2 tag in front, if any), nil when it
// has none.
func flacComment(f *os.File) ([]byte, error) {
	off, err := flacStart(f)
	if err != nil {
		return nil, err
	}
	off += 4 // "fLaC"
	hdr := make([]byte, 4)
	for {
		if _, err := f.ReadAt(hdr, off); err != nil {
			return nil, fmt.Errorf("FLAC metadata block header at %d: %w", off, err)
		}
		last, typ := hdr[0]&0x80 != 0, hdr[0]&0x7f
		n := int64(hdr[1])<<16 | int64(hdr[2])<<8 | int64(hdr[3])
		if typ == 4 {
			block := make([]byte, n)
			if _, err := f.ReadAt(block, off+4); err != nil {
				return nil, fmt.Errorf("FLAC Vorbis comment block (%d bytes at %d): %w", n, off+4, err)
			}
			return block, nil
		}
		if last || typ == 127 {
			return nil, nil
		}
		off += 4 + n
	}
}

// flacStart is the offset of "fLaC": 0, or after an ID3v2 tag.
func flacStart(f *os.File) (int64, error) {
	head := make([]byte, 10)
	if _, err := f.ReadAt(head, 0); err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(head, []byte("ID3")) {
		return 0, nil
	}
	off := 10 + (int64(head[6]&0x7f)<<21 | int64(head[7]&0x7f)<<14 | int64(head[8]&0x7f)<<7 | int64(head[9]&0x7f))
	if head[5]&0x10 != 0 {
		off += 10
	}
	return off, nil
}

// oggComment returns the Vorbis comment of an Ogg Vorbis, Opus or FLAC
// file's first logical stream: its second packet, without the packet's
// header ("\x03vorbis", "OpusTags", a FLAC metadata block header).
func oggComment(f *os.File, format Format) ([]byte, error) {
	r := io.NewSectionReader(f, 0, 1<<62)
	var serial uint32
	var packets [][]byte
	var cur []byte
	hdr := make([]byte, 27)
	for first := true; len(packets) < 2; first = false {
		if _, err := io.ReadFull(r, hdr); err != nil {
			return nil, fmt.Errorf("Ogg page header: %w", err)
		}
		if string(hdr[:4]) != "OggS" {
			return nil, errors.New("Ogg page without its capture pattern before the comment packet")
		}
		segs := make([]byte, hdr[26])
		if _, err := io.ReadFull(r, segs); err != nil {
			return nil, fmt.Errorf("Ogg segment table: %w", err)
		}
		body := 0
		for _, s := range segs {
			body += int(s)
		}
		data := make([]byte, body)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("Ogg page body: %w", err)
		}
		s := binary.LittleEndian.Uint32(hdr[14:])
		if first {
			serial = s
		}
		if s != serial {
			continue // another logical stream's page
		}
		for _, n := range segs {
			cur = append(cur, data[:n]...)
			data = data[n:]
			if len(cur) > maxCommentPacket {
				return nil, fmt.Errorf("Ogg header packet larger than %d bytes", maxCommentPacket)
			}
			if n < 255 {
				packets = append(packets, cur)
				cur = nil
				if len(packets) == 2 {
					break
				}
			}
		}
	}
	p := packets[1]
	var magic string
	switch format {
	case Vorbis:
		magic = "\x03vorbis"
	case Opus:
		magic = "OpusTags"
	case OggFLAC:
		if len(p) < 4 || p[0]&0x7f != 4 {
			return nil, nil // the mapping puts the comment second; none there
		}
		return p[4:], nil
	}
	if !bytes.HasPrefix(p, []byte(magic)) {
		return nil, fmt.Errorf("second Ogg packet is not a comment header (%q)", clip(p[:min(len(p), 8)]))
	}
	return p[len(magic):], nil
}

// countFields is the fields that keep accepts, as a multiset.
func countFields(fields []field, keep func(name string) bool) map[field]int {
	m := map[field]int{}
	for _, f := range fields {
		if keep(f.name) {
			m[f]++
		}
	}
	return m
}

// notPicture: a field TagLib keeps as a field.
func notPicture(name string) bool { return !slices.Contains(pictureFields, name) }

// notOurs: a field of another program's.
func notOurs(name string) bool { return !strings.HasPrefix(name, vorbisPrefix) }

// checkComment makes sure that TagLib read every field of the file's
// Vorbis comment, as a strict reading of the raw block finds them, before
// the write; it returns the raw fields for the check after it (keptOthers).
// Any difference is an error wrapping ErrTagsAtRisk and ErrUnsupported.
func checkComment(f *os.File, format Format) ([]field, error) {
	switch format {
	case FLAC, Vorbis, Opus, OggFLAC:
	default:
		return nil, nil
	}
	raw, err := rawComment(f, format)
	if err != nil {
		return nil, atRisk("%v", err)
	}
	recs, err := taglibRead(f, format, "", nil)
	if err != nil {
		return nil, err
	}
	lib := make([]field, len(recs))
	for i, r := range recs {
		lib[i] = field{strings.ToUpper(r[0]), r[1]}
	}
	want, got := countFields(raw, notPicture), countFields(lib, notPicture)
	if !maps.Equal(want, got) {
		return nil, atRisk("TagLib reads %d of the Vorbis comment's %d fields%s", len(lib), len(raw), missing(want, got))
	}
	return raw, nil
}

// keptOthers makes sure the copy's Vorbis comment holds every field of
// another program's that the original's held (raw), values unchanged, but
// for the standard fields' edits (by field name): their Remove values gone,
// their Add values added.
func keptOthers(tmp *os.File, format Format, raw []field, edits map[string]tags.FieldEdit) error {
	switch format {
	case FLAC, Vorbis, Opus, OggFLAC:
	default:
		return nil
	}
	after, err := rawComment(tmp, format)
	if err != nil {
		return atRisk("the edited copy's Vorbis comment: %v", err)
	}
	want, got := countFields(raw, notOurs), countFields(after, notOurs)
	for name, e := range edits {
		for _, v := range e.Remove {
			delete(want, field{name, v})
		}
		for _, v := range e.Add {
			want[field{name, v}]++
		}
	}
	if !maps.Equal(want, got) {
		return atRisk("the edited copy does not keep the other tags%s", missing(want, got))
	}
	return nil
}

// missing names the fields of want not in got (at most 5).
func missing(want, got map[field]int) string {
	var names []string
	for f, n := range want {
		if got[f] < n {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return " (" + strings.Join(names, ", ") + " would be lost or changed)"
}

// atRisk is an error wrapping ErrUnsupported and ErrTagsAtRisk.
func atRisk(format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s; the file is left untouched (repair its tags with a tag editor, then `nomarr retry`)",
		ErrUnsupported, ErrTagsAtRisk, fmt.Sprintf(format, args...))
}

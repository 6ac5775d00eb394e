package tagwrite

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf16"
)

// TagLib (1.13) converts an ID3v2.3 tag to version 2.4 when it reads it, and
// saves it as 2.4 (the MPEG audio in front of MP3 files; FLAC files with an
// ID3v2 tag in front too). A 2.3 frame that has no 2.4 equivalent is read as
// an unknown frame marked "discard when the tag is altered" and is not saved:
// EQUA, RVAD, TRDA and TSIZ always, TDAT and TIME unless TagLib merges them
// into the date (TYER → TDRC); TagLib also misreads a 2.3 extended header
// and then finds no frames at all. Write refuses such a file (ErrUnsupported,
// naming the frames) instead of losing them; lostID3v2Frames finds them, for
// ID3v2.2 tags (also converted) too. TestID3v2LossModelMatchesTagLib checks
// this model against the TagLib the package is built with.
//
// A frame that the file itself marks "discard when the tag is altered" is
// discarded as ID3v2 prescribes and does not count as lost.
//
// TagLib also saves every frame without its format flags (its frame header
// renders them as zero), after undoing only some of them: compression, the
// data length indicator and (2.4) unsynchronisation are undone, so such a
// frame is saved whole, plain. Grouping and encryption are not: the group
// byte or the encrypted bytes become the frame's content, which a text
// frame then misreads (a grouped title is saved empty). A 2.4 frame
// compressed without a data length indicator, against the standard, is
// dropped. Write refuses these too (flaggedID3v2Frames), for 2.3 and 2.4
// tags; TestID3v2FormatFlagModelMatchesTagLib checks that model.

// id3Frame is one frame of an ID3v2 tag: its id and its content (after the
// frame header, unsynchronisation undone).
type id3Frame struct {
	id     string
	data   []byte
	format byte // the format flags (second flag byte; 0 in ID3v2.2)
}

// id3Tag is the start of a file's ID3v2 tag as far as the frame walk needs
// it.
type id3Tag struct {
	major  byte       // 2, 3 or 4
	extHdr bool       // an extended header follows the tag header (2.3, 2.4)
	frames []id3Frame // in file order, up to the padding
}

// id3HeaderSize is the size of the ID3v2 tag header.
const id3HeaderSize = 10

// readID3v2 reads the ID3v2 tag at the start of r; nil when there is none (or
// its header is not a valid one). The walk stops at the padding, at the end
// of the tag or at the first frame whose header does not fit, as TagLib's
// does; frames flagged "discard when the tag is altered" are left out.
func readID3v2(r io.ReaderAt) (*id3Tag, error) {
	h := make([]byte, id3HeaderSize)
	if n, err := r.ReadAt(h, 0); n < id3HeaderSize {
		if err == io.EOF {
			return nil, nil
		}
		return nil, err
	}
	if string(h[:3]) != "ID3" || h[3] < 2 || h[3] > 4 || h[4] == 0xff || h[6]|h[7]|h[8]|h[9] >= 0x80 {
		return nil, nil
	}
	// Read what the file holds of the tag (a corrupt size may claim more).
	body, err := io.ReadAll(io.NewSectionReader(r, id3HeaderSize, int64(syncsafe(h[6:10]))))
	if err != nil {
		return nil, err
	}
	t := &id3Tag{major: h[3]}
	flags := h[5]
	// Unsynchronisation of the whole tag (2.2 and 2.3; in 2.4 it is per frame).
	if flags&0x80 != 0 && t.major < 4 {
		body = unsync(body)
	}
	// (In 2.2 this flag means compression, for which no scheme was ever
	// defined; TagLib, like the walk, reads the frames as they are.)
	t.extHdr = flags&0x40 != 0 && t.major >= 3
	if t.extHdr {
		if len(body) < 4 {
			return t, nil
		}
		ext := int64(binary.BigEndian.Uint32(body)) + 4 // 2.3: the size excludes itself
		if t.major == 4 {
			ext = int64(syncsafe(body[:4])) // 2.4: includes itself
		}
		if ext > int64(len(body)) {
			return t, nil
		}
		body = body[ext:]
	}
	t.frames = walkFrames(t.major, body)
	return t, nil
}

// walkFrames returns the frames of body (the tag after the header and any
// extended header) of an ID3v2 tag of version major.
func walkFrames(major byte, body []byte) []id3Frame {
	idLen, hdrLen := 4, 10
	if major == 2 {
		idLen, hdrLen = 3, 6
	}
	var out []id3Frame
	for len(body) >= hdrLen && body[0] != 0 {
		var size int
		switch major {
		case 2:
			size = int(body[3])<<16 | int(body[4])<<8 | int(body[5])
		case 3:
			size = int(binary.BigEndian.Uint32(body[4:8]))
		default:
			size = int(syncsafe(body[4:8]))
		}
		if size <= 0 || size > len(body)-hdrLen {
			break // TagLib stops at the first frame it cannot parse
		}
		id, data := string(body[:idLen]), body[hdrLen:hdrLen+size]
		var format byte
		if major > 2 {
			format = body[9]
		}
		discard := false
		switch major {
		case 3:
			discard = body[8]&0x80 != 0
		case 4:
			discard = body[8]&0x40 != 0
			if body[9]&0x02 != 0 { // per-frame unsynchronisation
				data = unsync(data)
			}
		}
		if !discard {
			out = append(out, id3Frame{id: id, data: data, format: format})
		}
		body = body[hdrLen+size:]
	}
	return out
}

// syncsafe decodes a 4-byte synchsafe integer (7 bits a byte).
func syncsafe(b []byte) uint32 {
	return uint32(b[0]&0x7f)<<21 | uint32(b[1]&0x7f)<<14 | uint32(b[2]&0x7f)<<7 | uint32(b[3]&0x7f)
}

// unsync undoes ID3v2 unsynchronisation: every 0x00 that follows 0xFF is
// removed.
func unsync(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		out = append(out, b[i])
		if b[i] == 0xff && i+1 < len(b) && b[i+1] == 0 {
			i++
		}
	}
	return out
}

// id3v23Dropped are the ID3v2.3 frames TagLib reads as unknown frames marked
// for discarding; TDAT and TIME survive when merged into the date
// (mergedDate).
var id3v23Dropped = []string{"EQUA", "RVAD", "TDAT", "TIME", "TRDA", "TSIZ"}

// id3v22Kept are the ID3v2.2 frames TagLib converts to a version 2.4 frame
// (its conversion table, and PIC → APIC); it drops every other one (its id
// stays 3 characters long, which a 2.4 tag cannot hold).
var id3v22Kept = []string{
	"BUF", "CNT", "COM", "CRA", "ETC", "GEO", "IPL", "MCI", "MLL", "POP", "REV", "SLT", "STC",
	"TAL", "TBP", "TCM", "TCO", "TCP", "TCR", "TDY", "TEN", "TFT", "TKE", "TLA", "TLE", "TMT",
	"TOA", "TOF", "TOL", "TOR", "TOT", "TP1", "TP2", "TP3", "TP4", "TPA", "TPB", "TRC", "TRD",
	"TRK", "TS2", "TSA", "TSC", "TSP", "TSS", "TST", "TT1", "TT2", "TT3", "TXT", "TXX", "TYE",
	"UFI", "ULT", "WAF", "WAR", "WAS", "WCM", "WCP", "WPB", "WXX",
	"PCS", "TCT", "TDR", "TDS", "TID", "WFD", "MVN", "MVI", "GP1", "PIC",
}

// lostID3v2Frames returns, sorted and without repeats, the ids of the frames
// of t that TagLib would drop when it saves the tag as version 2.4 (none for
// a version 2.4 tag):
//
//   - 2.3: EQUA, RVAD, TRDA, TSIZ; TDAT and TIME unless merged into the date;
//   - 2.2: every frame without a 2.4 equivalent (id3v22Kept);
//   - 2.3 with an extended header: every frame, since TagLib reads the
//     extended header's size as a 2.4 one and finds no frames after it.
func lostID3v2Frames(t *id3Tag) []string {
	if t == nil || t.major == 4 {
		return nil
	}
	dateOK, timeOK := mergedDate(t.frames)
	var lost []string
	for _, f := range t.frames {
		switch {
		case t.extHdr:
		case t.major == 2 && !slices.Contains(id3v22Kept, f.id):
		case t.major == 3 && slices.Contains(id3v23Dropped, f.id) &&
			!(f.id == "TDAT" && dateOK) && !(f.id == "TIME" && timeOK):
		default:
			continue
		}
		lost = append(lost, f.id)
	}
	slices.Sort(lost)
	return slices.Compact(lost)
}

// mergedDate tells whether TagLib merges the TDAT frame (day and month) and
// the TIME frame of a version 2.3 tag into the date read from TYER. It does
// when there is exactly one TYER (and no TDRC) whose one value is 4
// characters long and exactly one TDAT whose text is 4 characters long; TIME
// then when there is exactly one and its text is 4 characters long.
func mergedDate(frames []id3Frame) (date, time bool) {
	var tyer, tdat, ttime []id3Frame
	for _, f := range frames {
		switch f.id {
		case "TYER", "TDRC":
			tyer = append(tyer, f)
		case "TDAT":
			tdat = append(tdat, f)
		case "TIME":
			ttime = append(ttime, f)
		}
	}
	if len(tyer) != 1 || tyer[0].id != "TYER" || len(tdat) != 1 {
		return false, false
	}
	year := id3Fields(tyer[0].data)
	if len(year) != 1 || runeLen(year[0]) != 4 || runeLen(id3String(tdat[0].data)) != 4 {
		return false, false
	}
	return true, len(ttime) == 1 && runeLen(id3String(ttime[0].data)) == 4
}

func runeLen(s string) int { return len([]rune(s)) }

// id3Fields decodes the content of a text frame (encoding byte, then the
// values separated by NUL) into its non-empty values, as TagLib does.
func id3Fields(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	var out []string
	for _, s := range strings.Split(id3Decode(data[0], data[1:]), "\x00") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// id3String decodes the content of a text frame as one string that ends at
// the first NUL (TagLib reads TDAT and TIME so).
func id3String(data []byte) string {
	if len(data) == 0 {
		return ""
	}
	s := id3Decode(data[0], data[1:])
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s
}

// id3Decode decodes b in ID3v2 text encoding enc (0 Latin-1, 1 UTF-16 with a
// byte order mark, 2 UTF-16BE, 3 UTF-8).
func id3Decode(enc byte, b []byte) string {
	switch enc {
	case 1, 2:
		le := false
		if enc == 1 && len(b) >= 2 {
			switch {
			case b[0] == 0xff && b[1] == 0xfe:
				le, b = true, b[2:]
			case b[0] == 0xfe && b[1] == 0xff:
				b = b[2:]
			}
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			if le {
				u[i] = binary.LittleEndian.Uint16(b[2*i:])
			} else {
				u[i] = binary.BigEndian.Uint16(b[2*i:])
			}
		}
		return string(utf16.Decode(u))
	case 3:
		return string(b)
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// Format flags of ID3v2 frames (the second flag byte).
const (
	id3v23Compressed = 0x80
	id3v23Encrypted  = 0x40
	id3v23Grouped    = 0x20
	id3v24Grouped    = 0x40
	id3v24Compressed = 0x08
	id3v24Encrypted  = 0x04
	id3v24LengthInd  = 0x01 // data length indicator
)

// flaggedID3v2Frames returns, in file order, the frames of t that TagLib
// would not save whole because of their format flags, each as its id and
// why ("TIT2 (grouped)"): grouped and encrypted frames (2.3 and 2.4), and
// 2.4 frames compressed without a data length indicator.
func flaggedID3v2Frames(t *id3Tag) []string {
	if t == nil {
		return nil
	}
	var out []string
	for _, f := range t.frames {
		var why string
		switch {
		case t.major == 3 && f.format&id3v23Grouped != 0, t.major == 4 && f.format&id3v24Grouped != 0:
			why = "grouped"
		case t.major == 3 && f.format&id3v23Encrypted != 0, t.major == 4 && f.format&id3v24Encrypted != 0:
			why = "encrypted"
		case t.major == 4 && f.format&id3v24Compressed != 0 && f.format&id3v24LengthInd == 0:
			why = "compressed without a data length indicator"
		default:
			continue
		}
		out = append(out, f.id+" ("+why+")")
	}
	return out
}

// checkID3v2 fails with an error wrapping ErrUnsupported when the file open
// as f starts with an ID3v2 tag that TagLib would not save whole (see
// lostID3v2Frames and flaggedID3v2Frames).
func checkID3v2(f io.ReaderAt) error {
	t, err := readID3v2(f)
	if err != nil {
		return fmt.Errorf("read ID3v2 tag: %w", err)
	}
	if lost := lostID3v2Frames(t); len(lost) > 0 {
		return fmt.Errorf("%w: ID3v2.%d frames %s would be lost (TagLib would drop them saving the tag as ID3v2.4)",
			ErrUnsupported, t.major, strings.Join(lost, ", "))
	}
	if flagged := flaggedID3v2Frames(t); len(flagged) > 0 {
		return fmt.Errorf("%w: ID3v2.%d frames %s would be damaged (TagLib saves frames without their format flags and does not undo these)",
			ErrUnsupported, t.major, strings.Join(flagged, ", "))
	}
	return nil
}

// Package tagwrite writes Nomarr's tags into audio files and reads them back
// (docs/design.md §9 step 5), with TagLib's C++ API through a small cgo shim
// (shim.cpp; TagLib's C binding cannot write TXXX frames or MP4 free-form
// atoms). It needs libtag1-dev and pkg-config at build time (scripts/deps.sh);
// built without cgo, or with the notaglib build tag, Read and Write fail with
// ErrNoTagLib.
//
// # Names
//
// A tag key is given without namespace (as core/tags produces it, e.g.
// "mood-strict", "happy_musicnn_mood_happy") and must match [a-z0-9_-]+. In
// the file it is:
//
//   - MP3: an ID3v2.4 TXXX frame with description "nom:<key>";
//   - MP4/M4A: the free-form atom "----:com.apple.iTunes:nom:<key>";
//   - FLAC, Ogg Vorbis, Opus, Ogg FLAC: the Vorbis comment "NOM_<KEY>", the
//     key upper-cased with every character outside [A-Z0-9_] mapped to '_'.
//
// Tags under these names are ours: Write removes those not in the new set and
// touches nothing else — other tags, pictures and audio are left as they are
// (TagLib rewrites only the tag blocks). Two normalisations come with
// TagLib's saving: an MP3's ID3v2 tag is saved as version 2.4 (a 2.3 tag is
// converted; ID3v1 and APE tags are kept as they are), and Vorbis comment
// field names are saved upper-case ("title" → "TITLE"; the names are
// case-insensitive by the Vorbis specification, values are untouched).
//
// Where that conversion would lose something, Write refuses the file rather
// than lose another program's tags: TagLib drops the ID3v2.3 frames that
// have no 2.4 equivalent (EQUA, RVAD, TRDA, TSIZ; TDAT and TIME unless it
// can merge them into the date), every frame of a 2.3 tag with an extended
// header, and the ID3v2.2 frames it has no 2.4 name for. It also saves
// every frame without its format flags, which damages grouped and
// encrypted frames (2.3 and 2.4: their extra bytes become the content) and
// drops a 2.4 frame compressed without a data length indicator. Before
// writing, a walk of the ID3v2 tag at the start of the file (MP3, or FLAC
// with one in front) looks for them (id3v2.go); when there is one, Write
// fails with an error wrapping ErrUnsupported that names the frames
// ("ID3v2.3 frames RVAD, TSIZ would be lost …", "ID3v2.4 frames TIT2
// (grouped) would be damaged …") and the file is left untouched.
//
// A Vorbis comment (FLAC, Ogg Vorbis, Opus, Ogg FLAC) is read a second
// time before writing, by a strict parser of the raw block
// (vorbiscomment.go), and TagLib must have read every field it finds:
// TagLib skips a whole comment whose field count is larger than its block
// and drops fields with an invalid name, and would save the file without
// them. A damaged block, or any field TagLib did not read, fails the write
// with an error wrapping ErrTagsAtRisk and ErrUnsupported, the file left
// untouched; after the edit, the copy's raw comment must still hold every
// other program's field, values unchanged.
//
// ErrUnsupported, a permanent failure, also covers anything but a regular
// file (a FIFO, a device: refused before it is opened, never blocking) and a
// file TagLib cannot handle although its first bytes look like one of our
// formats (it cannot parse it, as an Ogg file with two interleaved Vorbis
// streams, or cannot save it, with no I/O error). A failed system call (a
// full disk, an I/O error) is not ErrUnsupported; the error wraps its errno.
//
// Read maps names back to keys: "nom:" and the MP4 prefix are removed; a
// Vorbis name is lower-cased and, where it is the Vorbis name of a key that
// core/tags produces (tags.Keys), replaced by that key (so "NOM_MOOD_STRICT"
// reads back as "mood-strict"). Every key round-trips through MP3 and MP4;
// through a Vorbis comment so does every key of core/tags and every other
// key without '-' whose Vorbis name is not that of a core/tags key (another
// key's '-' reads back as '_'; "mood_strict" reads back as "mood-strict").
// Several values under one name are joined with "; ".
//
// # Crash safety
//
// Write never modifies the original file. It copies it to a temporary file
// in the same directory (created with O_EXCL, named ".nomarr-tmp-*<ext>",
// given the original's permission bits and, where they differ, its owner and
// group), lets TagLib edit the copy, reads the copy's tags back to check
// them, fsyncs the copy, makes sure the original was not changed meanwhile
// (same inode, size, modification time and change time as when it was
// opened, else ErrModified: the change time catches an in-place edit that
// keeps the size and sets the modification time back), renames the copy
// over the original and fsyncs the directory. A process that could not give
// the copy the original's owner and group (not root, and the file belongs
// to another user or to a group the process is not in) gets ErrOwner, a
// kind of ErrReadOnly, before anything is copied. On any error
// the copy is removed and the original is untouched; a crash (or kill) leaves
// the original intact plus at most one stale copy. The write holds a lock
// on its copy until the copy is renamed or removed (package tempcopy); a
// copy whose lock can be taken belongs to no live write, and Write removes
// such copies from the directory before it writes (as a library scan does).
//
// TagLib's own file stream ignores write errors (TagLib 1.x), so the shim
// gives TagLib a stream of its own that reports every failed read or write
// with its errno: a full disk while TagLib edits the copy is an error that
// wraps syscall.ENOSPC, like one while copying.
//
// WriteIfSame adds a check at the start: the file opened must have the
// Stamp the caller took before it read the file (StampOf), else
// ErrModified and nothing is touched. A caller that computes tags from a
// file's audio so writes them only into that same content, never into a
// file replaced or edited since.
//
// Write follows a symbolic link and replaces its target. The rename gives the
// file a new inode: hard links to the old one keep the old content, and
// extended attributes and ACLs are not copied.
package tagwrite

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/nomarr/nomarr/adapters/tagwrite/tempcopy"
	"github.com/nomarr/nomarr/core/tags"
)

// Format is an audio container format Read and Write handle.
type Format int

// Formats, detected from the file's content (not its name).
const (
	MP3     Format = 1 // MPEG audio with ID3v2
	MP4     Format = 2 // MP4/M4A (AAC, ALAC)
	FLAC    Format = 3
	Vorbis  Format = 4 // Ogg Vorbis
	Opus    Format = 5 // Ogg Opus
	OggFLAC Format = 6
	WAV     Format = 7  // RIFF WAVE, tags in its ID3v2 chunk
	AIFF    Format = 8  // AIFF and AIFF-C, tags in the ID3v2 chunk
	WavPack Format = 9  // APEv2 tag
	APE     Format = 10 // Monkey's Audio, APEv2 tag
	ASF     Format = 11 // WMA (ASF container)
)

func (f Format) String() string {
	switch f {
	case MP3:
		return "MP3"
	case MP4:
		return "MP4"
	case FLAC:
		return "FLAC"
	case Vorbis:
		return "Ogg Vorbis"
	case Opus:
		return "Ogg Opus"
	case OggFLAC:
		return "Ogg FLAC"
	case WAV:
		return "WAV"
	case AIFF:
		return "AIFF"
	case WavPack:
		return "WavPack"
	case APE:
		return "Monkey's Audio"
	case ASF:
		return "WMA"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Errors.
var (
	// ErrUnsupported: the file is not in a format of this package (WAV, AIFF,
	// raw AAC, …), not audio at all, not a regular file, a file TagLib cannot
	// parse or save, or one whose ID3v2 tag TagLib cannot keep whole. The
	// same file fails the same way every time.
	ErrUnsupported = errors.New("tagwrite: unsupported audio format")
	// ErrReadOnly: the file or its directory is read-only (no write
	// permission bit at all, or not writable by this process; ErrOwner is
	// one kind). Write checks permission bits explicitly, so root does not
	// overwrite a file marked read-only either.
	ErrReadOnly = errors.New("tagwrite: read-only")
	// ErrModified: the original changed while Write prepared the copy (the
	// copy is discarded so that the other change is not lost), or the file
	// WriteIfSame opened is not the content it was given the stamp of.
	ErrModified = errors.New("tagwrite: file changed during the write")
	// ErrNoTagLib: built without cgo or with the notaglib tag.
	ErrNoTagLib = errors.New("tagwrite: built without TagLib (needs cgo and libtag1-dev)")
	// ErrInvalidTag: a key outside [a-z0-9_-]+, two keys with the same
	// Vorbis name, or a value that is not UTF-8 or contains NUL.
	ErrInvalidTag = errors.New("tagwrite: invalid tag")
)

// Name prefixes of our tags per format.
const (
	id3Prefix    = "nom:"
	mp4Prefix    = "----:com.apple.iTunes:nom:"
	vorbisPrefix = "NOM_"
)

// TempPrefix starts the name of Write's temporary copies (tempcopy.Is
// gives their whole naming).
const TempPrefix = tempcopy.Prefix

// testHookAfterCopy, when set (tests only), runs once the original has been
// copied to tmp and before TagLib edits the copy.
var testHookAfterCopy func(tmp string)

// Name families: how a format names our tags.
const (
	famID3    = iota // "nom:<key>": ID3v2 TXXX (MP3, WAV, AIFF), ASF attribute
	famMP4           // "----:com.apple.iTunes:nom:<key>"
	famVorbis        // "NOM_<KEY>": Vorbis comment, APEv2 item
)

func family(f Format) int {
	switch f {
	case MP3, WAV, AIFF, ASF:
		return famID3
	case MP4:
		return famMP4
	}
	return famVorbis
}

func prefix(f Format) string {
	switch family(f) {
	case famID3:
		return id3Prefix
	case famMP4:
		return mp4Prefix
	}
	return vorbisPrefix
}

// stdName is the name of the standard field (tags.FieldMood,
// tags.FieldGenre) in a file of format f.
func stdName(f Format, field string) string {
	mood := field == tags.FieldMood
	pick := func(m, g string) string {
		if mood {
			return m
		}
		return g
	}
	switch f {
	case MP3, WAV, AIFF:
		return pick("TMOO", "TCON")
	case MP4:
		return pick("----:com.apple.iTunes:MOOD", "\u00a9gen")
	case ASF:
		return pick("WM/Mood", "WM/Genre")
	}
	return pick("MOOD", "GENRE")
}

// stdNames are the names of tags.StandardFields in format f.
func stdNames(f Format) []string {
	out := make([]string, len(tags.StandardFields))
	for i, fld := range tags.StandardFields {
		out[i] = stdName(f, fld)
	}
	return out
}

// VorbisName is the Vorbis comment name of key: "NOM_" and the key upper
// case, characters outside [A-Z0-9_] mapped to '_'.
func VorbisName(key string) string {
	b := []byte(strings.ToUpper(key))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return vorbisPrefix + string(b)
}

// FileName is the name of key's tag in a file of format f.
func FileName(f Format, key string) string {
	switch family(f) {
	case famID3:
		return id3Prefix + key
	case famMP4:
		return mp4Prefix + key
	}
	return VorbisName(key)
}

// knownVorbis maps the Vorbis names of the keys of core/tags back to them.
var knownVorbis = func() map[string]string {
	m := map[string]string{}
	for _, k := range append(tags.Keys(), tags.WrittenKeys()...) {
		m[VorbisName(k)] = k
	}
	return m
}()

// keyOf is the key of a name read from a file of format f.
func keyOf(f Format, name string) string {
	switch family(f) {
	case famID3:
		return strings.TrimPrefix(name, id3Prefix)
	case famMP4:
		return strings.TrimPrefix(name, mp4Prefix)
	}
	up := strings.ToUpper(name)
	if k, ok := knownVorbis[up]; ok {
		return k
	}
	return strings.ToLower(strings.TrimPrefix(up, vorbisPrefix))
}

// readForm is t as Read returns it from a file of format f: the same, but
// for the keys whose Vorbis name does not map back (a '-' outside the keys of
// core/tags reads back as '_').
func readForm(f Format, t map[string]string) map[string]string {
	out := make(map[string]string, len(t))
	for k, v := range t {
		out[keyOf(f, FileName(f, k))] = v
	}
	return out
}

func validKey(k string) bool {
	if k == "" || len(k) > 200 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validate(t map[string]string) error {
	vorbis := make(map[string]string, len(t))
	for k, v := range t {
		if !validKey(k) {
			return fmt.Errorf("%w: key %q: want [a-z0-9_-]+, at most 200 bytes", ErrInvalidTag, k)
		}
		if other, ok := vorbis[VorbisName(k)]; ok {
			return fmt.Errorf("%w: keys %q and %q have the same Vorbis comment name %s", ErrInvalidTag, k, other, VorbisName(k))
		}
		vorbis[VorbisName(k)] = k
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%w: value of %q is not UTF-8 text without NUL", ErrInvalidTag, k)
		}
	}
	return nil
}

// Detect returns the format of the file at path from its content. Anything
// but a regular file is ErrUnsupported (and never opened in a way that
// blocks).
func Detect(path string) (Format, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return 0, fmt.Errorf("tagwrite: %w", err)
	}
	defer f.Close()
	return detect(f)
}

func detect(f *os.File) (Format, error) {
	head := make([]byte, 4096)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return 0, fmt.Errorf("tagwrite: detect %s: %w", f.Name(), err)
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("ID3")) && len(head) >= 10:
		// Skip the ID3v2 tag: FLAC files sometimes carry one in front.
		size := int64(head[6]&0x7f)<<21 | int64(head[7]&0x7f)<<14 | int64(head[8]&0x7f)<<7 | int64(head[9]&0x7f)
		off := 10 + size
		if head[5]&0x10 != 0 {
			off += 10 // footer
		}
		magic := make([]byte, 4)
		if m, _ := f.ReadAt(magic, off); m == 4 {
			switch string(magic) {
			case "fLaC":
				return FLAC, nil
			case "MAC ":
				return APE, nil
			case "wvpk":
				return WavPack, nil
			}
		}
		return MP3, nil
	case bytes.HasPrefix(head, []byte("fLaC")):
		return FLAC, nil
	case len(head) >= 12 && string(head[4:8]) == "ftyp":
		return MP4, nil
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE":
		return WAV, nil
	case len(head) >= 12 && string(head[:4]) == "FORM" && (string(head[8:12]) == "AIFF" || string(head[8:12]) == "AIFC"):
		return AIFF, nil
	case bytes.HasPrefix(head, []byte("wvpk")):
		return WavPack, nil
	case bytes.HasPrefix(head, []byte("MAC ")):
		return APE, nil
	case bytes.HasPrefix(head, asfHeader):
		return ASF, nil
	case bytes.HasPrefix(head, []byte("OggS")) && len(head) >= 27:
		// The first packet follows the segment table of the first page.
		p := 27 + int(head[26])
		if p >= len(head) {
			break
		}
		pkt := head[p:]
		switch {
		case bytes.HasPrefix(pkt, []byte("\x01vorbis")):
			return Vorbis, nil
		case bytes.HasPrefix(pkt, []byte("OpusHead")):
			return Opus, nil
		case bytes.HasPrefix(pkt, []byte("\x7fFLAC")):
			return OggFLAC, nil
		}
	case len(head) >= 2 && head[0] == 0xff && head[1]&0xe0 == 0xe0 && head[1]>>1&3 != 0:
		// MPEG audio frame sync, layer I–III (layer bits 00 is ADTS AAC).
		return MP3, nil
	}
	return 0, fmt.Errorf("%w: %s", ErrUnsupported, f.Name())
}

// asfHeader is the GUID of the ASF Header Object that starts a WMA file.
var asfHeader = []byte{0x30, 0x26, 0xb2, 0x75, 0x8e, 0x66, 0xcf, 0x11, 0xa6, 0xd9, 0x00, 0xaa, 0x00, 0x62, 0xce, 0x6c}

// Read returns the tags of ours in the file at path, keys in canonical form
// (see the package comment); an empty map when there are none. Anything but
// a regular file is ErrUnsupported, and so is a file TagLib cannot parse.
func Read(path string) (map[string]string, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("tagwrite: read %s: %w", path, err)
	}
	defer f.Close()
	format, err := detect(f)
	if err != nil {
		return nil, err
	}
	t, _, err := readOpen(f, format)
	if err != nil {
		return nil, fmt.Errorf("tagwrite: read %s (%s): %w", path, format, err)
	}
	return t, nil
}

// ReadStandard returns the values of the standard fields (tags.FieldMood,
// tags.FieldGenre) in the file at path, the user's and Nomarr's, in the
// file's order; a field without values is absent.
func ReadStandard(path string) (map[string][]string, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("tagwrite: read %s: %w", path, err)
	}
	defer f.Close()
	format, err := detect(f)
	if err != nil {
		return nil, err
	}
	_, std, err := readOpen(f, format)
	if err != nil {
		return nil, fmt.Errorf("tagwrite: read %s (%s): %w", path, format, err)
	}
	return std, nil
}

// readOpen reads our tags (several values of one name joined by
// tags.ListSep) and the standard fields' values.
func readOpen(f *os.File, format Format) (map[string]string, map[string][]string, error) {
	names := stdNames(format)
	recs, err := taglibRead(f, format, prefix(format), names)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string]string, len(recs))
	std := map[string][]string{}
	for _, r := range recs {
		if i := slices.Index(names, r[0]); i >= 0 {
			fld := tags.StandardFields[i]
			std[fld] = append(std[fld], r[1])
			continue
		}
		k := keyOf(format, r[0])
		if old, ok := out[k]; ok {
			out[k] = old + tags.ListSep + r[1]
		} else {
			out[k] = r[1]
		}
	}
	return out, std, nil
}

// Write makes the tags of ours in the file at path exactly t: it adds or
// replaces the tags of t and removes our tags that are not in t, crash-safely
// (see the package comment). When the file already holds exactly t, Write
// leaves it alone. An empty t removes all our tags. It writes no standard
// field, and takes out of them what Nomarr wrote there before (WriteAll
// with no standard values).
func Write(path string, t map[string]string) error {
	return write(path, t, nil, nil)
}

// Standard is what a write puts into the standard fields: by field
// (tags.FieldMood, tags.FieldGenre), Nomarr's values, as tags.Standard
// gives them. A field absent, or present with no values, keeps only the
// user's values.
type Standard map[string][]string

// WriteAll is Write, and also edits the standard fields as std says (see
// the package comment, "Standard fields"): in each, the values Nomarr wrote
// before (recorded under tags.WrittenKey) are replaced by std's, and the
// user's values are kept as they are, in their order.
func WriteAll(path string, t map[string]string, std Standard) error {
	return write(path, t, std, nil)
}

// write is WriteAll; with want, it first makes sure that the file it
// opened has that stamp (WriteIfSame).
func write(path string, t map[string]string, std Standard, want *Stamp) (err error) {
	if err := validate(t); err != nil {
		return err
	}
	if err := validateStandard(t, std); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("tagwrite: write %s: %w", path, err)
	}
	wrap := func(err error) error { return fmt.Errorf("tagwrite: write %s: %w", path, err) }

	orig, st, err := openRegular(real)
	if err != nil {
		return wrap(err)
	}
	defer orig.Close()
	if want != nil {
		// Before anything else: even "nothing to write" would claim the
		// tags are in the content the caller read.
		if d := stampOf(st).differences(*want); d != "" {
			return wrap(fmt.Errorf("%w: not the content stamped (%s)", ErrModified, d))
		}
	}
	dir := filepath.Dir(real)
	format, err := detect(orig)
	if err != nil {
		return err
	}
	cur, held, err := readOpen(orig, format)
	if err != nil {
		return wrap(fmt.Errorf("read current tags (%s): %w", format, err))
	}
	t, edits := planStandard(t, std, cur, held)
	wantRead := readForm(format, t)
	if maps.Equal(cur, wantRead) && !anyChange(edits) {
		return nil // nothing to write: a read-only file that holds them is fine
	}
	if err := checkWritable(real, st, dir); err != nil {
		return wrap(err)
	}
	if err := checkID3v2Of(orig, format); err != nil {
		return wrap(err)
	}
	others, err := checkComment(orig, format)
	if err != nil {
		return wrap(err)
	}

	_, _ = tempcopy.RemoveIn(dir) // best effort: what is left waits for the next write or scan
	tmp, err := tempcopy.Create(dir, tempcopy.Ext(real))
	if err != nil {
		return wrap(fmt.Errorf("create temporary copy: %w", err))
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmpName)
		}
		tmp.Release() // once the copy is renamed or removed
	}()
	if err := copyInto(tmp.File, orig, st); err != nil {
		return wrap(fmt.Errorf("copy to %s: %w", filepath.Base(tmpName), err))
	}
	if testHookAfterCopy != nil {
		testHookAfterCopy(tmpName)
	}

	recs := make([][2]string, 0, len(t))
	for _, k := range slices.Sorted(maps.Keys(t)) { // a deterministic layout
		recs = append(recs, [2]string{FileName(format, k), t[k]})
	}
	if err := taglibWrite(tmp.File, format, prefix(format), recs, stdRecords(format, edits)); err != nil {
		return wrap(fmt.Errorf("edit copy (%s): %w", format, err))
	}
	back, backStd, err := readOpen(tmp.File, format)
	if err != nil {
		return wrap(fmt.Errorf("read back copy (%s): %w", format, err))
	}
	if !maps.Equal(back, wantRead) {
		return wrap(fmt.Errorf("copy reads back %d tags of ours, not the %d written", len(back), len(wantRead)))
	}
	for _, fld := range tags.StandardFields {
		if wantVals := edits[fld].Result; !sameValues(format, backStd[fld], wantVals) {
			return wrap(fmt.Errorf("copy's %s field reads back %d values, not the %d written: %w",
				stdName(format, fld), len(backStd[fld]), len(wantVals), ErrUnsupported))
		}
	}
	if err := keptOthers(tmp.File, format, others, vorbisEdits(format, edits)); err != nil {
		return wrap(err)
	}
	if err := tmp.Sync(); err != nil {
		return wrap(fmt.Errorf("fsync copy: %w", err))
	}
	if err := tmp.Close(); err != nil {
		return wrap(fmt.Errorf("close copy: %w", err))
	}
	now, err := os.Stat(real)
	if err != nil {
		return wrap(err)
	}
	if !unchanged(st, now) {
		return wrap(ErrModified)
	}
	if err := os.Rename(tmpName, real); err != nil {
		return wrap(fmt.Errorf("replace original: %w", err))
	}
	// The new content is in place; a failed directory fsync only means the
	// rename might not survive a power cut (the original would then remain).
	if err := syncDir(dir); err != nil {
		return wrap(fmt.Errorf("fsync directory (the file is written): %w", err))
	}
	return nil
}

const wOK = 2 // access(2) W_OK

// Writable reports, without opening the file for writing, whether Write
// could replace the file at path (through a symbolic link, its target):
// an error matching ErrReadOnly when the file, its folder or the file
// system is read-only, or when this process could not keep the file's
// owner or group (ErrOwner: not root, and the file belongs to another
// user or group); one matching ErrUnsupported when the file is not in a
// format this package writes (Detect: WAV, AIFF, WMA, …); another error
// when the file cannot be looked at. A job asks it before the expensive
// part of its work, so that a read-only library, or a file whose format
// cannot hold the tags, fails at once instead of after its analysis.
func Writable(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("tagwrite: %s: %w", path, err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("tagwrite: %s: %w", path, err)
	}
	if err := checkWritable(real, st, filepath.Dir(real)); err != nil {
		return fmt.Errorf("tagwrite: write %s: %w", path, err)
	}
	if _, err := Detect(real); err != nil {
		return err
	}
	return nil
}

// checkWritable fails with ErrReadOnly when the file or the directory has no
// write permission bit at all, or access(2) says this process may not write
// them (a read-only file system included), and with ErrOwner (a kind of
// ErrReadOnly) when the copy could not keep the file's owner or group.
func checkWritable(path string, st fs.FileInfo, dir string) error {
	if st.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("%w: file mode %v has no write permission", ErrReadOnly, st.Mode().Perm())
	}
	if err := syscall.Access(path, wOK); err != nil {
		return fmt.Errorf("%w: file not writable: %w", ErrReadOnly, err)
	}
	dst, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if dst.Mode().Perm()&0o222 == 0 {
		return fmt.Errorf("%w: directory mode %v has no write permission", ErrReadOnly, dst.Mode().Perm())
	}
	if err := syscall.Access(dir, wOK|1); err != nil {
		return fmt.Errorf("%w: directory not writable: %w", ErrReadOnly, err)
	}
	return checkOwner(st, dst)
}

// copyInto copies orig into tmp and gives tmp the original's permission bits
// and, where they differ, its owner and group (an error wrapping ErrOwner
// when the process may not).
func copyInto(tmp, orig *os.File, st fs.FileInfo) error {
	if _, err := io.Copy(tmp, io.NewSectionReader(orig, 0, st.Size())); err != nil {
		return err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		return err
	}
	ost, ok1 := st.Sys().(*syscall.Stat_t)
	tst, err := tmp.Stat()
	if err != nil {
		return err
	}
	nst, ok2 := tst.Sys().(*syscall.Stat_t)
	if ok1 && ok2 && (ost.Uid != nst.Uid || ost.Gid != nst.Gid) {
		if err := tmp.Chown(int(ost.Uid), int(ost.Gid)); err != nil {
			return chownError(ost.Uid, ost.Gid, err)
		}
		// chown clears set-id bits; restore the permission bits.
		if err := tmp.Chmod(st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

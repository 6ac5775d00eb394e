package tagwrite

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nomarr/nomarr/core/tags"
)

// validateStandard refuses a write whose t holds a key that records
// Nomarr's standard values (the write computes those itself), a standard
// field not in tags.StandardFields, and a value that is empty, not UTF-8,
// holds NUL or the list separator of the record.
func validateStandard(t map[string]string, std Standard) error {
	for _, k := range tags.WrittenKeys() {
		if _, ok := t[k]; ok {
			return fmt.Errorf("%w: key %q is kept by the write itself", ErrInvalidTag, k)
		}
	}
	for fld, vals := range std {
		if !slices.Contains(tags.StandardFields, fld) {
			return fmt.Errorf("%w: standard field %q: want %s", ErrInvalidTag, fld, strings.Join(tags.StandardFields, " or "))
		}
		for _, v := range vals {
			if v == "" || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 || strings.Contains(v, tags.ListSep) {
				return fmt.Errorf("%w: %s value %q: want UTF-8 text, not empty, without NUL or %q",
					ErrInvalidTag, fld, v, tags.ListSep)
			}
		}
	}
	return nil
}

// planStandard decides the edit of every standard field (tags.EditField)
// from the values the file holds (held), what Nomarr recorded writing there
// (cur, our tags in the file) and std, and returns t with the records of
// what Nomarr's values are afterwards (tags.WrittenKey; absent when none).
func planStandard(t map[string]string, std Standard, cur map[string]string, held map[string][]string) (map[string]string, map[string]tags.FieldEdit) {
	out := maps.Clone(t)
	if out == nil {
		out = map[string]string{}
	}
	edits := make(map[string]tags.FieldEdit, len(tags.StandardFields))
	for _, fld := range tags.StandardFields {
		e := tags.EditField(held[fld], tags.ParseWritten(cur[tags.WrittenKey(fld)]), std[fld])
		edits[fld] = e
		if len(e.Written) > 0 {
			out[tags.WrittenKey(fld)] = strings.Join(e.Written, tags.ListSep)
		}
	}
	return out, edits
}

func anyChange(edits map[string]tags.FieldEdit) bool {
	for _, e := range edits {
		if e.Changes() {
			return true
		}
	}
	return false
}

// stdRecords are the shim's records of edits (shim.h): "-<name>" per value
// removed, "+<name>" per value added.
func stdRecords(f Format, edits map[string]tags.FieldEdit) [][2]string {
	var recs [][2]string
	for _, fld := range tags.StandardFields {
		e, name := edits[fld], stdName(f, fld)
		for _, v := range e.Remove {
			recs = append(recs, [2]string{"-" + name, v})
		}
		for _, v := range e.Add {
			recs = append(recs, [2]string{"+" + name, v})
		}
	}
	return recs
}

// vorbisEdits are the edits by Vorbis comment field name, for the check
// that the copy keeps every other field (keptOthers); nil for other
// formats.
func vorbisEdits(f Format, edits map[string]tags.FieldEdit) map[string]tags.FieldEdit {
	if family(f) != famVorbis {
		return nil
	}
	out := make(map[string]tags.FieldEdit, len(edits))
	for fld, e := range edits {
		out[stdName(f, fld)] = e
	}
	return out
}

// sameValues compares the values a field reads back with those planned. A
// WMA field of several values is compared as a multiset: TagLib (1.13)
// saves the first value of an attribute in the Extended Content
// Description object and the others in the Metadata Library object, which
// its reader (and others) meet first, so their order is not kept.
func sameValues(f Format, got, want []string) bool {
	if f == ASF {
		got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	}
	return slices.Equal(got, want)
}

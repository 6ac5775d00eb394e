package tags

import (
	"fmt"
	"slices"
	"strings"
)

// Standard fields: the fields every player reads, written next to the nom
// keys (config standard_tags). In a file they are the format's own mood and
// genre fields (ID3v2.4 TMOO and TCON, Vorbis and APE MOOD and GENRE, MP4
// ----:com.apple.iTunes:MOOD and ©gen, ASF WM/Mood and WM/Genre), several
// values the way the format holds a list.
const (
	// FieldMood holds the mood labels of the tier Options.MoodTier.
	FieldMood = "mood"
	// FieldGenre holds the genre names of the top tags (Genres).
	FieldGenre = "genre"
)

// StandardFields are the standard fields, in the order they are written.
var StandardFields = []string{FieldMood, FieldGenre}

// Genres maps the MSD top-50 labels that name a genre to the name written
// into GENRE. Only these reach GENRE: the other labels describe an era
// ("00s", "60s" … "90s", "oldies"), the voice ("female vocalists", "male
// vocalists", "female vocalist"), an instrument or arrangement
// ("instrumental", "acoustic", "guitar") or a mood or liking ("beautiful",
// "Mellow", "chill", "party", "sexy", "catchy", "sad", "happy"), which a
// player's genre list would show as genres. "chillout" (chill-out music),
// "easy listening" and "experimental" are genres by that name. The names
// are title case, as genre fields usually hold them; "rnb" is written "R&B".
var Genres = map[string]string{
	"rock": "Rock", "pop": "Pop", "alternative": "Alternative", "indie": "Indie", "electronic": "Electronic",
	"dance": "Dance", "alternative rock": "Alternative Rock", "jazz": "Jazz", "metal": "Metal",
	"chillout": "Chillout", "classic rock": "Classic Rock", "soul": "Soul", "indie rock": "Indie Rock",
	"electronica": "Electronica", "folk": "Folk", "punk": "Punk", "blues": "Blues", "hard rock": "Hard Rock",
	"ambient": "Ambient", "experimental": "Experimental", "Hip-Hop": "Hip-Hop", "country": "Country",
	"easy listening": "Easy Listening", "funk": "Funk", "electro": "Electro", "heavy metal": "Heavy Metal",
	"Progressive rock": "Progressive Rock", "rnb": "R&B", "indie pop": "Indie Pop", "House": "House",
}

// WrittenKey is the nom key that records the values Nomarr put into the
// standard field: "mood-written", "genre-written" (values joined by
// ListSep). A later write removes exactly these values from the field
// before adding its own; the user's values are never touched.
func WrittenKey(field string) string { return field + "-written" }

// WrittenKeys are the keys WrittenKey gives for StandardFields.
func WrittenKeys() []string {
	out := make([]string, len(StandardFields))
	for i, f := range StandardFields {
		out[i] = WrittenKey(f)
	}
	return out
}

// DefaultStandardTags is standard_tags by default: MOOD only. GENRE is
// opt-in, as it adds to a field the user curates.
var DefaultStandardTags = []string{FieldMood}

// validateStandard checks StandardTags and MoodTier.
func (o Options) validateStandard() error {
	for i, f := range o.StandardTags {
		if !slices.Contains(StandardFields, f) {
			return fmt.Errorf("tags: standard tag %q: want %s", f, strings.Join(StandardFields, " or "))
		}
		if slices.Contains(o.StandardTags[:i], f) {
			return fmt.Errorf("tags: standard tag %q listed twice", f)
		}
	}
	if slices.Contains(o.StandardTags, FieldMood) &&
		!slices.Contains([]string{KeyMoodStrict, KeyMoodRegular, KeyMoodLoose}, o.MoodTier) {
		return fmt.Errorf("tags: mood tier %q: want %s, %s or %s", o.MoodTier, KeyMoodStrict, KeyMoodRegular, KeyMoodLoose)
	}
	return nil
}

// Standard returns, for each field of opt.StandardTags, the values Nomarr
// writes into it, taken from all (Derive's or Reuse's result): for
// FieldMood the labels of the list opt.MoodTier, for FieldGenre the Genres
// names of top_tags' genre labels, in top_tags' order. A field with nothing
// to write is present with no values: what Nomarr wrote there before goes.
// Fields not in opt.StandardTags are absent; Nomarr's earlier values in
// them go too.
func Standard(all map[string]string, opt Options) (map[string][]string, error) {
	if err := opt.validateStandard(); err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(opt.StandardTags))
	for _, f := range opt.StandardTags {
		var vals []string
		switch f {
		case FieldMood:
			vals = splitList(all[opt.MoodTier])
		case FieldGenre:
			for _, l := range splitList(all[KeyTopTags]) {
				if g, ok := Genres[l]; ok && !slices.Contains(vals, g) {
					vals = append(vals, g)
				}
			}
		}
		out[f] = vals
	}
	return out, nil
}

// splitList splits a list value joined by ListSep; "" is no values.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ListSep)
}

// FieldEdit is how a write changes one standard field.
type FieldEdit struct {
	// Remove are the values Nomarr wrote before that the field still
	// holds; every occurrence goes.
	Remove []string
	// Add are the values appended after the ones kept.
	Add []string
	// Result is the field's values after the edit.
	Result []string
	// Written is what the field's WrittenKey records afterwards: the
	// values of Nomarr's the field holds after the edit.
	Written []string
}

// Changes reports whether the edit changes the field.
func (e FieldEdit) Changes() bool { return len(e.Remove) > 0 || len(e.Add) > 0 }

// EditField decides the edit of a standard field that holds held, when
// Nomarr recorded written as its own values there (WrittenKey) and now
// writes want:
//
//   - the values of held that are in written but not in want go (all
//     occurrences): Nomarr put them there; those in want stay where they
//     are, so that the same write again changes nothing;
//   - every other value of held stays, in its order, whatever it holds
//     (empty, long, odd): the user's;
//   - the values of want that the field does not already hold (compared
//     case-insensitively, so "rock" of the user's is not doubled by "Rock")
//     are appended, each once;
//   - Written, the new record, lists want's values that are Nomarr's: kept
//     or appended. A value the user holds is not recorded, so it is never
//     removed later.
//
// A value the user typed that equals one Nomarr recorded cannot be told
// apart from it and is treated as Nomarr's.
func EditField(held, written, want []string) FieldEdit {
	var e FieldEdit
	ours := map[string]bool{}
	for _, v := range held {
		if slices.Contains(written, v) {
			if !slices.Contains(want, v) {
				if !slices.Contains(e.Remove, v) {
					e.Remove = append(e.Remove, v)
				}
				continue
			}
			ours[v] = true
		}
		e.Result = append(e.Result, v)
	}
	for _, w := range want {
		if w == "" || slices.Contains(e.Written, w) {
			continue
		}
		if ours[w] {
			e.Written = append(e.Written, w)
			continue
		}
		if slices.ContainsFunc(e.Result, func(v string) bool { return strings.EqualFold(v, w) }) {
			continue
		}
		e.Result = append(e.Result, w)
		e.Add = append(e.Add, w)
		e.Written = append(e.Written, w)
	}
	return e
}

// ParseWritten is the list of values a WrittenKey's value records.
func ParseWritten(s string) []string { return splitList(s) }

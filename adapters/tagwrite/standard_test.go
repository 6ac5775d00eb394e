package tagwrite

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/tags"
)

// userValues puts the user's own MOOD and GENRE values into the file, odd
// ones included (an empty value, a long one, hundreds of values), through
// the format's own fields.
func userValues(t *testing.T, path string, f Format, mood, genre []string) {
	t.Helper()
	var recs [][2]string
	for _, v := range mood {
		recs = append(recs, [2]string{"+" + stdName(f, tags.FieldMood), v})
	}
	for _, v := range genre {
		recs = append(recs, [2]string{"+" + stdName(f, tags.FieldGenre), v})
	}
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if err := taglibWrite(fh, f, prefix(f), nil, recs); err != nil {
		t.Fatal(err)
	}
}

// TestStandardFields writes MOOD and GENRE into every format next to the
// user's own values, replaces Nomarr's values by later writes and takes
// them out, and reads every step back with TagLib, mutagen and ffprobe:
// the user's values stay, in their order, the audio and the other tags
// are unchanged.
func TestStandardFields(t *testing.T) {
	needTools(t)
	long := strings.Repeat("très long ", 400)
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("g%03d", i)
	}
	userMood := []string{"Mélancolie", "", long}
	userGenre := append([]string{"Jazz", "rock"}, many...)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := makeFile(t, dir, kind)
			f := kindFormat(kind)
			userValues(t, path, f, userMood, userGenre)
			held, err := ReadStandard(path)
			if err != nil {
				t.Fatal(err)
			}
			// Some formats cannot hold an empty value in a list: the
			// user's values are whatever the file reads back now.
			um, ug := held[tags.FieldMood], held[tags.FieldGenre]
			if len(ug) != len(userGenre) || !slices.Contains(um, long) {
				t.Fatalf("fixture: mood %d values, genre %d values", len(um), len(ug))
			}
			before := snap(t, path, f)
			mBefore := mutagenTags(t, path)
			otherThanStd := func(m map[string][]string) map[string]string {
				o := mutagenOthers(f, m)
				for _, fld := range tags.StandardFields {
					delete(o, mutagenStdName(f, fld))
				}
				return o
			}

			step := func(name string, nom map[string]string, std Standard, wantMood, wantGenre []string, written map[string]string) {
				t.Helper()
				if err := WriteAll(path, nom, std); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				after := snap(t, path, f)
				if after.decoded != before.decoded || after.packets != before.packets || after.picture != before.picture {
					t.Errorf("%s: audio or picture changed", name)
				}
				got, err := ReadStandard(path)
				if err != nil {
					t.Fatal(err)
				}
				mt := mutagenTags(t, path)
				for fld, want := range map[string][]string{tags.FieldMood: wantMood, tags.FieldGenre: wantGenre} {
					if !sameValues(f, got[fld], want) {
						t.Errorf("%s: TagLib reads %s %q…, want %q…", name, fld, head(got[fld]), head(want))
					}
					if m := mt[mutagenStdName(f, fld)]; !sameValues(f, m, want) {
						t.Errorf("%s: mutagen reads %s %q…, want %q…", name, fld, head(m), head(want))
					}
				}
				wantOurs := maps.Clone(nom)
				maps.Copy(wantOurs, written)
				if got := mutagenOurs(f, mt); !maps.Equal(got, wantOurs) {
					t.Errorf("%s: mutagen reads our tags %v, want %v", name, got, wantOurs)
				}
				if r, _ := Read(path); !maps.Equal(r, wantOurs) {
					t.Errorf("%s: Read = %v, want %v", name, r, wantOurs)
				}
				if o := otherThanStd(mt); !maps.Equal(o, otherThanStd(mBefore)) {
					t.Errorf("%s: other tags changed: %q", name, o)
				}
				noTemps(t, dir)
			}
			nom := map[string]string{"nom_version": "v1", "mood-regular": "happy; party"}
			// "rock" is the user's: "Rock" is not added, nor recorded.
			step("first", nom, Standard{tags.FieldMood: {"happy", "party"}, tags.FieldGenre: {"Rock", "Pop"}},
				append(slices.Clone(um), "happy", "party"), append(slices.Clone(ug), "Pop"),
				map[string]string{"mood-written": "happy; party", "genre-written": "Pop"})
			// The same write again leaves the file alone.
			st1, _ := os.Stat(path)
			if err := WriteAll(path, nom, Standard{tags.FieldMood: {"happy", "party"}, tags.FieldGenre: {"Rock", "Pop"}}); err != nil {
				t.Fatal(err)
			}
			if st2, _ := os.Stat(path); !os.SameFile(st1, st2) {
				t.Error("writing the same standard values again replaced the file")
			}
			step("second", nom, Standard{tags.FieldMood: {"sad"}},
				append(slices.Clone(um), "sad"), ug, map[string]string{"mood-written": "sad"})
			step("none", map[string]string{}, nil, um, ug, nil)
		})
	}
}

func head(v []string) []string {
	if len(v) > 4 {
		return v[:4]
	}
	return v
}

// TestStandardFieldsSeenByFFprobe: a file without values of the user's
// shows Nomarr's MOOD and GENRE in ffprobe (which shows the first value
// of an ID3v2 or APE list only, and a WAV's ID3v2 chunk only without a
// RIFF INFO chunk).
func TestStandardFieldsSeenByFFprobe(t *testing.T) {
	needTools(t)
	for _, kind := range kinds {
		if kind == "wav" {
			continue
		}
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := makeFile(t, dir, kind)
			f := kindFormat(kind)
			if err := WriteAll(path, map[string]string{"nom_version": "v"},
				Standard{tags.FieldMood: {"happy", "party"}, tags.FieldGenre: {"Rock", "Pop"}}); err != nil {
				t.Fatal(err)
			}
			p := probe(t, path, f)
			for fld, vals := range map[string][]string{tags.FieldMood: {"happy", "party"}, tags.FieldGenre: {"Rock", "Pop"}} {
				v, ok := probeStd(p, f, fld)
				if f != ASF {
					vals = vals[:1] // TagLib does not keep a WMA list's order
				}
				if !ok || !slices.ContainsFunc(vals, func(w string) bool { return strings.HasPrefix(v, w) }) {
					t.Errorf("ffprobe shows %s = %q (shown: %v), want one of %q first", fld, v, ok, vals)
				}
			}
		})
	}
}

// TestStandardRefusals: values Nomarr may not write, and a key the write
// keeps itself, are refused before the file is opened.
func TestStandardRefusals(t *testing.T) {
	for _, c := range []struct {
		nom map[string]string
		std Standard
	}{
		{map[string]string{"mood-written": "x"}, nil},
		{nil, Standard{"style": {"x"}}},
		{nil, Standard{tags.FieldMood: {""}}},
		{nil, Standard{tags.FieldMood: {"a; b"}}},
		{nil, Standard{tags.FieldGenre: {"\xff"}}},
	} {
		if err := WriteAll("/nonexistent", c.nom, c.std); !errors.Is(err, ErrInvalidTag) {
			t.Errorf("WriteAll(%v, %v) = %v, want ErrInvalidTag", c.nom, c.std, err)
		}
	}
}

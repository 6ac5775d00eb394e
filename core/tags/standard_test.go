package tags

import (
	"slices"
	"testing"
)

func TestStandardValues(t *testing.T) {
	all := map[string]string{KeyMoodStrict: "happy", KeyMoodRegular: "happy; party", KeyMoodLoose: "happy; party; sad",
		KeyTopTags: "80s; rock; female vocalists; Hip-Hop; rnb"}
	opt := DefaultOptions()
	got, err := Standard(all, opt)
	if err != nil || len(got) != 1 || !slices.Equal(got[FieldMood], []string{"happy", "party"}) {
		t.Fatalf("default = %v, %v; want MOOD from mood-regular only", got, err)
	}
	opt.StandardTags, opt.MoodTier = []string{FieldMood, FieldGenre}, KeyMoodStrict
	got, _ = Standard(all, opt)
	if !slices.Equal(got[FieldMood], []string{"happy"}) || !slices.Equal(got[FieldGenre], []string{"Rock", "Hip-Hop", "R&B"}) {
		t.Errorf("mood and genre = %v; want [happy] and the genre labels of top_tags", got)
	}
	if got, _ := Standard(map[string]string{}, opt); got[FieldGenre] != nil || len(got) != 2 {
		t.Errorf("nothing to write = %v; want both fields, empty", got)
	}
	for _, bad := range []Options{
		{StandardTags: []string{"style"}},
		{StandardTags: []string{FieldGenre, FieldGenre}},
		{StandardTags: []string{FieldMood}, MoodTier: "top_tags"},
	} {
		if _, err := Standard(all, bad); err == nil {
			t.Errorf("Standard accepted %+v", bad)
		}
	}
}

func TestGenresAreMSDLabels(t *testing.T) {
	for l := range Genres {
		if !slices.Contains(MSDTop50, l) {
			t.Errorf("%q is not an MSD top-50 label", l)
		}
	}
	for _, notGenre := range []string{"80s", "female vocalists", "catchy", "beautiful", "Mellow", "chill", "sad", "happy"} {
		if _, ok := Genres[notGenre]; ok {
			t.Errorf("%q written as a genre", notGenre)
		}
	}
}

func TestEditFieldKeepsTheUsersValues(t *testing.T) {
	held := []string{"Jazz", "Rock", "", "Pop", "rock", "Jazz"}
	// Nomarr wrote Rock and Pop before; now it writes Pop, Jazz and Funk.
	e := EditField(held, []string{"Rock", "Pop"}, []string{"Pop", "jazz", "Funk", "Funk"})
	if !slices.Equal(e.Remove, []string{"Rock"}) || !slices.Equal(e.Add, []string{"Funk"}) {
		t.Errorf("Remove = %q, Add = %q; want Rock gone, Pop kept, Funk added", e.Remove, e.Add)
	}
	if !slices.Equal(e.Result, []string{"Jazz", "", "Pop", "rock", "Jazz", "Funk"}) {
		t.Errorf("Result = %q; want the user's values and Pop in order, then Funk", e.Result)
	}
	if !slices.Equal(e.Written, []string{"Pop", "Funk"}) || !e.Changes() {
		t.Errorf("Written = %q", e.Written)
	}
	if e := EditField([]string{"a", "b"}, nil, nil); e.Changes() || !slices.Equal(e.Result, []string{"a", "b"}) {
		t.Errorf("no edit = %+v", e)
	}
	// The same write again changes nothing.
	if e := EditField([]string{"x", "Pop"}, []string{"Pop"}, []string{"Pop"}); e.Changes() ||
		!slices.Equal(e.Result, []string{"x", "Pop"}) || !slices.Equal(e.Written, []string{"Pop"}) {
		t.Errorf("rewrite = %+v", e)
	}
}

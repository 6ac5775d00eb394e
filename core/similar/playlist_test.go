package similar

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// arc is the unit vector at angle deg in the plane of the first two axes
// of d dimensions, tilted by a small off-plane component z on axis 2+i%(d-2).
func arc(d int, deg float64, i int, z float32) []float32 {
	v := make([]float32, d)
	v[0], v[1] = float32(math.Cos(deg*math.Pi/180)), float32(math.Sin(deg*math.Pi/180))
	v[2+i%(d-2)] = z
	u, _ := Normalise(v)
	return u
}

func track(key, artist, album string, v []float32) Track {
	return Track{Item: Item{Key: key, Vec: Vector{set, v}}, Artist: artist, Album: album}
}

func TestMixOpensWithSeedsAndTakesTheClosest(t *testing.T) {
	seed := track("seed", "", "", arc(8, 0, 0, 0))
	var cands []Track
	for i := range 20 {
		cands = append(cands, track(fmt.Sprintf("c%02d", i), "", "", arc(8, float64(i+1)*4, i, 0)))
	}
	got, err := Mix([]Track{seed}, cands, 6, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"seed", "c00", "c01", "c02", "c03", "c04"}
	if !slices.Equal(got, want) {
		t.Fatalf("Mix = %v, want %v", got, want)
	}
}

func TestMixRunCaps(t *testing.T) {
	seed := track("seed", "A", "A1", arc(8, 0, 0, 0))
	var cands []Track
	for i := range 12 {
		artist, album := "A", fmt.Sprint("A", i%2)
		if i >= 6 {
			artist, album = fmt.Sprint("B", i%3), "B"
		}
		cands = append(cands, track(fmt.Sprintf("c%02d", i), artist, album, arc(8, float64(i+1)*3, i, 0)))
	}
	byKey := map[string]Track{"seed": seed}
	for _, c := range cands {
		byKey[c.Key] = c
	}
	maxRun := func(keys []string, of func(Track) string) int {
		best, run := 0, 0
		for i, k := range keys {
			if i > 0 && of(byKey[k]) == of(byKey[keys[i-1]]) {
				run++
			} else {
				run = 1
			}
			best = max(best, run)
		}
		return best
	}
	artist := func(t Track) string { return t.Artist }
	album := func(t Track) string { return t.Album }

	free, err := Mix([]Track{seed}, cands, 8, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if maxRun(free, artist) < 3 {
		t.Fatalf("without caps the closest tracks, all by A, should run: %v", free)
	}
	capped, err := Mix([]Track{seed}, cands, 8, Rules{MaxArtistRun: 2, MaxAlbumRun: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(capped) != 8 || maxRun(capped, artist) > 2 || maxRun(capped, album) > 1 {
		t.Fatalf("capped mix %v breaks a cap or is short", capped)
	}
}

func TestMixSkipsNearDuplicatesAndSpreads(t *testing.T) {
	seed := track("seed", "", "", arc(8, 0, 0, 0))
	cands := []Track{track("copy", "", "", arc(8, 0.5, 0, 0))}
	// a tight clump at 10° and a second direction at 14° off the plane
	for i := range 4 {
		cands = append(cands, track(fmt.Sprint("clump", i), "", "", arc(8, 10+0.2*float64(i), 0, 0)))
	}
	for i := range 4 {
		cands = append(cands, track(fmt.Sprint("other", i), "", "", arc(8, 14, i+1, 0.15)))
	}
	plain, err := Mix([]Track{seed}, cands, 4, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if plain[1] != "copy" || plain[2] != "clump0" || plain[3] != "clump1" {
		t.Fatalf("by closeness alone = %v", plain)
	}
	mixed, err := Mix([]Track{seed}, cands, 4, Rules{NearDuplicate: 0.98, Diversity: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(mixed, "copy") {
		t.Fatalf("near-duplicate of the seed kept: %v", mixed)
	}
	clumps := 0
	for _, k := range mixed {
		if len(k) > 5 && k[:5] == "clump" {
			clumps++
		}
	}
	if clumps > 1 {
		t.Fatalf("diverse mix took %d tracks of one clump: %v", clumps, mixed)
	}
}

func TestMixIsDeterministicProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 3))
		n := rapid.IntRange(1, 15).Draw(t, "n")
		rules := Rules{
			Diversity:    rapid.Float64Range(0, 0.9).Draw(t, "d"),
			MaxArtistRun: rapid.IntRange(0, 2).Draw(t, "artistRun"),
			MaxAlbumRun:  rapid.IntRange(0, 2).Draw(t, "albumRun"),
		}
		var cands []Track
		for i := range rapid.IntRange(0, 40).Draw(t, "cands") {
			cands = append(cands, track(fmt.Sprint("c", i), fmt.Sprint("a", r.IntN(3)), fmt.Sprint("b", r.IntN(3)), unit(r, 6)))
		}
		seeds := []Track{track("s", "", "", unit(r, 6))}
		a, err := Mix(seeds, cands, n, rules)
		if err != nil {
			t.Fatal(err)
		}
		r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		b, err := Mix(seeds, cands, n, rules)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(a, b) {
			t.Fatalf("shuffled candidates changed the mix: %v then %v", a, b)
		}
		if len(a) > n || a[0] != "s" || len(slices.Compact(slices.Sorted(slices.Values(a)))) != len(a) {
			t.Fatalf("mix %v: too long, seed not first, or a repeat", a)
		}
	})
}

func TestMixErrors(t *testing.T) {
	seed := track("s", "", "", []float32{1, 0})
	other := Track{Item: Item{Key: "o", Vec: Vector{"ffffffffffff", []float32{1, 0}}}}
	if _, err := Mix(nil, nil, 3, Rules{}); err == nil {
		t.Error("mix without a seed")
	}
	if _, err := Mix([]Track{seed}, []Track{other}, 3, Rules{}); !errors.Is(err, ErrModelSet) {
		t.Errorf("mixing model sets: err = %v", err)
	}
	if _, err := Mix([]Track{seed}, []Track{seed, seed}, 3, Rules{}); err == nil {
		t.Error("a candidate given twice")
	}
	if _, err := Mix([]Track{seed}, nil, 3, Rules{Diversity: 1}); err == nil {
		t.Error("diversity 1 accepted")
	}
}

func TestPathWalksFromAToB(t *testing.T) {
	a, b := track("a", "", "", arc(8, 0, 0, 0)), track("b", "", "", arc(8, 90, 0, 0))
	var cands []Track
	for _, deg := range []float64{80, 20, 50, 35, 65, 5, 85} {
		cands = append(cands, track(fmt.Sprint("d", deg), "", "", arc(8, deg, int(deg), 0.05)))
	}
	cands = append(cands, track("off", "", "", arc(8, 45, 3, 5))) // far off the arc
	got, err := Path(a, b, cands, 5, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	// waypoints at 22.5°, 45°, 67.5°
	want := []string{"a", "d20", "d50", "d65", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("Path = %v, want %v", got, want)
	}
}

func TestPathRulesProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 4))
		n := rapid.IntRange(2, 12).Draw(t, "n")
		cap := rapid.IntRange(1, 2).Draw(t, "cap")
		a, b := track("a", "x", "", unit(r, 6)), track("b", "y", "", unit(r, 6))
		artists := map[string]string{"a": "x", "b": "y"}
		var cands []Track
		for i := range rapid.IntRange(0, 30).Draw(t, "cands") {
			c := track(fmt.Sprint("c", i), fmt.Sprint("a", r.IntN(2)), "", unit(r, 6))
			artists[c.Key] = c.Artist
			cands = append(cands, c)
		}
		got, err := Path(a, b, cands, n, Rules{MaxArtistRun: cap})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) > n || got[0] != "a" || got[len(got)-1] != "b" {
			t.Fatalf("path %v: too long or wrong ends", got)
		}
		run := 1
		for i := 1; i < len(got)-1; i++ {
			if artists[got[i]] == artists[got[i-1]] {
				run++
			} else {
				run = 1
			}
			if run > cap {
				t.Fatalf("path %v runs %d of one artist, cap %d", got, run, cap)
			}
		}
	})
}

func TestPathErrors(t *testing.T) {
	a, b := track("a", "", "", []float32{1, 0}), track("b", "", "", []float32{-1, 0})
	if _, err := Path(a, b, nil, 4, Rules{}); !errors.Is(err, ErrOppositeEnds) {
		t.Errorf("a path between opposite ends: %v, want ErrOppositeEnds", err)
	}
	if _, err := Path(a, a, nil, 1, Rules{}); err == nil {
		t.Error("a path of one track")
	}
}

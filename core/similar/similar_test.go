package similar

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

const set = "0123456789ab"

// unit draws a random unit vector of d dimensions.
func unit(r *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	u, err := Normalise(v)
	if err != nil {
		panic(err)
	}
	return u
}

func TestTrackVector(t *testing.T) {
	v, err := TrackVector([][]float32{{3, 0}, {1, 0}, {0, 4}})
	if err != nil {
		t.Fatal(err)
	}
	// mean (4/3, 4/3) → (1/√2, 1/√2)
	if math.Abs(float64(v[0])-math.Sqrt2/2) > 1e-6 || math.Abs(float64(v[1])-math.Sqrt2/2) > 1e-6 {
		t.Fatalf("TrackVector = %v, want (0.7071, 0.7071)", v)
	}
	for name, c := range map[string]struct {
		in   [][]float32
		want error
	}{
		"no patches":      {nil, ErrNoPatches},
		"zero mean":       {[][]float32{{1, -1}, {-1, 1}}, ErrZero},
		"all zero":        {[][]float32{{0, 0}}, ErrZero},
		"non-finite":      {[][]float32{{float32(math.Inf(1)), 0}}, ErrZero},
		"ragged":          {[][]float32{{1, 0}, {1}}, ErrDims},
		"empty embedding": {[][]float32{{}}, ErrZero},
	} {
		if _, err := TrackVector(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
}

func TestTrackVectorIsUnitProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.IntRange(1, 64).Draw(t, "d")
		n := rapid.IntRange(1, 8).Draw(t, "n")
		patches := make([][]float32, n)
		for i := range patches {
			patches[i] = rapid.SliceOfN(rapid.Float32Range(0, 10), d, d).Draw(t, fmt.Sprint("p", i))
		}
		v, err := TrackVector(patches)
		if errors.Is(err, ErrZero) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if l := Dot(v, v); math.Abs(float64(l)-1) > 1e-5 {
			t.Fatalf("|v|² = %v", l)
		}
	})
}

func TestNewVectorNeedsAModelSet(t *testing.T) {
	if _, err := NewVector("", []float32{1}); err == nil {
		t.Fatal("a vector without a model set was accepted")
	}
}

// TestNearestEqualsBruteForce: the heap search returns exactly the first
// k of all items sorted by (score desc, key asc).
func TestNearestEqualsBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		d := rapid.IntRange(1, 16).Draw(t, "d")
		n := rapid.IntRange(0, 200).Draw(t, "n")
		k := rapid.IntRange(0, 220).Draw(t, "k")
		items := make([]Item, n)
		for i := range items {
			v := unit(r, d)
			if i > 0 && r.IntN(5) == 0 { // exact ties
				v = items[r.IntN(i)].Vec.V
			}
			items[i] = Item{Key: fmt.Sprintf("k%03d", r.IntN(1000)), Vec: Vector{set, v}}
		}
		q := Vector{set, unit(r, d)}
		got, err := Nearest(q, items, k)
		if err != nil {
			t.Fatal(err)
		}
		all := make([]Hit, n)
		for i, it := range items {
			all[i] = Hit{it.Key, Dot(q.V, it.Vec.V)}
		}
		slices.SortStableFunc(all, func(a, b Hit) int {
			if c := cmpHit(a, b); c != 0 {
				return c
			}
			return strings.Compare(a.Key, b.Key)
		})
		want := all[:min(k, n)]
		if !slices.Equal(got, want) {
			t.Fatalf("Nearest =\n%v\nbrute force =\n%v", got, want)
		}
	})
}

func TestNearestRejectsAnotherModelSet(t *testing.T) {
	q := Vector{set, []float32{1, 0}}
	items := []Item{{"a", Vector{set, []float32{1, 0}}}, {"b", Vector{"ffffffffffff", []float32{1, 0}}}}
	if _, err := Nearest(q, items, 1); !errors.Is(err, ErrModelSet) {
		t.Fatalf("err = %v, want ErrModelSet", err)
	}
	items[1].Vec = Vector{set, []float32{1, 0, 0}}
	if _, err := Nearest(q, items, 1); !errors.Is(err, ErrDims) {
		t.Fatalf("err = %v, want ErrDims", err)
	}
}

func TestSlerp(t *testing.T) {
	a, b := []float32{1, 0}, []float32{0, 1}
	w := Slerp(a, b, 0.5)
	if math.Abs(float64(w[0])-math.Sqrt2/2) > 1e-6 || math.Abs(float64(w[1])-math.Sqrt2/2) > 1e-6 {
		t.Fatalf("midpoint = %v", w)
	}
	w = Slerp(a, b, 1.0/3)
	if math.Abs(float64(w[0])-math.Cos(math.Pi/6)) > 1e-6 {
		t.Fatalf("a third of the way = %v, want 30°", w)
	}
	if w := Slerp(a, a, 0.5); w[0] != 1 || w[1] != 0 {
		t.Fatalf("slerp of equal ends = %v", w)
	}
}

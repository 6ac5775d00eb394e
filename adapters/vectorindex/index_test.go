package vectorindex

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nomarr/nomarr/core/similar"
)

// meanRecall queries x with q fresh vectors and compares each answer with
// the exact float32 search over items.
func meanRecall(t testing.TB, x *Index, l *library, items []similar.Item, q, k int) float64 {
	var sum float64
	for range q {
		v := l.vector()
		got, err := x.Query(v, k)
		if err != nil {
			t.Fatal(err)
		}
		exact, err := similar.Nearest(v, items, k)
		if err != nil {
			t.Fatal(err)
		}
		sum += recall(got, exact)
	}
	return sum / float64(q)
}

func TestPartitionRecallAt10(t *testing.T) {
	l := newLibrary(1, similar.Dims, 100)
	items := l.items(20000)
	x, err := Build(set, similar.Dims, items, Config{ExactBelow: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if !x.Partitioned() {
		t.Fatal("20,000 vectors over a threshold of 5,000 built no partition")
	}
	if r := meanRecall(t, x, l, items, 100, 10); r < 0.95 {
		t.Fatalf("recall@10 = %.3f, want ≥ 0.95", r)
	} else {
		t.Logf("recall@10 = %.3f", r)
	}
}

func TestExactBelowTheThreshold(t *testing.T) {
	l := newLibrary(2, similar.Dims, 20)
	items := l.items(500)
	x, err := Build(set, similar.Dims, items, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if x.Partitioned() {
		t.Fatal("500 vectors built a partition")
	}
	if r := meanRecall(t, x, l, items, 50, 10); r < 0.98 {
		t.Fatalf("exact scan recall@10 = %.3f (int8 codes should keep the order)", r)
	}
}

func TestRejectsAnotherModelSet(t *testing.T) {
	x, err := New(set, 3, Config{})
	if err != nil {
		t.Fatal(err)
	}
	other := similar.Vector{ModelSet: "ffffffffffff", V: []float32{1, 0, 0}}
	if err := x.Add("a", other); !errors.Is(err, ErrModelSet) {
		t.Fatalf("Add of another model set: err = %v", err)
	}
	if _, err := x.Query(other, 1); !errors.Is(err, ErrModelSet) {
		t.Fatalf("Query of another model set: err = %v", err)
	}
	if err := x.Add("a", similar.Vector{ModelSet: set, V: []float32{1, 0}}); !errors.Is(err, similar.ErrDims) {
		t.Fatalf("Add of another width: err = %v", err)
	}
	if err := x.Add("a", similar.Vector{ModelSet: set, V: []float32{0, 0, 0}}); !errors.Is(err, similar.ErrZero) {
		t.Fatalf("Add of a zero vector: err = %v", err)
	}
}

// TestAddDeleteKeepsAnswersCurrent drives an index across the threshold
// and back with adds, re-adds and deletes, and checks every answer
// against an exact search over what the index should hold.
func TestAddDeleteKeepsAnswersCurrent(t *testing.T) {
	l := newLibrary(3, 32, 30)
	x, err := New(set, 32, Config{ExactBelow: 400, ProjDims: 16})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]similar.Vector{}
	check := func(stage string) {
		t.Helper()
		if x.Len() != len(held) {
			t.Fatalf("%s: Len = %d, want %d", stage, x.Len(), len(held))
		}
		var items []similar.Item
		for k, v := range held {
			items = append(items, similar.Item{Key: k, Vec: v})
		}
		var sum float64
		for range 20 {
			q := l.vector()
			got, err := x.Query(q, 10)
			if err != nil {
				t.Fatal(err)
			}
			exact, _ := similar.Nearest(q, items, 10)
			if len(got) != len(exact) {
				t.Fatalf("%s: %d hits, want %d", stage, len(got), len(exact))
			}
			for _, h := range got {
				if _, ok := held[h.Key]; !ok {
					t.Fatalf("%s: answered %q, which was deleted", stage, h.Key)
				}
			}
			sum += recall(got, exact)
		}
		if sum/20 < 0.9 {
			t.Fatalf("%s: recall@10 = %.2f", stage, sum/20)
		}
	}
	for i := range 300 {
		k := fmt.Sprint("k", i)
		held[k] = l.vector()
		if err := x.Add(k, held[k]); err != nil {
			t.Fatal(err)
		}
	}
	check("exact")
	for i := 300; i < 600; i++ {
		k := fmt.Sprint("k", i)
		held[k] = l.vector()
		if err := x.Add(k, held[k]); err != nil {
			t.Fatal(err)
		}
	}
	if !x.Partitioned() {
		t.Fatal("600 vectors over a threshold of 400 built no partition")
	}
	check("graph")
	for i := 0; i < 600; i += 3 { // re-tagged: new vectors, same keys
		k := fmt.Sprint("k", i)
		held[k] = l.vector()
		if err := x.Add(k, held[k]); err != nil {
			t.Fatal(err)
		}
	}
	check("re-added")
	for i := 0; i < 600; i += 2 {
		k := fmt.Sprint("k", i)
		if !x.Delete(k) {
			t.Fatalf("Delete(%s) found nothing", k)
		}
		delete(held, k)
	}
	if x.Delete("k0") {
		t.Fatal("a second Delete found the key")
	}
	check("deleted")
	for i := 1; i < 600; i += 2 {
		if i%5 != 0 {
			x.Delete(fmt.Sprint("k", i))
			delete(held, fmt.Sprint("k", i))
		}
	}
	if x.Partitioned() {
		t.Fatalf("%d vectors under half the threshold kept the partition", x.Len())
	}
	check("back to exact")
}

func TestQueryOrderAndTies(t *testing.T) {
	x, err := New(set, 2, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"c", "a", "b"} {
		if err := x.Add(k, similar.Vector{ModelSet: set, V: []float32{1, 0}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Add("far", similar.Vector{ModelSet: set, V: []float32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := x.Query(similar.Vector{ModelSet: set, V: []float32{1, 0}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{got[0].Key, got[1].Key, got[2].Key}
	if !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Fatalf("equal scores ordered %v, want by key", keys)
	}
}

func TestVectorGivesBackWhatWasAdded(t *testing.T) {
	l := newLibrary(3, similar.Dims, 40)
	items := l.items(8000)
	for _, c := range []struct {
		name  string
		cfg   Config
		worst float32 // the least cosine allowed between added and given back
	}{
		{"exact", Config{}, 1},
		{"partitioned", Config{ExactBelow: 2000}, 0.975},
	} {
		t.Run(c.name, func(t *testing.T) {
			x, err := Build(set, similar.Dims, items, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items[:500] {
				v, ok := x.Vector(it.Key)
				if !ok || v.ModelSet != set {
					t.Fatalf("Vector(%q) = %v, %v", it.Key, v.ModelSet, ok)
				}
				if cos := similar.Dot(v.V, it.Vec.V); cos < c.worst-1e-6 {
					t.Fatalf("Vector(%q): cosine %.4f with the vector added, want ≥ %.3f", it.Key, cos, c.worst)
				}
				if hits, err := x.Query(v, 1); err != nil || hits[0].Key != it.Key {
					t.Fatalf("Query(Vector(%q)) = %v, %v: want the track itself first", it.Key, hits, err)
				}
			}
			if _, ok := x.Vector("no such track"); ok {
				t.Fatal("Vector of an unknown key reported one")
			}
		})
	}
}

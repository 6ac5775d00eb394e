package vectorindex

import (
	"slices"
	"sync"
	"testing"

	"github.com/nomarr/nomarr/core/similar"
)

// TestConcurrentQueriesAgree runs the same partitioned queries from
// several goroutines at once (the pooled scratch is shared between
// them) and checks every answer equals the one given alone.
func TestConcurrentQueriesAgree(t *testing.T) {
	l := newLibrary(4, 32, 40)
	x, err := Build(set, 32, l.items(4000), Config{ExactBelow: 1000, ProjDims: 16, Scan: 600, Rerank: 40})
	if err != nil {
		t.Fatal(err)
	}
	if !x.Partitioned() {
		t.Fatal("4,000 vectors over a threshold of 1,000 built no partition")
	}
	qs := make([]similar.Vector, 50)
	want := make([][]similar.Hit, len(qs))
	for i := range qs {
		qs[i] = l.vector()
		if want[i], err = x.Query(qs[i], 10); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan int, 4*len(qs))
	for g := range 4 {
		wg.Go(func() {
			for i := range qs {
				i := (i + g*13) % len(qs)
				got, err := x.Query(qs[i], 10)
				if err != nil || !slices.Equal(got, want[i]) {
					errs <- i
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if n := len(errs); n > 0 {
		t.Fatalf("%d concurrent answers differ from the answer given alone", n)
	}
}

// TestScanBudgetBoundsWork checks the budget: a small Scan still
// answers k hits from the probed lists, and a larger one never loses
// recall against it.
func TestScanBudgetBoundsWork(t *testing.T) {
	l := newLibrary(6, 32, 40)
	items := l.items(4000)
	small, err := Build(set, 32, items, Config{ExactBelow: 1000, ProjDims: 16, Scan: 1, Rerank: 10})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := Build(set, 32, items, Config{ExactBelow: 1000, ProjDims: 16, Scan: 4000, Rerank: 4000})
	if err != nil {
		t.Fatal(err)
	}
	var rs, rw float64
	for range 30 {
		q := l.vector()
		a, _ := small.Query(q, 10)
		b, _ := wide.Query(q, 10)
		exact, _ := similar.Nearest(q, items, 10)
		if len(a) != 10 || len(b) != 10 {
			t.Fatalf("%d and %d hits, want 10", len(a), len(b))
		}
		rs += recall(a, exact)
		rw += recall(b, exact)
	}
	if rw < rs || rw/30 < 0.95 {
		t.Fatalf("recall@10 with a scan of one list %.2f, of everything %.2f", rs/30, rw/30)
	}
}

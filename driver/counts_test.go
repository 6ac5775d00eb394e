package driver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/nomarr/nomarr/adapters/memstore"
	"github.com/nomarr/nomarr/core/node"
	"github.com/nomarr/nomarr/core/store"
)

// slowCounts is a store whose Counts takes cost on a mock clock (a count
// over a million documents on a server) and says how often it was asked.
type slowCounts struct {
	store.Store
	clk   *clock.Mock
	cost  time.Duration
	mu    sync.Mutex
	calls int
}

func (s *slowCounts) Counts(ctx context.Context) (store.Counts, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	s.clk.Add(s.cost)
	return s.Store.Counts(ctx)
}

// The counts shown on the progress line and the dashboard are read again
// only CountsFactor × the last read's duration after it started: a store
// that takes 1 s to count is asked every 20 s after its first two reads,
// not at every poll, and the
// polls between get the last counts, marked not fresh. A store that counts
// at once is asked at every poll.
func TestLibraryCountsPacedByTheirCost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cost      time.Duration
		wantReads int // over 60 s of polls every 500 ms
	}{
		{"a count of a second", time.Second, 4}, // at 0 s (not pacing: it may be the open), 1.5 s, 21.5 s, 41.5 s
		{"a count that costs nothing", 0, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			mem := memstore.New(1)
			if _, err := mem.UpsertFiles(context.Background(), []store.File{{Key: "a", NeedsTagging: true, IsValid: true}}); err != nil {
				t.Fatal(err)
			}
			st := &slowCounts{Store: mem, clk: clk, cost: tc.cost}
			m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
				func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			end := clk.Now().Add(time.Minute)
			fresh := 0
			for clk.Now().Before(end) {
				c, f, err := m.LibraryCounts(context.Background())
				if err != nil || c.Total != 1 || c.Pending != 1 {
					t.Fatalf("LibraryCounts = %+v, %v, %v", c, f, err)
				}
				if f {
					fresh++
				}
				clk.Add(500 * time.Millisecond)
			}
			if st.calls != tc.wantReads || fresh != tc.wantReads {
				t.Fatalf("store asked %d times, %d answers fresh; want %d", st.calls, fresh, tc.wantReads)
			}
		})
	}
}

// A caller that finds a read under way waits for it, and gives up with its
// own context.
func TestLibraryCountsOneReadAtATime(t *testing.T) {
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), memstore.New(1), nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	m.counts.sem <- struct{}{} // a read under way
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, fresh, err := m.LibraryCounts(ctx); err == nil || fresh {
		t.Fatalf("LibraryCounts beside a read under way = %v, %v; want the context's error", fresh, err)
	}
	<-m.counts.sem
	if _, fresh, err := m.LibraryCounts(context.Background()); err != nil || !fresh {
		t.Fatalf("LibraryCounts once the read ended = %v, %v", fresh, err)
	}
}

// flakyCounts fails its counts while down, each failure after a timeout
// on the mock clock (a store that does not answer), and can cut a read
// short as the caller going away would.
type flakyCounts struct {
	store.Store
	clk    *clock.Mock
	down   bool
	cancel func() // called during the next read
}

func (s *flakyCounts) Counts(ctx context.Context) (store.Counts, error) {
	if s.down {
		s.clk.Add(10 * time.Second)
		return store.Counts{}, errors.New("store unreachable: timeout")
	}
	s.clk.Add(time.Second)
	if s.cancel != nil {
		s.cancel()
		s.cancel = nil
	}
	if err := ctx.Err(); err != nil {
		return store.Counts{}, err
	}
	return s.Store.Counts(ctx)
}

// A failed read is neither kept nor paced: the counts come back at the
// first poll after the store does (a read that timed out after 10 s used to
// hold the error for 200 s, and tag's loop skipped every poll meanwhile),
// and a caller that went away during a read does not hand its context's
// error to the next caller.
func TestLibraryCountsFailuresAreNotKept(t *testing.T) {
	clk := clock.NewMock()
	mem := memstore.New(1)
	if _, err := mem.UpsertFiles(context.Background(), []store.File{{Key: "a", NeedsTagging: true, IsValid: true}}); err != nil {
		t.Fatal(err)
	}
	st := &flakyCounts{Store: mem, clk: clk, down: true}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, fresh, err := m.LibraryCounts(context.Background()); err == nil || !fresh {
		t.Fatalf("read of a store that is down = %v, %v; want a fresh error", fresh, err)
	}
	st.down = false
	clk.Add(500 * time.Millisecond)
	if c, fresh, err := m.LibraryCounts(context.Background()); err != nil || !fresh || c.Pending != 1 {
		t.Fatalf("first poll once the store is back = %+v, %v, %v; want fresh counts", c, fresh, err)
	}

	clk.Add(time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	st.cancel = cancel
	if _, _, err := m.LibraryCounts(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("read cut short by its caller = %v", err)
	}
	clk.Add(2 * time.Second)
	if c, fresh, err := m.LibraryCounts(context.Background()); err != nil || !fresh || c.Pending != 1 {
		t.Fatalf("next caller after one went away = %+v, %v, %v; want fresh counts", c, fresh, err)
	}
	// A caller that went away said nothing of the store: the read after it
	// is paced by its own cost (1 s), as any read of a store already open.
	clk.Add(500 * time.Millisecond)
	if c, fresh, err := m.LibraryCounts(context.Background()); err != nil || fresh || c.Pending != 1 {
		t.Fatalf("poll 0.5 s after a read of 1 s = %+v, fresh %v, %v; want the last counts, not read again", c, fresh, err)
	}
}

// reopening answers its first good count after open on the mock clock (a
// store opened again: a connection, a schema check waiting on a scan's
// write lock), its later ones after cost; down fails every count.
type reopening struct {
	store.Store
	clk        *clock.Mock
	down       bool
	open, cost time.Duration
	opened     bool
	calls      int
}

func (s *reopening) Counts(ctx context.Context) (store.Counts, error) {
	s.calls++
	if s.down {
		s.opened = false
		return store.Counts{}, errors.New("store unavailable")
	}
	if !s.opened {
		s.opened = true
		s.clk.Add(s.open)
	} else {
		s.clk.Add(s.cost)
	}
	return s.Store.Counts(ctx)
}

// The first good read, and the first after a failed one, do not pace the
// next: their time is the store's opening. A scan that lands meanwhile
// shows at the next poll, not 20 × the opening's 5 s later; the reads
// after are paced by their own cost again.
func TestLibraryCountsNotPacedByTheStoresOpening(t *testing.T) {
	clk := clock.NewMock()
	mem := memstore.New(1)
	st := &reopening{Store: mem, clk: clk, open: 5 * time.Second, cost: time.Second}
	m, err := NewMain(node.DefaultConfig("i:1:1", "n", 1), st, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
		func(string, uint64) (string, []string) { return "true", nil }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(key string) {
		t.Helper()
		if _, err := mem.UpsertFiles(context.Background(), []store.File{{Key: key, NeedsTagging: true, IsValid: true}}); err != nil {
			t.Fatal(err)
		}
	}
	poll := func(want int) {
		t.Helper()
		clk.Add(500 * time.Millisecond)
		c, fresh, err := m.LibraryCounts(context.Background())
		if err != nil || !fresh || c.Total != want {
			t.Fatalf("poll at %s = %+v, fresh %v, %v; want a fresh read of %d files", clk.Now().Format("15:04:05.0"), c, fresh, err, want)
		}
	}
	for round, files := range []string{"a", "b"} {
		poll(round) // the opening read, before the scan lands
		scan(files)
		poll(round + 1) // the scan shows at the next poll
		calls := st.calls
		for range 30 { // then 1 s reads, paced: one in 20 s
			clk.Add(500 * time.Millisecond)
			if _, _, err := m.LibraryCounts(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if n := st.calls - calls; n != 0 {
			t.Fatalf("round %d: %d reads in the 15 s after a read of 1 s; want none", round, n)
		}
		st.down = true
		clk.Add(time.Minute)
		if _, _, err := m.LibraryCounts(context.Background()); err == nil {
			t.Fatal("a store that is down answered")
		}
		st.down = false
	}
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/internal/unprivileged"
)

func openT(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func tempDB(t testing.TB) string {
	return filepath.Join(t.TempDir(), "nomarr.db")
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openT(t, tempDB(t)) })
}

func TestContractConcurrent(t *testing.T) {
	path := tempDB(t)
	// Eight handles hammer one file under -race on a shared 2-core machine: a
	// generous busy timeout keeps this a test of correctness, not of latency
	// (the lock-wait figures are in the benchmarks).
	storetest.RunConcurrent(t, func(t *testing.T) store.Store { return openT(t, path, WithBusyTimeout(60*time.Second)) })
}

var (
	t0  = storetest.T0
	bg  = context.Background()
	at  = storetest.At
	mkf = storetest.NewFile
)

func seed(t testing.TB, s *Store, keys ...string) {
	t.Helper()
	var files []store.File
	for _, k := range keys {
		files = append(files, mkf(k))
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
}

func claim(key, worker string, now time.Time, ttl time.Duration) store.Claim {
	return store.Claim{FileKey: key, WorkerID: worker, ClaimedAt: now, LeaseUntil: now.Add(ttl)}
}

// tagT claims key for worker i/w0 at c.At (a minute's lease) and
// completes it with c.
func tagT(t testing.TB, s *Store, key string, c store.Completion) {
	t.Helper()
	if _, err := s.Claim(bg, claim(key, "i/w0", c.At, time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(bg, store.Ref{FileKey: key, WorkerID: "i/w0"}, c); err != nil {
		t.Fatal(err)
	}
}

// strings1 returns the one text column of a query's rows.
func strings1(t testing.TB, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// raw opens a plain second connection on the file for tampering and checks.
func raw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSchemaAndPragmas(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	var mode string
	if err := s.r.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q %v", mode, err)
	}
	for i, db := range []*sql.DB{s.w, s.r} {
		var sync, fk, busy int
		if err := db.QueryRow(`PRAGMA synchronous`).Scan(&sync); err != nil || sync != 1 {
			t.Fatalf("synchronous = %d %v, want 1 (NORMAL)", sync, err)
		}
		if err := db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 0 {
			t.Fatalf("foreign_keys = %d %v", fk, err)
		}
		// The writer waits for the lock in Go (withTx), readers in SQLite.
		if err := db.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if want := []int{0, 5000}[i]; busy != want {
			t.Fatalf("busy_timeout = %d, want %d", busy, want)
		}
	}
	tables := strings1(t, s.r, `SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	want := []string{"browse_bins", "browse_counts", "browse_labels", "browse_scores", "browse_tags", "file_info", "file_tags", "health_history", "library_counts", "library_files", "meta", "track_vectors", "vector_missing", "worker_claims", "worker_restart_policy"}
	if !slices.Equal(tables, want) {
		t.Fatalf("tables = %v, want %v", tables, want)
	}
	if v, ok, err := s.GetMeta(bg, MetaSchemaVersion); err != nil || !ok || v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema_version = %q %v %v", v, ok, err)
	}
	// Reopening is idempotent and keeps the data.
	seed(t, s, "a")
	s2 := openT(t, path, WithBusyTimeout(time.Second))
	if f, err := s2.File(bg, "a"); err != nil || f.Key != "a" {
		t.Fatalf("reopened: %+v %v", f, err)
	}
	var busy int
	if err := s2.r.QueryRow(`PRAGMA busy_timeout`).Scan(&busy); err != nil || busy != 1000 || s2.cfg.busyTimeout != time.Second {
		t.Fatalf("configured busy_timeout = %d %v", busy, err)
	}
	// A newer schema, the next version included, is refused and left as
	// it is.
	for _, v := range []int{SchemaVersion + 1, 99} {
		if err := s.SetMeta(bg, MetaSchemaVersion, strconv.Itoa(v)); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(path); err == nil || !errors.Is(err, ErrWrongDatabase) || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("Open of schema version %d = %v, want ErrWrongDatabase (newer)", v, err)
		}
		if got, _, err := s.GetMeta(bg, MetaSchemaVersion); err != nil || got != strconv.Itoa(v) {
			t.Fatalf("schema version after a refused open = %q %v, want %d", got, err, v)
		}
	}
}

// TestConcurrentBootstrap: many handles open one new file at once.
func TestConcurrentBootstrap(t *testing.T) {
	path := tempDB(t)
	var wg sync.WaitGroup
	stores := make([]*Store, 8)
	errs := make([]error, len(stores))
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = Open(path)
			if errs[i] == nil {
				_, errs[i] = stores[i].UpsertFiles(bg, []store.File{mkf(fmt.Sprintf("f%d", i))})
			}
		})
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Errorf("handle %d: %v", i, errs[i])
		}
		if s != nil {
			defer s.Close()
		}
	}
	if t.Failed() {
		return
	}
	if c, err := stores[0].Counts(bg); err != nil || c.Total != len(stores) {
		t.Fatalf("Counts = %+v %v", c, err)
	}
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n")
}

// TestQueryPlans: discovery walks the ready files' partial index in key
// order (no sort, no table scan), finds the ended waits through the waiting
// index, and probes claims by primary key; cleanup finds expired
// leases through the lease index; the claim paths and the upsert's read
// of the stored files are key lookups.
func TestQueryPlans(t *testing.T) {
	s := openT(t, tempDB(t))
	var files []store.File
	for i := range 2000 {
		f := mkf(fmt.Sprintf("f%05d", i))
		f.Tagged, f.NeedsTagging = i%3 == 0, i%3 != 0
		files = append(files, f)
	}
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`ANALYZE`); err != nil {
		t.Fatal(err)
	}
	plan := queryPlan(t, s.r, readSQL[sDiscover], "", ms(t0), 8)
	t.Logf("discover:\n%s", plan)
	// Two branches merged: the files not waiting, in key order from their
	// index with no sort; those whose wait ended, by end time from theirs.
	ready, waiting, ok := strings.Cut(plan, "RIGHT")
	if !ok || !strings.Contains(ready, "SEARCH library_files USING INDEX library_files_ready (key>?)") {
		t.Errorf("discovery does not walk the ready index from the cursor:\n%s", plan)
	}
	if before, _, _ := strings.Cut(ready, "SCAN (subquery"); strings.Contains(before, "TEMP B-TREE") {
		t.Errorf("discovery sorts the ready files:\n%s", plan)
	}
	if !strings.Contains(waiting, "SEARCH library_files USING INDEX library_files_waiting (<expr><?)") {
		t.Errorf("discovery does not find the ended waits through the waiting index:\n%s", plan)
	}
	if strings.Contains(plan, "SCAN library_files") {
		t.Errorf("discovery scans the files:\n%s", plan)
	}
	if !strings.Contains(plan, "USING PRIMARY KEY (file_key=?)") {
		t.Errorf("discovery's claim check is not a key probe:\n%s", plan)
	}
	plan = queryPlan(t, s.w, writeSQL[sCleanupExpired], ms(t0))
	t.Logf("cleanup (expired):\n%s", plan)
	if !strings.Contains(plan, "worker_claims_lease") {
		t.Errorf("cleanup does not use the lease index:\n%s", plan)
	}
	plan = queryPlan(t, s.w, writeSQL[sCleanupIneligible])
	t.Logf("cleanup (ineligible):\n%s", plan)
	if !strings.Contains(plan, "USING PRIMARY KEY (key=?)") {
		t.Errorf("cleanup's file check is not a key probe:\n%s", plan)
	}
	plan = queryPlan(t, s.w, writeSQL[sUpsertStored], `["f00001","f00002","nope"]`)
	t.Logf("upsert's read of the stored files:\n%s", plan)
	if !strings.Contains(plan, "USING PRIMARY KEY (key=?)") || strings.Contains(plan, "SCAN library_files") {
		t.Errorf("the upsert's read of the stored files is not a key probe per key:\n%s", plan)
	}
	for name, q := range map[string]string{
		"claim":          writeSQL[sClaimInsert],
		"release worker": writeSQL[sReleaseWorker],
	} {
		plan := queryPlan(t, s.w, q, "f00001", "w", ms(t0), ms(t0))
		t.Logf("%s:\n%s", name, plan)
		if strings.Contains(plan, "SCAN library_files") || strings.Contains(plan, "SCAN worker_claims") {
			t.Errorf("%s scans a table:\n%s", name, plan)
		}
	}
}

// TestCleanupTaggedAndGone covers what the port cannot produce: a claim on a
// file that is tagged (non-transactional completion in other stores) or gone.
func TestCleanupTaggedAndGone(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "gone", "live", "tagged")
	for _, k := range []string{"gone", "live", "tagged"} {
		if _, err := s.Claim(bg, claim(k, "i/w0", t0, time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	db := raw(t, path)
	if _, err := db.Exec(`DELETE FROM library_files WHERE key = 'gone'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE library_files SET tagged = 1, needs_tagging = 0 WHERE key = 'tagged'`); err != nil {
		t.Fatal(err)
	}
	removed, err := s.CleanupClaims(bg, t0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range removed {
		keys = append(keys, c.FileKey)
	}
	if !slices.Equal(keys, []string{"gone", "tagged"}) {
		t.Fatalf("removed %v", keys)
	}
	// Complete on a vanished file: not found, claim dropped.
	seed(t, s, "v")
	if _, err := s.Claim(bg, claim("v", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM library_files WHERE key = 'v'`); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(bg, store.Ref{FileKey: "v", WorkerID: "i/w0"}, store.Completion{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Complete of a vanished file = %v", err)
	}
	if c, _ := s.Counts(bg); c.Claimed != 1 {
		t.Fatalf("claims = %d, want 1 (live)", c.Claimed)
	}
	// Claims of vanished files: a Release of one drops the claim without
	// an error; ReleaseWorker reports each with crash count 0.
	seed(t, s, "x", "y", "z")
	for k, w := range map[string]string{"x": "i/w0", "y": "i/w1", "z": "i/w0"} {
		if _, err := s.Claim(bg, claim(k, w, t0, time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`DELETE FROM library_files WHERE key IN ('x', 'y', 'z')`); err != nil {
		t.Fatal(err)
	}
	claimed := store.Stat{Size: mkf("z").Size, MtimeMs: mkf("z").MtimeMs}
	if err := s.Release(bg, store.Ref{FileKey: "z", WorkerID: "i/w0"}, &store.FileUpdate{Attempts: 1, Claimed: &claimed}); err != nil {
		t.Fatalf("Release of a vanished file = %v", err)
	}
	rel, err := s.ReleaseWorker(bg, "i/w0", store.Death{}, &store.Crash{QuarantineAt: 2})
	if want := []store.Released{{FileKey: "live", CrashCount: 1}, {FileKey: "x"}}; err != nil || !slices.Equal(rel, want) {
		t.Fatalf("ReleaseWorker = %+v %v, want %+v", rel, err, want)
	}
	rel, err = s.ReleaseWorker(bg, "i/w1", store.Death{}, nil)
	if want := []store.Released{{FileKey: "y"}}; err != nil || !slices.Equal(rel, want) {
		t.Fatalf("ReleaseWorker without a crash = %+v %v, want %+v", rel, err, want)
	}
}

func TestErrorsCarryContext(t *testing.T) {
	s := openT(t, tempDB(t))
	seed(t, s, "f0001")
	if _, err := s.Claim(bg, claim("f0001", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Claim(bg, claim("f0001", "i/w1", t0, time.Hour))
	if !errors.Is(err, store.ErrConflict) || err.Error() != "sqlite: claim f0001: store: claim already exists" {
		t.Fatalf("err = %q", err)
	}
	err = s.Complete(bg, store.Ref{FileKey: "f0001", WorkerID: "i/w1"}, store.Completion{})
	if !errors.Is(err, store.ErrClaimLost) || !strings.HasPrefix(err.Error(), "sqlite: complete f0001: ") {
		t.Fatalf("err = %q", err)
	}
	if _, err := s.File(bg, "nope"); !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "sqlite: file nope") {
		t.Fatalf("err = %q", err)
	}
}

// TestLocked: another connection holds the write lock in a long IMMEDIATE
// transaction; with a short busy timeout every write fails with an error
// that names the lock, reads go on (WAL), and nothing is lost afterwards.
func TestLocked(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path, WithBusyTimeout(100*time.Millisecond))
	seed(t, s, "a", "b")
	if _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	db := raw(t, path)
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	writes := map[string]func() error{
		"claim": func() error { _, err := s.Claim(bg, claim("b", "i/w0", t0, time.Hour)); return err },
		"complete": func() error {
			return s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v"})
		},
		"upsert":   func() error { _, err := s.UpsertFiles(bg, []store.File{mkf("c")}); return err },
		"set meta": func() error { return s.SetMeta(bg, "k", "v") },
		"cleanup":  func() error { _, err := s.CleanupClaims(bg, t0); return err },
	}
	for name, w := range writes {
		err := w()
		if err == nil || !store.IsFault(err) || !strings.Contains(err.Error(), "locked") || !strings.HasPrefix(err.Error(), "sqlite: "+name) {
			t.Errorf("%s under a held lock = %v, want a lock fault", name, err)
		}
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("writes took %s with a 100ms busy timeout", el)
	}
	// Reads are not blocked by a writer in WAL mode.
	if fs, err := s.Discover(bg, t0, "", 10); err != nil || len(fs) != 1 || fs[0].Key != "b" {
		t.Fatalf("Discover under a held lock = %v %v", storetest.Keys(fs), err)
	}
	if _, err := conn.ExecContext(bg, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	// Nothing was applied, nothing lost, and the store works again.
	if c, err := s.Counts(bg); err != nil || c != (store.Counts{Total: 2, Pending: 2, Claimed: 1}) {
		t.Fatalf("Counts after the lock = %+v %v", c, err)
	}
	if err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(bg, claim("b", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestReadOnly: a database that cannot be written, opened read-only
// (mode=ro, query_only) and made read-only with chmod (file and directory;
// as root that case runs again as nobody, since root ignores the modes).
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ro.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a", "b")
	if _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, ro *Store) {
		// Reads work.
		if fs, err := ro.Discover(bg, t0, "", 10); err != nil || len(fs) != 1 {
			t.Fatalf("Discover = %v %v", storetest.Keys(fs), err)
		}
		// Writes fail with a clear, non-semantic error and change nothing.
		for name, w := range map[string]func() error{
			"claim":    func() error { _, err := ro.Claim(bg, claim("b", "i/w1", t0, time.Hour)); return err },
			"complete": func() error { return ro.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{}) },
			"upsert":   func() error { _, err := ro.UpsertFiles(bg, []store.File{mkf("c")}); return err },
			"set meta": func() error { return ro.SetMeta(bg, "k", "v") },
			"history":  func() error { return ro.AppendHistory(bg, []store.HistoryRow{{At: t0}}) },
		} {
			err := w()
			if err == nil || !store.IsFault(err) || !strings.Contains(err.Error(), "read-only") {
				t.Errorf("%s on a read-only database = %v", name, err)
			}
		}
		if c, err := ro.Counts(bg); err != nil || c != (store.Counts{Total: 2, Pending: 2, Claimed: 1}) {
			t.Fatalf("Counts = %+v %v", c, err)
		}
	}
	t.Run("mode=ro", func(t *testing.T) {
		ro := openT(t, path, WithReadOnly())
		check(t, ro)
	})
	t.Run("chmod", func(t *testing.T) {
		if os.Geteuid() == 0 { // root ignores the modes set below
			unprivileged.Rerun(t, "^TestReadOnly$/^chmod$")
			return
		}
		for _, p := range []string{path, dir} {
			if err := os.Chmod(p, 0o555); err != nil {
				t.Fatal(err)
			}
		}
		os.Chmod(path, 0o444)
		t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
		ro, err := Open(path)
		if err != nil {
			// Refusing to open is a clear answer too.
			if !strings.Contains(err.Error(), "sqlite: open") {
				t.Fatalf("Open = %v", err)
			}
			t.Logf("read-only file refused at open: %v", err)
			return
		}
		defer ro.Close()
		check(t, ro)
	})
	t.Run("no schema", func(t *testing.T) {
		missing := filepath.Join(dir, "missing.db")
		_, err := Open(missing, WithReadOnly())
		if err == nil {
			t.Fatal("read-only open of a missing database succeeded")
		}
		t.Logf("%v", err)
		if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a read-only open created %s (stat: %v)", missing, err)
		}
	})
	// A copy in rollback-journal mode (VACUUM INTO makes one) is read as
	// it is: a read-only open neither needs WAL nor switches the file.
	t.Run("rollback journal", func(t *testing.T) {
		cp := filepath.Join(dir, "copy.db")
		execAll(t, path, `VACUUM INTO '`+cp+`'`)
		mode := func() string {
			t.Helper()
			var m string
			if err := raw(t, cp).QueryRow(`PRAGMA journal_mode`).Scan(&m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		if m := mode(); m != "delete" {
			t.Fatalf("journal mode of the copy = %q, want delete", m)
		}
		ro := openT(t, cp, WithReadOnly())
		check(t, ro)
		if m := mode(); m != "delete" {
			t.Fatalf("journal mode after a read-only open = %q, want delete", m)
		}
		// Opened for writing (the copy given as --db), it is switched to WAL.
		openT(t, cp)
		if m := mode(); m != "wal" {
			t.Fatalf("journal mode after an open for writing = %q, want wal", m)
		}
	})
}

// LockStats counts the tries that found the write lock taken and the time
// spent waiting for it, in total and longest.
func TestLockStats(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a")
	if r, total, longest := s.LockStats(); r != 0 || total != 0 || longest != 0 {
		t.Fatalf("LockStats before any wait = %d %s %s", r, total, longest)
	}
	conn, err := raw(t, path).Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hold := func(d time.Duration) {
		t.Helper()
		if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		go func() {
			// The lock is held for d on the real clock: the wait LockStats measures.
			time.Sleep(d)
			conn.ExecContext(bg, `COMMIT`) //nolint:errcheck // the write below reports a lock never let go
		}()
	}
	hold(30 * time.Millisecond)
	if err := s.SetMeta(bg, "k", "1"); err != nil {
		t.Fatal(err)
	}
	r1, total1, longest1 := s.LockStats()
	if r1 == 0 || total1 < 20*time.Millisecond || longest1 != total1 {
		t.Fatalf("LockStats after one wait of about 30ms = %d %s %s", r1, total1, longest1)
	}
	hold(120 * time.Millisecond)
	if err := s.SetMeta(bg, "k", "2"); err != nil {
		t.Fatal(err)
	}
	r2, total2, longest2 := s.LockStats()
	if r2 <= r1 || total2 < total1+100*time.Millisecond || longest2 < 100*time.Millisecond || longest2 > total2 {
		t.Fatalf("LockStats after a second wait of about 120ms = %d %s %s (first: %d %s %s)", r2, total2, longest2, r1, total1, longest1)
	}
	// The writes of one handle queue for its one writer connection, not
	// for the file's lock: none of them finds the lock taken.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				if err := s.SetMeta(bg, fmt.Sprintf("g%d", g), strconv.Itoa(i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if r3, _, _ := s.LockStats(); r3 != r2 {
		t.Fatalf("concurrent writes of one handle found the lock taken %d times", r3-r2)
	}
}

// TestDiskFull: the database cannot grow (max_page_count stands in for a
// full disk): a large upsert fails with a "full" error and applies nothing.
func TestDiskFull(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a")
	var pages int
	if err := s.r.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	full := openT(t, path, func(c *config) { c.pragmas = append(c.pragmas, fmt.Sprintf("max_page_count(%d)", pages+2)) })
	var files []store.File
	for i := range 5000 {
		files = append(files, mkf(fmt.Sprintf("big%05d", i)))
	}
	_, err := full.UpsertFiles(bg, files)
	if err == nil || !store.IsFault(err) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("UpsertFiles on a full database = %v", err)
	}
	t.Logf("%v", err)
	if c, err := full.Counts(bg); err != nil || c.Total != 1 {
		t.Fatalf("partial write: Counts = %+v %v", c, err)
	}
	// Small writes that fit still work.
	if _, err := full.Claim(bg, claim("a", "i/w0", t0, time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"))
	if err == nil || !strings.Contains(err.Error(), "sqlite: open") {
		t.Fatalf("Open in a missing directory = %v", err)
	}
	t.Logf("%v", err)
	notdb := filepath.Join(t.TempDir(), "notdb")
	if err := os.WriteFile(notdb, []byte(strings.Repeat("this is not a database\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(notdb)
	if err == nil || !strings.Contains(err.Error(), "not a database") || !errors.Is(err, ErrWrongDatabase) {
		t.Fatalf("Open of a non-database = %v, want ErrWrongDatabase", err)
	}
	t.Logf("%v", err)
	// A new file that another connection reads in rollback-journal mode
	// (its shared lock forbids the switch to WAL) the whole time: the
	// open gives up after its busy timeout.
	held := filepath.Join(t.TempDir(), "held.db")
	rtx, err := raw(t, held).Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Rollback() //nolint:errcheck // read only
	var n int
	if err := rtx.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Open(held, WithBusyTimeout(100*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("Open of a file held locked = %v, want a lock error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open of a file held locked gave up after %s (busy timeout 100ms)", d)
	}
	t.Logf("%v", err)
}

func TestContextCanceled(t *testing.T) {
	s := openT(t, tempDB(t))
	seed(t, s, "a")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := s.Claim(ctx, claim("a", "i/w0", t0, time.Hour)); !errors.Is(err, context.Canceled) || !store.IsFault(err) {
		t.Fatalf("Claim with a canceled context = %v", err)
	}
	if c, _ := s.Counts(bg); c.Claimed != 0 {
		t.Fatalf("claimed under a canceled context")
	}
}

func TestTagWritesCounter(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a")
	for i := range 2 {
		if _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Hour)); err != nil {
			t.Fatal(err)
		}
		c := store.Completion{Version: fmt.Sprintf("v%d", i), At: t0.Add(time.Duration(i) * time.Minute), Tags: map[string]string{"n": fmt.Sprint(i)}}
		if err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, c); err != nil {
			t.Fatal(err)
		}
		f := mkf("a")
		f.Size += int64(i + 1)
		if _, err := s.UpsertFiles(bg, []store.File{f}); err != nil {
			t.Fatal(err)
		}
	}
	var writes int
	var version string
	var writtenAt int64
	err := s.r.QueryRow(`SELECT writes, version, written_at FROM file_tags WHERE file_key = 'a'`).Scan(&writes, &version, &writtenAt)
	if err != nil || writes != 2 {
		t.Fatalf("writes = %d %v", writes, err)
	}
	// The row is the last completion's.
	if want := t0.Add(time.Minute).UnixMilli(); version != "v1" || writtenAt != want {
		t.Fatalf("version %q written_at %d, want v1 at %d", version, writtenAt, want)
	}
}

// RenewLeases takes any number of worker ids: more than SQLite binds in
// one statement (32,766) are renewed in statements of renewChunk, all in
// one transaction.
func TestRenewLeasesManyWorkers(t *testing.T) {
	s := openT(t, tempDB(t))
	seed(t, s, "a", "b", "c")
	ids := make([]string, 40000)
	for i := range ids {
		ids[i] = fmt.Sprintf("h%05d/worker:0", i)
	}
	for i, k := range map[int]string{0: "a", 20000: "b", 39999: "c"} {
		if _, err := s.Claim(bg, claim(k, ids[i], t0, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.RenewLeases(bg, ids, at(time.Hour)); err != nil || n != 3 {
		t.Fatalf("RenewLeases of %d workers = %d %v, want 3", len(ids), n, err)
	}
	if removed, err := s.CleanupClaims(bg, at(time.Hour)); err != nil || len(removed) != 0 {
		t.Fatalf("CleanupClaims before the renewed leases end = %+v %v", removed, err)
	}
}

// A COMMIT that fails may leave its transaction open on the writer
// connection (a deferred constraint does: SQLite keeps the transaction for
// the caller to fix or roll back). The write fails, and the handle's next
// write starts afresh instead of finding a transaction already open.
func TestFailedCommitRolledBack(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path, func(c *config) { c.pragmas = append(c.pragmas, "foreign_keys(1)") })
	execAll(t, path,
		`CREATE TABLE parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)`,
		`CREATE TRIGGER boom AFTER INSERT ON meta WHEN NEW.key = 'boom' BEGIN INSERT INTO child VALUES (1); END`)
	if err := s.SetMeta(bg, "boom", "x"); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("SetMeta whose COMMIT fails = %v, want the constraint's error", err)
	}
	if err := s.SetMeta(bg, "k", "v"); err != nil {
		t.Fatalf("the write after a failed COMMIT: %v", err)
	}
	for k, want := range map[string]bool{"boom": false, "k": true} {
		if _, ok, err := s.GetMeta(bg, k); err != nil || ok != want {
			t.Fatalf("GetMeta(%s) = %v %v, want %v", k, ok, err, want)
		}
	}
}

func TestUseAfterClose(t *testing.T) {
	s, err := Open(tempDB(t))
	if err != nil {
		t.Fatal(err)
	}
	seed(t, s, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	calls := map[string]func() error{
		"UpsertFiles":   func() error { _, err := s.UpsertFiles(bg, []store.File{mkf("b")}); return err },
		"Discover":      func() error { _, err := s.Discover(bg, t0, "", 1); return err },
		"Claim":         func() error { _, err := s.Claim(bg, claim("a", "i/w0", t0, time.Hour)); return err },
		"Complete":      func() error { return s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{}) },
		"Release":       func() error { return s.Release(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, nil) },
		"ReleaseWorker": func() error { _, err := s.ReleaseWorker(bg, "i/w0", store.Death{}, nil); return err },
		"Quarantine":    func() error { return s.Quarantine(bg, "a", "x") },
		"RenewLeases":   func() error { _, err := s.RenewLeases(bg, []string{"i/w0"}, t0); return err },
		"CleanupClaims": func() error { _, err := s.CleanupClaims(bg, t0); return err },
		"File":          func() error { _, err := s.File(bg, "a"); return err },
		"Counts":        func() error { _, err := s.Counts(bg); return err },
		"GetMeta":       func() error { _, _, err := s.GetMeta(bg, "k"); return err },
		"SetMeta":       func() error { return s.SetMeta(bg, "k", "v") },
		"LoadRestart":   func() error { _, _, err := s.LoadRestart(bg, "k"); return err },
		"SaveRestart":   func() error { return s.SaveRestart(bg, "k", restart.State{}) },
		"AppendHistory": func() error { return s.AppendHistory(bg, []store.HistoryRow{{At: t0}}) },
	}
	for name, call := range calls {
		if err := call(); err == nil || !store.IsFault(err) || !strings.HasPrefix(err.Error(), "sqlite: ") {
			t.Errorf("%s after Close = %v, want a fault", name, err)
		}
	}
}

// TestOddPath: the file name travels in a URI; odd characters survive.
func TestOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir?with#odd%20chars&ü")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "my db?.sqlite")
	s := openT(t, path)
	seed(t, s, "a")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at %q: %v", path, err)
	}
	if s.Path() != path {
		t.Fatalf("Path = %q", s.Path())
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "my db?.sqlite") {
			t.Errorf("stray file %q", e.Name())
		}
	}
}

// A file written before history appends were idempotent lacks the
// identity index and may hold duplicate rows: it opens all the same (the
// index is not UNIQUE), gets the index at its first open for writing (not
// at a read-only one), keeps its old rows and takes no new duplicates. An
// upgrade from version 1 and a new file get the index too.
func TestHistoryIdentityOnAnOldFile(t *testing.T) {
	path := tempDB(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := func(sec int, comp, status string) store.HistoryRow {
		return store.HistoryRow{At: at(time.Duration(sec) * time.Second), Instance: "h:1:0", Component: comp, Status: status}
	}
	if err := s.AppendHistory(bg, []store.HistoryRow{r(0, "a", "healthy"), r(0, "b", "healthy")}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	const has = `SELECT name FROM sqlite_schema WHERE type = 'index' AND name = 'health_history_identity'`
	execAll(t, path, `DROP INDEX health_history_identity`,
		`INSERT INTO health_history (at_ms, instance, component, status) SELECT at_ms, instance, component, status FROM health_history WHERE component = 'a'`)

	ro := openT(t, path, WithReadOnly())
	if got := strings1(t, ro.r, has); len(got) != 0 {
		t.Fatal("a read-only open created the index")
	}
	s = openT(t, path)
	if got := strings1(t, s.r, has); len(got) != 1 {
		t.Fatal("no health_history_identity after an open for writing")
	}
	if err := s.AppendHistory(bg, []store.HistoryRow{r(0, "a", "healthy"), r(0, "b", "healthy"), r(30, "a", "failed"), r(30, "a", "failed")}); err != nil {
		t.Fatal(err)
	}
	got, err := s.RecentHistory(bg, 100)
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, h := range got {
		desc = append(desc, fmt.Sprintf("%s@%ds", h.Component, h.At.Sub(t0)/time.Second))
	}
	if want := []string{"a@0s", "b@0s", "a@0s", "a@30s"}; !slices.Equal(desc, want) {
		t.Fatalf("history = %v, want %v (the old duplicate kept, nothing added twice)", desc, want)
	}
	plan := queryPlan(t, s.w, writeSQL[sAppendHistory], ms(t0), "h:1:0", "a", "healthy")
	if !strings.Contains(plan, "USING COVERING INDEX health_history_identity (instance=? AND component=? AND at_ms=?)") {
		t.Errorf("AppendHistory's probe does not use the identity index:\n%s", plan)
	}

	path = tempDB(t)
	openT(t, path)
	downgradeToV1(t, path)
	if got := strings1(t, openT(t, path).r, has); len(got) != 1 {
		t.Fatal("no health_history_identity after an upgrade from version 1")
	}
}

// PruneHistory deletes a backlog larger than one statement's batch.
func TestPruneHistoryBatches(t *testing.T) {
	s := openT(t, tempDB(t))
	ctx := t.Context()
	rows := make([]store.HistoryRow, 2*pruneBatch+5)
	for i := range rows {
		rows[i] = store.HistoryRow{At: time.UnixMilli(int64(1000 + i)), Instance: "i", Component: "worker:discovery:0", Status: "healthy"}
	}
	if err := s.AppendHistory(ctx, rows); err != nil {
		t.Fatal(err)
	}
	n, err := s.PruneHistory(ctx, time.UnixMilli(int64(1000+len(rows)-1)))
	if err != nil || n != len(rows)-1 {
		t.Fatalf("PruneHistory = %d, %v; want %d", n, err, len(rows)-1)
	}
	left, err := s.RecentHistory(ctx, 10)
	if err != nil || len(left) != 1 || left[0].At.UnixMilli() != int64(1000+len(rows)-1) {
		t.Fatalf("left %+v, %v", left, err)
	}
}

// A write whose context ends while it waits for a held lock names the
// lock, wherever the deadline lands: between two tries (asleep) or during
// one (the driver then answers only "context deadline exceeded", which
// left a main process's store error without its cause, about one write
// in six: 24–54 of 150 here). A deadline that ends the very first try,
// before any busy answer, cannot say (a connection reopened after the
// last cancelled write, a pause of the runtime: up to 4 of 150 seen under
// -race), so up to 10 are allowed.
func TestLockedUntilTheDeadlineNamesTheLock(t *testing.T) {
	path := tempDB(t)
	s := openT(t, path)
	seed(t, s, "a")
	conn, err := raw(t, path).Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	const tries = 150
	var bare []string
	for i := 0; i < tries; i++ {
		ctx, cancel := context.WithTimeout(bg, time.Duration(8+i%7)*time.Millisecond+time.Duration(i*37%1000)*time.Microsecond)
		err := s.SetMeta(ctx, "k", "v")
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("try %d: %v, want the deadline", i, err)
		}
		if !strings.Contains(err.Error(), "locked") {
			bare = append(bare, err.Error())
		}
	}
	if len(bare) > 10 {
		t.Errorf("%d of %d writes cut short by their deadline under a held lock did not name the lock: %q", len(bare), tries, bare)
	}
}

package arangodb

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
)

// The password of the tests: it must never show in an error.
const (
	secret    = "s3cr3t-P@ss/w0rd"
	secretEsc = "s3cr3t-P%40ss%2Fw0rd"
)

var bg = context.Background()

// openFake opens a store on a fake server.
func openFake(t testing.TB, f *fakeServer, opts ...Option) *Store {
	t.Helper()
	s, err := Open(bg, f.url(), append([]Option{withRetryBase(time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func noSecret(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{secret, secretEsc, url.QueryEscape(secret)} {
		if strings.Contains(err.Error(), s) || strings.Contains(fmt.Sprintf("%+v", err), s) {
			t.Fatalf("%s: the password shows in the error: %v", what, err)
		}
	}
}

func wantFault(t *testing.T, what string, err error, contains ...string) {
	t.Helper()
	if err == nil || !store.IsFault(err) {
		t.Fatalf("%s = %v, want a fault", what, err)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Fatalf("%s = %q, want it to contain %q", what, err, c)
		}
	}
	noSecret(t, what, err)
}

func wantSem(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) || store.IsFault(err) {
		t.Fatalf("%s = %v, want %v (not a fault)", what, err, want)
	}
	noSecret(t, what, err)
}

// TestContractFake runs the contract suite over the wire against the
// emulation: bind parameters, documents and results as the adapter sends
// and decodes them.
func TestContractFake(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openFake(t, newFake(t, "nomarr")) })
}

func TestContractFakeConcurrent(t *testing.T) {
	f := newFake(t, "nomarr")
	storetest.RunConcurrent(t, func(t *testing.T) store.Store { return openFake(t, f) })
}

// TestContractFakeConflicts runs the concurrent suite while every fifth
// write meets a write-write conflict: operations run again and the suite's
// exactly-once properties hold (among them, a SwapMeta race has exactly
// one winner: the losers' conflicting writes run again on a fresh
// snapshot, where their compare fails).
func TestContractFakeConflicts(t *testing.T) {
	f := newFake(t, "nomarr")
	var n, injected atomic.Int64
	writes := map[string]bool{qClaim: true, qRemoveHeld: true, qCompleteFile: true, qPutTags: true,
		qRenewLeases: true, qCleanupClaims: true, qUpsertFiles: true, qSwapMeta: true, qInsertMeta: true, qKeepHeld: true,
		qRetag: true, qNextStatSeq: true}
	var handles []*Store
	storetest.RunConcurrent(t, func(t *testing.T) store.Store {
		s := openFake(t, f, WithConflictBudget(10*time.Second))
		handles = append(handles, s)
		f.setHook(func(route, aql string) *fakeErr {
			if writes[aql] && n.Add(1)%5 == 0 {
				injected.Add(1)
				return &fakeErr{409, errConflict, "write-write conflict"}
			}
			return nil
		})
		return s
	})
	var retries int64
	for _, s := range handles {
		c, _ := s.Stats()
		retries += c
	}
	if injected.Load() == 0 || retries != injected.Load() {
		t.Fatalf("%d conflicts injected, %d retries", injected.Load(), retries)
	}
	f.wantNoTx(t)
}

func TestRedacted(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"arangodb://root:" + secretEsc + "@db.example:8529/nomarr", "arangodb://root:xxxxx@db.example:8529/nomarr"},
		{"arangodbs://u:pw@h/db", "arangodbs://u:xxxxx@h/db"},
		{"arangodb://h:8529/db", "arangodb://h:8529/db"},
		{"arangodb://u@h:8529/db", "arangodb://u@h:8529/db"},
		// Malformed: an unescaped '/' or '@' in the password.
		{"arangodb://root:" + secret + "@h:8529/db", "arangodb://root:xxxxx@h:8529/db"},
		{"arangodb://root:1234/" + secret + "@h/db", "arangodb://root:xxxxx@h/db"},
		{"root:" + secret + "@h", "root:xxxxx@h"},
		{"arangodb://" + secret + "@h/db", "arangodb://xxxxx@h/db"},
	} {
		got := Redacted(tc.in)
		if got != tc.want {
			t.Errorf("Redacted(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, s := range []string{secret, secretEsc, "pw@", "1234/"} {
			if strings.Contains(got, s) {
				t.Errorf("Redacted(%q) = %q shows %q", tc.in, got, s)
			}
		}
	}
}

func TestParseURL(t *testing.T) {
	tg, err := parseURL("arangodb://root:" + secretEsc + "@db.example/nomarr_prod")
	if err != nil {
		t.Fatal(err)
	}
	if tg.endpoint != "http://db.example:8529" || tg.host != "db.example:8529" || tg.user != "root" || tg.password != secret || !tg.auth || tg.db != "nomarr_prod" {
		t.Fatalf("parseURL = %+v", tg)
	}
	tg, err = parseURL("arangodbs://[::1]:9000")
	if err != nil || tg.endpoint != "https://[::1]:9000" || tg.auth || tg.db != DefaultDatabase {
		t.Fatalf("parseURL(tls, ipv6, no db) = %+v %v", tg, err)
	}
	for _, bad := range []string{
		"arangodb://root:" + secret + "@h:8529/db", // unescaped '/' and '@'
		"arangodb://root:1234/" + secret + "@h/db",
		"arangodb://root:" + secretEsc + "@h:port/db",
		"arangodb://root:" + secretEsc + "@/db",
		"sqlite:/tmp/x.db",
		"arangodb://root:" + secretEsc + "@h/db?x=1",
		"arangodb://:" + secretEsc + "@h/db",
		"arangodb://root:" + secretEsc + "@h/a/b",
		"arangodb://root:" + secret + "\x7f@h/db",
	} {
		_, err := parseURL(bad)
		if err == nil {
			t.Errorf("parseURL(%q) accepted", bad)
			continue
		}
		noSecret(t, "parseURL("+bad+")", err)
		_, err = Open(bg, bad)
		if err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
		noSecret(t, "Open("+bad+")", err)
	}
}

func TestBootstrap(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	f.locked(func() {
		if got := slices.Sorted(mapsKeys(f.colls)); !slices.Equal(got, slices.Sorted(slices.Values(collections))) {
			t.Fatalf("collections = %v", got)
		}
		for _, ix := range indexes {
			want := fakeIndex{Type: "persistent", Fields: ix.fields, StoredValues: ix.stored}
			if got := f.indexes[ix.coll+"/"+ix.name]; !reflect.DeepEqual(got, want) {
				t.Fatalf("index %s = %+v, want %+v", ix.name, got, want)
			}
		}
	})
	if v, ok, err := s.GetMeta(bg, MetaSchemaVersion); err != nil || !ok || v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema version = %q %v %v", v, ok, err)
	}
	// A second open of a complete database costs one query.
	n := len(f.requests())
	openFake(t, f)
	if got := f.requests()[n:]; len(got) != 1 || got[0] != "POST /_db/nomarr/_api/cursor" {
		t.Fatalf("second open sent %v", got)
	}
	// A newer schema is refused.
	f.locked(func() {
		f.colls[colMeta][MetaSchemaVersion] = with(f.colls[colMeta][MetaSchemaVersion], "value", strconv.Itoa(SchemaVersion+1))
	})
	if _, err := Open(bg, f.url()); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer schema = %v", err)
	}
}

// A database of schema version 1 (no track_vectors) gets the collection
// and the version at its next open, its files kept, and takes vectors.
func TestBootstrapUpgradesVersion1(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	if _, err := s.UpsertFiles(bg, []store.File{{Key: "a", Path: "/m/a.flac", Size: 1, MtimeMs: 1, IsValid: true, NeedsTagging: true}}); err != nil {
		t.Fatal(err)
	}
	f.locked(func() {
		delete(f.colls, colVectors)
		f.colls[colMeta][MetaSchemaVersion] = with(f.colls[colMeta][MetaSchemaVersion], "value", "1")
	})
	s = openFake(t, f)
	if v, ok, err := s.GetMeta(bg, MetaSchemaVersion); err != nil || !ok || v != strconv.Itoa(SchemaVersion) {
		t.Fatalf("schema version after the upgrade = %q %v %v", v, ok, err)
	}
	if err := s.PutTrackVector(bg, "a", "m1", []float32{0.6, 0.8}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.TrackVectors(bg, "m1", "", 0); err != nil || len(got) != 1 || !slices.Equal(got[0].Vector, []float32{0.6, 0.8}) {
		t.Fatalf("TrackVectors after the upgrade = %+v, %v", got, err)
	}
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// openConcurrently opens n stores on url at once (each bootstrapping the
// schema if it has to) and requires every Open to succeed.
func openConcurrently(t *testing.T, url string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range errs {
		wg.Go(func() {
			s, err := Open(t.Context(), url)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent open %d: %v", i, err)
		}
	}
}

func TestConcurrentBootstrap(t *testing.T) {
	f := newFake(t, "nomarr")
	openConcurrently(t, f.url(), 8)
	var dupes int
	for _, r := range f.requests() {
		if r == "POST /_db/_system/_api/database" {
			dupes++
		}
	}
	t.Logf("%d database creations attempted", dupes)
}

func TestBootstrapDatabaseMissing(t *testing.T) {
	f := newFake(t, "nomarr")
	f.user, f.pass = "nomarr", secret
	u := f.url()
	_, err := Open(bg, u, WithoutCreateDatabase())
	wantFault(t, "Open without create", err, `database "nomarr" not found at 127.0.0.1:`)
	f.canCreateDB = false
	_, err = Open(bg, u)
	wantFault(t, "Open without the right to create", err, "create database", "permission denied", `user "nomarr"`)
	if !strings.Contains(err.Error(), "arangodb://nomarr:xxxxx@127.0.0.1:") {
		t.Fatalf("error does not name the redacted URL: %v", err)
	}
}

func TestAuth(t *testing.T) {
	f := newFake(t, "nomarr")
	f.user, f.pass = "root", secret
	good := f.url()
	if !strings.Contains(good, secretEsc) {
		t.Fatalf("url %q", good)
	}
	s, err := Open(bg, good)
	if err != nil {
		t.Fatalf("Open with the right password: %v", err)
	}
	s.Close()
	bad := strings.Replace(good, secretEsc, "wrong-"+secretEsc, 1)
	_, err = Open(bg, bad)
	wantFault(t, "Open with a wrong password", err, "authentication failed", `user "root"`, "HTTP 401")
	if strings.Contains(err.Error(), "wrong-") {
		t.Fatalf("the wrong password shows: %v", err)
	}
}

func TestClaimConflict1210(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	storetestSeed(t, s, "a")
	// The claim query's INSERT meets a claim committed after its check.
	f.setHook(func(route, aql string) *fakeErr {
		if aql == qClaim {
			return &fakeErr{409, errUniqueViolate, "unique constraint violated - in index primary of type primary over '_key'; conflicting key: claim_a"}
		}
		return nil
	})
	_, err := s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)})
	wantSem(t, "Claim meeting 1210", err, store.ErrConflict)
	if want := "arangodb: claim a: store: claim already exists"; err.Error() != want {
		t.Fatalf("message = %q, want %q", err, want)
	}
}

func storetestSeed(t testing.TB, s *Store, keys ...string) {
	t.Helper()
	var fs []store.File
	for _, k := range keys {
		fs = append(fs, storetest.NewFile(k))
	}
	if _, err := s.UpsertFiles(bg, fs); err != nil {
		t.Fatal(err)
	}
}

func TestWriteConflictRetried(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	storetestSeed(t, s, "a", "b")
	var left atomic.Int32
	left.Store(3)
	f.setHook(func(route, aql string) *fakeErr {
		if (aql == qClaim || aql == qRemoveHeld) && left.Add(-1) >= 0 {
			return &fakeErr{409, errConflict, "timeout waiting to lock key - in index primary of type primary over '_key'; conflicting key: claim_a"}
		}
		return nil
	})
	claim := store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}
	if _, err := s.Claim(bg, claim); err != nil {
		t.Fatalf("Claim after 3 conflicts: %v", err)
	}
	if c, _ := s.Stats(); c != 3 {
		t.Fatalf("conflict retries = %d, want 3", c)
	}
	// In a transaction: the aborted attempts changed nothing.
	left.Store(2)
	if err := s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{Version: "v", At: storetest.T0}); err != nil {
		t.Fatalf("Complete after 2 conflicts: %v", err)
	}
	if tags := f.coll(colTags)["a"]; tags == nil || tags["writes"] != 1.0 {
		t.Fatalf("tags document = %v, want one write", tags)
	}
	f.wantNoTx(t)
	// A conflict that does not go away: a fault after the budget.
	s2 := openFake(t, f, WithConflictBudget(30*time.Millisecond))
	left.Store(1 << 30)
	start := time.Now()
	_, err := s2.Claim(bg, store.Claim{FileKey: "b", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)})
	wantFault(t, "Claim under a lasting conflict", err, "arangodb: claim b: write-write conflict persisted")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("gave up after %s", d)
	}
}

func TestNotFoundDocument(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	storetestSeed(t, s, "a")
	ref := store.Ref{FileKey: "a", WorkerID: "i/w0"}
	if _, err := s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	f.setHook(func(route, aql string) *fakeErr {
		if aql != "" {
			return &fakeErr{404, errDocNotFound, "document not found"}
		}
		return nil
	})
	wantSem(t, "Complete", s.Complete(bg, ref, store.Completion{}), store.ErrClaimLost)
	wantSem(t, "Release", s.Release(bg, ref, nil), store.ErrClaimLost)
	wantSem(t, "Release with update", s.Release(bg, ref, &store.FileUpdate{Attempts: 1}), store.ErrClaimLost)
	wantSem(t, "Quarantine", s.Quarantine(bg, "a", "x"), store.ErrNotFound)
	f.setHook(nil)
	f.wantNoTx(t)
	// Without the fault, the plain answers: missing documents.
	_, err := s.File(bg, "zz")
	wantSem(t, "File(zz)", err, store.ErrNotFound)
	wantSem(t, "Quarantine(zz)", s.Quarantine(bg, "zz", "x"), store.ErrNotFound)
	wantSem(t, "Complete(zz)", s.Complete(bg, store.Ref{FileKey: "zz", WorkerID: "i/w0"}, store.Completion{}), store.ErrClaimLost)
	// Keys no document can have are answered without asking the server.
	n := len(f.requests())
	for _, k := range []string{"", "a/b", "a b", strings.Repeat("k", 250)} {
		_, err := s.File(bg, k)
		wantSem(t, "File(bad key)", err, store.ErrNotFound)
		_, err = s.Claim(bg, store.Claim{FileKey: k})
		wantSem(t, "Claim(bad key)", err, store.ErrNotEligible)
		wantSem(t, "Release(bad key)", s.Release(bg, store.Ref{FileKey: k}, nil), store.ErrClaimLost)
	}
	if got := f.requests()[n:]; len(got) != 0 {
		t.Fatalf("bad keys sent %v", got)
	}
	// A file that vanished under its claim: claim dropped, ErrNotFound.
	f.locked(func() { delete(f.colls[colFiles], "a") })
	wantSem(t, "Complete of a vanished file", s.Complete(bg, ref, store.Completion{}), store.ErrNotFound)
	if c, tg := f.coll(colClaims), f.coll(colTags); len(c) != 0 || len(tg) != 0 {
		t.Fatalf("claims %v tags %v after completing a vanished file", c, tg)
	}
}

func Test503ReadsRetried(t *testing.T) {
	f := newFake(t, "nomarr")
	f.user, f.pass = "root", secret
	s := openFake(t, f)
	storetestSeed(t, s, "a")
	var left atomic.Int32
	f.setHook(func(route, aql string) *fakeErr {
		if aql != "" && left.Add(-1) >= 0 {
			return &fakeErr{503, 503, "service unavailable"}
		}
		return nil
	})
	left.Store(2)
	if _, err := s.File(bg, "a"); err != nil {
		t.Fatalf("File after two 503s: %v", err)
	}
	if _, r := s.Stats(); r != 2 {
		t.Fatalf("read retries = %d, want 2", r)
	}
	left.Store(1 << 30)
	n := len(f.requests())
	_, err := s.Discover(bg, storetest.T0, "", 10)
	wantFault(t, "Discover under 503", err, "arangodb: discover: server unreachable at "+f.srv.Listener.Addr().String()+": HTTP 503")
	if got := len(f.requests()) - n; got != DefaultReadAttempts {
		t.Fatalf("Discover tried %d times, want %d", got, DefaultReadAttempts)
	}
	// Writes are not retried: the answer was lost, not the write.
	n = len(f.requests())
	_, err = s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)})
	wantFault(t, "Claim under 503", err, "arangodb: claim a: server unreachable at ")
	if got := len(f.requests()) - n; got != 1 {
		t.Fatalf("Claim tried %d times, want 1", got)
	}
	for name, err := range map[string]error{
		"Counts":        func() error { _, err := s.Counts(bg); return err }(),
		"GetMeta":       func() error { _, _, err := s.GetMeta(bg, "k"); return err }(),
		"LoadRestart":   func() error { _, _, err := s.LoadRestart(bg, "n/w"); return err }(),
		"SaveRestart":   s.SaveRestart(bg, "n/w", restart.State{}),
		"AppendHistory": s.AppendHistory(bg, []store.HistoryRow{{Status: "x"}}),
		"RenewLeases":   func() error { _, err := s.RenewLeases(bg, []string{"i/w0"}, storetest.T0); return err }(),
		"CleanupClaims": func() error { _, err := s.CleanupClaims(bg, storetest.T0); return err }(),
		"ReleaseWorker": func() error { _, err := s.ReleaseWorker(bg, "i/w0", store.Death{}, nil); return err }(),
		"Complete":      s.Complete(bg, store.Ref{FileKey: "a", WorkerID: "i/w0"}, store.Completion{}),
		"UpsertFiles":   func() error { _, err := s.UpsertFiles(bg, []store.File{storetest.NewFile("b")}); return err }(),
	} {
		wantFault(t, name, err, "server unreachable at 127.0.0.1:")
	}
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	start := time.Now()
	_, err = Open(bg, "arangodb://root:"+secretEsc+"@"+addr+"/nomarr", withRetryBase(time.Millisecond))
	wantFault(t, "Open", err, "arangodb: open arangodb://root:xxxxx@"+addr+"/nomarr: server unreachable at "+addr+": ", "connection refused")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Open took %s", d)
	}
	t.Log(err)

	// A store whose server goes away.
	f := newFake(t, "nomarr")
	f.user, f.pass = "root", secret
	s := openFake(t, f)
	f.srv.Close()
	_, err = s.File(bg, "a")
	wantFault(t, "File", err, "arangodb: file a: server unreachable at "+f.srv.Listener.Addr().String())
	_, err = s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "w"})
	wantFault(t, "Claim", err, "arangodb: claim a: server unreachable at ")
}

func TestTimeout(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f, WithTimeout(100*time.Millisecond))
	release := make(chan struct{})
	defer close(release)
	f.setHook(func(route, aql string) *fakeErr {
		if aql != "" {
			select {
			case <-release:
			case <-time.After(2 * time.Second):
			}
		}
		return nil
	})
	start := time.Now()
	_, err := s.File(bg, "a")
	wantFault(t, "File against a hung server", err, "arangodb: file a: server unreachable at ", "no answer in time")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v does not match context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("timed out after %s", d)
	}
	// The caller's deadline wins when it is earlier.
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	_, err = s.Claim(ctx, store.Claim{FileKey: "a", WorkerID: "w"})
	wantFault(t, "Claim with a short deadline", err, "no answer in time")
}

func TestCursorBatches(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	var keys []string
	for i := range 25 {
		keys = append(keys, fmt.Sprintf("f%03d", i))
	}
	storetestSeed(t, s, keys...)
	f.locked(func() { f.batch = 4 })
	fs, err := s.Discover(bg, storetest.T0, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := storetest.Keys(fs); !slices.Equal(got, keys) {
		t.Fatalf("Discover over batches = %v", got)
	}
	f.locked(func() {
		if len(f.cursors) != 0 {
			t.Fatalf("cursors left: %v", f.cursors)
		}
	})
}

func TestLargeUpsertOneTransaction(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	files := make([]store.File, 2500)
	for i := range files {
		files[i] = storetest.NewFile(fmt.Sprintf("k%05d", i))
	}
	n := len(f.requests())
	if _, err := s.UpsertFiles(bg, files); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()[n:]
	if len(reqs) != 5 || reqs[0] != "POST /_db/nomarr/_api/transaction/begin" || !strings.HasPrefix(reqs[4], "PUT /_db/nomarr/_api/transaction/") {
		t.Fatalf("large upsert sent %v", reqs)
	}
	if c, err := s.Counts(bg); err != nil || c.Total != 2500 || c.Pending != 2500 {
		t.Fatalf("Counts = %+v %v", c, err)
	}
	// Invalid keys reject the batch before anything is sent.
	bad := []store.File{storetest.NewFile("ok"), storetest.NewFile("has space"), storetest.NewFile("ok2")}
	n = len(f.requests())
	if _, err := s.UpsertFiles(bg, bad); err == nil || !strings.Contains(err.Error(), `key "has space"`) {
		t.Fatalf("UpsertFiles(bad key) = %v", err)
	}
	if len(f.requests()) != n {
		t.Fatal("a rejected batch was sent")
	}
}

func TestTLS(t *testing.T) {
	f, roots := newFakeTLS(t, "nomarr")
	f.user, f.pass = "root", secret
	if !strings.HasPrefix(f.url(), "arangodbs://") {
		t.Fatalf("url %s", f.url())
	}
	s := openFake(t, f, WithTLSConfig(&tls.Config{RootCAs: roots}))
	storetestSeed(t, s, "a")
	if _, err := s.File(bg, "a"); err != nil {
		t.Fatal(err)
	}
	// Without trusting the certificate: a fault that says so, no password.
	_, err := Open(bg, f.url())
	wantFault(t, "Open with an untrusted certificate", err, "server unreachable at 127.0.0.1:", "certificate")
}

func TestUseAfterClose(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := s.File(bg, "a")
	wantFault(t, "File after Close", err, "store is closed")
	wantFault(t, "SetMeta after Close", s.SetMeta(bg, "k", "v"), "store is closed")
}

func TestDocKey(t *testing.T) {
	seen := map[string]string{}
	for _, k := range []string{"n/worker:discovery:0", "host:1:2/worker:discovery:0", "a%2Fb", "a/b", "worker_enabled", "gpu:health", "ü"} {
		dk, err := docKey(k)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(dk); i++ {
			if !keyByteOK(dk[i]) {
				t.Fatalf("docKey(%q) = %q has %q", k, dk, dk[i])
			}
		}
		if prev, dup := seen[dk]; dup {
			t.Fatalf("docKey(%q) = docKey(%q) = %q", k, prev, dk)
		}
		seen[dk] = k
	}
	if dk, _ := docKey("gpu:health"); dk != "gpu:health" {
		t.Fatalf("docKey(gpu:health) = %q", dk)
	}
	if _, err := docKey(""); err == nil {
		t.Fatal("docKey accepted an empty key")
	}
}

func TestNum64(t *testing.T) {
	var d fileDoc
	err := json.Unmarshal([]byte(`{"_key":"a","size":1.0,"mtime_ms":1773480413000,"crash_count":2.0,"attempts":null,"next_retry_at":1.773480413e12}`), &d)
	if err != nil {
		t.Fatal(err)
	}
	if d.Size != 1 || d.MtimeMs != 1773480413000 || d.CrashCount != 2 || d.Attempts != 0 || d.NextRetryAt != 1773480413000 {
		t.Fatalf("decoded %+v", d)
	}
	if err := json.Unmarshal([]byte(`{"size":"x"}`), &d); err == nil {
		t.Fatal("a string decoded as a number")
	}
	b, _ := json.Marshal(fileDoc{Size: 5, LastTaggedAt: 1773480413000})
	if !strings.Contains(string(b), `"size":5,`) || !strings.Contains(string(b), `"last_tagged_at":1773480413000,`) {
		t.Fatalf("encoded %s", b)
	}
}

// TestBatchWritesRetryDeletedDocument: a statement over many documents
// that meets one deleted by a concurrent transaction after its snapshot
// fails with "document not found" (1202) — CleanupClaims' REMOVE meeting a
// claim just completed, RenewLeases' UPDATE meeting one just released,
// ReleaseWorker's REMOVE meeting one just cleaned up, PruneHistory meeting
// rows another host pruned. The statement had no effect; it runs again on
// a fresh snapshot instead of being reported as a store fault, and its
// result is that of the successful run. A 1202 that persists is a fault
// after the conflict budget.
func TestBatchWritesRetryDeletedDocument(t *testing.T) {
	f := newFake(t, "nomarr")
	s := openFake(t, f)
	storetestSeed(t, s, "a", "b")
	for _, k := range []string{"a", "b"} {
		if _, err := s.Claim(bg, store.Claim{FileKey: k, WorkerID: "i/w0", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendHistory(bg, []store.HistoryRow{{At: storetest.T0, Component: "x", Status: "x"}, {At: storetest.T0, Component: "y", Status: "y"}}); err != nil {
		t.Fatal(err)
	}
	// goneOnce answers the first run of q with 1202.
	goneOnce := func(q string) {
		var n atomic.Int32
		f.setHook(func(route, aql string) *fakeErr {
			if aql == q && n.Add(1) == 1 {
				return &fakeErr{404, errDocNotFound, "document not found"}
			}
			return nil
		})
	}
	before, _ := s.Stats()

	goneOnce(qRenewLeases)
	if n, err := s.RenewLeases(bg, []string{"i/w0"}, storetest.At(2*time.Minute)); err != nil || n != 2 {
		t.Fatalf("RenewLeases after one 1202 = %d, %v (fault %v), want 2 leases renewed", n, err, store.IsFault(err))
	}
	goneOnce(qPruneHistory)
	if n, err := s.PruneHistory(bg, storetest.At(time.Hour)); err != nil || n != 2 {
		t.Fatalf("PruneHistory after one 1202 = %d, %v (fault %v), want 2 rows", n, err, store.IsFault(err))
	}
	goneOnce(qCleanupClaims)
	got, err := s.CleanupClaims(bg, storetest.At(time.Hour))
	if err != nil || len(got) != 2 || got[0].FileKey != "a" || got[1].FileKey != "b" {
		t.Fatalf("CleanupClaims after one 1202 = %v, %v (fault %v), want claims a and b", got, err, store.IsFault(err))
	}
	if _, err := s.Claim(bg, store.Claim{FileKey: "a", WorkerID: "i/w1", ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	goneOnce(qRemoveWorkerClaims)
	rel, err := s.ReleaseWorker(bg, "i/w1", store.Death{}, &store.Crash{QuarantineAt: 2})
	if err != nil || len(rel) != 1 || rel[0].FileKey != "a" || rel[0].CrashCount != 1 {
		t.Fatalf("ReleaseWorker after one 1202 = %v, %v (fault %v), want a released once with crash count 1", rel, err, store.IsFault(err))
	}
	f.wantNoTx(t)
	if after, _ := s.Stats(); after-before != 4 {
		t.Fatalf("conflict retries = %d, want 4", after-before)
	}

	// A 1202 that does not go away: a fault once the budget is spent.
	s2 := openFake(t, f, WithConflictBudget(30*time.Millisecond))
	f.setHook(func(route, aql string) *fakeErr {
		if aql == qCleanupClaims {
			return &fakeErr{404, errDocNotFound, "document not found"}
		}
		return nil
	})
	_, err = s2.CleanupClaims(bg, storetest.At(time.Hour))
	wantFault(t, "CleanupClaims under a lasting 1202", err, "cleanup claims", "error 1202")
	f.setHook(nil)
}

// A history row's key is its identity in the key alphabet: legal and
// within the length limit whatever the names (bytes outside the alphabet,
// the separator '!', '%', names too long to spell out), and distinct for
// distinct identities; through the fake, which refuses an illegal key as
// a server does, such rows are stored once each.
func TestHistoryKey(t *testing.T) {
	long := strings.Repeat("/", 100) // 300 bytes escaped
	row := func(inst, comp string, at time.Duration) store.HistoryRow {
		return store.HistoryRow{At: storetest.At(at), Instance: inst, Component: comp, Status: "healthy"}
	}
	rows := []store.HistoryRow{
		row("host:1:0", "worker:discovery:0", 0),
		row("host:1:0", "worker:discovery:0", time.Millisecond),
		row("a!b", "c", 0), row("a", "b!c", 0), row("a%21b", "c", 0), row("a%b", "c", 0),
		row("", "x", 0), row("x", "", 0), row("", "", 0),
		row("naïve host/1 0", "worker discovery\t0", 0),
		row(long, "c", 0), row(long+"x", "c", 0), row(long, "c", time.Millisecond),
	}
	seen := map[string]store.HistoryRow{}
	for _, r := range rows {
		k := historyKey(r)
		if !legalKey(k) {
			t.Errorf("historyKey(%q, %q) = %q: not a legal key", r.Instance, r.Component, k)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("historyKey(%q, %q) = %q, as for (%q, %q)", r.Instance, r.Component, k, prev.Instance, prev.Component)
		}
		seen[k] = r
		if historyKey(r) != k {
			t.Errorf("historyKey(%q, %q) is not deterministic", r.Instance, r.Component)
		}
		same := r
		same.At, same.Status = r.At.Add(300*time.Microsecond), "failed"
		if historyKey(same) != k {
			t.Errorf("historyKey differs within one millisecond, or with the status")
		}
	}
	if k := historyKey(rows[0]); k != "host:1:0!worker:discovery:0!"+fmt.Sprint(storetest.T0.UnixMilli()) {
		t.Errorf("historyKey of a plain row = %q, want it readable", k)
	}

	f := newFake(t, "nomarr")
	s := openFake(t, f)
	for range 2 {
		if err := s.AppendHistory(bg, rows); err != nil {
			t.Fatalf("AppendHistory: %v", err)
		}
	}
	got, err := s.RecentHistory(bg, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows stored after appending %d twice, want each once", len(got), len(rows))
	}
	for _, r := range rows {
		n := 0
		for _, g := range got {
			if g.Instance == r.Instance && g.Component == r.Component && g.At.Equal(r.At) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("row (%q, %q, %v) stored %d times", r.Instance, r.Component, r.At, n)
		}
	}
}

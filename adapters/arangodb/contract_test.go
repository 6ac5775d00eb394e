package arangodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/nomarr/nomarr/adapters/storetest"
	"github.com/nomarr/nomarr/core/store"
)

// EnvURL names a server for the tests that need a real ArangoDB.
const EnvURL = "NOMARR_TEST_ARANGO_URL"

const skipMsg = "ArangoDB contract suite skipped: set NOMARR_TEST_ARANGO_URL=arangodb://user:pass@host:8529/db or make a Docker engine available (testcontainers starts arangodb:3.12)"

// containerPassword is the root password of the test container.
const containerPassword = "nomarr-test"

// serverURL returns the URL of a real ArangoDB server: NOMARR_TEST_ARANGO_URL,
// or a container started by testcontainers when a Docker engine answers
// (the check costs well under a second when none does); ok is false when
// neither is available.
func serverURL(t testing.TB, containers bool) (string, bool) {
	if u := os.Getenv(EnvURL); u != "" {
		return u, true
	}
	if !containers || !dockerAvailable() {
		return "", false
	}
	return startContainer(t), true
}

// dockerAvailable asks testcontainers' provider whether a Docker engine is
// reachable, within 2 s.
func dockerAvailable() (ok bool) {
	defer func() {
		if recover() != nil { // testcontainers panics on some broken setups
			ok = false
		}
	}()
	done := make(chan bool, 1)
	go func() {
		defer func() {
			if recover() != nil {
				done <- false
			}
		}()
		p, err := testcontainers.ProviderDefault.GetProvider()
		if err != nil {
			done <- false
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		done <- p.Health(ctx) == nil
	}()
	select {
	case ok = <-done:
		return ok
	case <-time.After(2 * time.Second):
		return false
	}
}

var container struct {
	once sync.Once
	url  string
	err  error
}

// startContainer starts arangodb:3.12 once per test binary; it is removed
// when the process ends (testcontainers' reaper), or by TestMain.
func startContainer(t testing.TB) string {
	container.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
			ContainerRequest: testcontainers.ContainerRequest{
				Image:        "arangodb:3.12",
				ExposedPorts: []string{"8529/tcp"},
				Env:          map[string]string{"ARANGO_ROOT_PASSWORD": containerPassword},
				WaitingFor: wait.ForHTTP("/_api/version").WithPort("8529/tcp").
					WithBasicAuth("root", containerPassword).WithStartupTimeout(3 * time.Minute),
			},
			Started: true,
		})
		if err != nil {
			container.err = fmt.Errorf("start arangodb:3.12: %w", err)
			return
		}
		terminate = func() { _ = testcontainers.TerminateContainer(c) }
		hostPort, err := c.PortEndpoint(ctx, "8529/tcp", "")
		if err != nil {
			container.err = err
			return
		}
		container.url = "arangodb://root:" + containerPassword + "@" + hostPort + "/nomarr_test"
	})
	if container.err != nil {
		t.Fatal(container.err)
	}
	return container.url
}

var terminate = func() {}

func TestMain(m *testing.M) {
	code := m.Run()
	terminate()
	os.Exit(code)
}

// freshDatabase returns the URL of a new database on the server at base
// (named after base's database with a random suffix), dropped when t ends.
func freshDatabase(t testing.TB, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %s", EnvURL, Redacted(base))
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		name = DefaultDatabase
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	u.Path = "/" + name + "_t" + hex.EncodeToString(b[:])
	fresh := u.String()
	s, err := Open(context.Background(), fresh)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.db.Remove(ctx); err != nil {
			t.Errorf("drop test database %s: %v", s.t.db, s.fault("drop", err))
		}
		s.Close()
	})
	return fresh
}

// openReal opens a store on url, closed when t ends.
func openReal(t testing.TB, u string) *Store {
	t.Helper()
	s, err := Open(context.Background(), u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// truncate empties every collection (indexes stay).
func (s *Store) truncate(ctx context.Context) error {
	for _, name := range collections {
		col, err := s.db.GetCollection(ctx, name, nil)
		if err != nil {
			return err
		}
		if err := col.Truncate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// TestContract runs the contract suite against a real server: one fresh
// database for the run, emptied before each test of the suite.
func TestContract(t *testing.T) {
	base, ok := serverURL(t, true)
	if !ok {
		t.Skip(skipMsg)
	}
	u := freshDatabase(t, base)
	t.Run("Run", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s := openReal(t, u)
			if err := s.truncate(t.Context()); err != nil {
				t.Fatalf("truncate: %v", err)
			}
			return s
		})
	})
	t.Run("Concurrent", func(t *testing.T) {
		first := true
		storetest.RunConcurrent(t, func(t *testing.T) store.Store {
			s := openReal(t, u)
			if first {
				first = false
				if err := s.truncate(t.Context()); err != nil {
					t.Fatalf("truncate: %v", err)
				}
			}
			return s
		})
	})
	t.Run("ConcurrentBootstrap", func(t *testing.T) {
		fresh := freshDatabase(t, base) // created by this call: drop it and race
		probe := openReal(t, fresh)
		if err := probe.db.Remove(t.Context()); err != nil {
			t.Fatal(err)
		}
		openConcurrently(t, fresh, 4)
	})
	t.Run("QueryPlans", func(t *testing.T) { testQueryPlans(t, openReal(t, u)) })
	t.Run("WrongPassword", func(t *testing.T) {
		pu, _ := url.Parse(u)
		if pu.User == nil {
			t.Skip("the server URL has no credentials")
		}
		pu.User = url.UserPassword(pu.User.Username(), secret)
		_, err := Open(t.Context(), pu.String())
		wantFault(t, "Open with a wrong password", err, "authentication failed")
	})
}

// testQueryPlans checks that discovery is backed by the discovery index
// in key order (no sort), and that lease renewal and release use the
// worker index.
func testQueryPlans(t *testing.T, s *Store) {
	ctx := t.Context()
	check := func(name, aql string, bind map[string]any, wantIndex string, noSort bool) {
		t.Helper()
		res, err := s.db.ExplainQuery(ctx, aql, bind, nil)
		if err != nil {
			t.Fatalf("explain %s: %v", name, err)
		}
		var idx, sorted bool
		for _, n := range res.Plan.NodesRaw {
			switch n["type"] {
			case "IndexNode":
				if ixs, ok := n["indexes"].([]any); ok {
					for _, ix := range ixs {
						if m, ok := ix.(map[string]any); ok && m["name"] == wantIndex {
							idx = true
						}
					}
				}
			case "SortNode":
				sorted = true
			}
		}
		if !idx || (noSort && sorted) {
			t.Fatalf("%s: plan does not use %s without a sort (index %v, sort %v); rules %v", name, wantIndex, idx, sorted, res.Plan.Rules)
		}
	}
	check("discover", qDiscover, map[string]any{"after": "", "now": int64(0), "limit": 8}, "nomarr_discovery", true)
	check("renew", qRenewLeases, map[string]any{"ids": []string{"a"}, "until": int64(1)}, "nomarr_claims_worker", false)
	check("release worker", qRemoveWorkerClaims, map[string]any{"worker": "a"}, "nomarr_claims_worker", false)
	check("history", qRecentHistory, map[string]any{"limit": 10}, "nomarr_history_at", false)
	check("prune history", qPruneHistory, map[string]any{"before": int64(1), "limit": 10}, "nomarr_history_at", false)
	check("list files", qListFiles, map[string]any{"after": "", "limit": 10}, "primary", true)
}

// BenchmarkClaimCycle measures the worker's store round: discover a batch,
// claim the first file, complete it — files per second with b.N files and
// GOMAXPROCS concurrent workers, each its own handle as on separate hosts.
func BenchmarkClaimCycle(b *testing.B) {
	base, ok := serverURL(b, false)
	if !ok {
		b.Skip(skipMsg)
	}
	u := freshDatabase(b, base)
	seed := openReal(b, u)
	ctx := context.Background()
	files := make([]store.File, 0, 1000)
	for i := range b.N {
		files = append(files, storetest.NewFile(fmt.Sprintf("%032x", i)))
		if len(files) == cap(files) || i == b.N-1 {
			if _, err := seed.UpsertFiles(ctx, files); err != nil {
				b.Fatal(err)
			}
			files = files[:0]
		}
	}
	handles := make(chan *Store, 64)
	for range 64 {
		handles <- openReal(b, u)
	}
	var mu sync.Mutex
	var done, conflicts, worker int
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		mu.Lock()
		worker++
		id := fmt.Sprintf("bench/w%d", worker)
		mu.Unlock()
		s := <-handles
		defer func() { handles <- s }()
		for pb.Next() {
			n, c, err := claimCycle(ctx, s, id)
			if err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			done, conflicts = done+n, conflicts+c
			mu.Unlock()
		}
	})
	el := time.Since(start)
	b.ReportMetric(float64(done)/el.Seconds(), "files/s")
	b.ReportMetric(float64(conflicts)/float64(max(done, 1)), "conflicts/file")
}

// claimCycle is one worker round: discover from the start, claim the first
// file it can, complete it. It returns the files completed (0 when nothing
// was left) and the claims lost.
func claimCycle(ctx context.Context, s *Store, worker string) (done, lost int, err error) {
	for {
		batch, err := s.Discover(ctx, storetest.T0, "", 8)
		if err != nil || len(batch) == 0 {
			return 0, lost, err
		}
		for _, f := range batch {
			_, err := s.Claim(ctx, store.Claim{FileKey: f.Key, WorkerID: worker, ClaimedAt: storetest.T0, LeaseUntil: storetest.At(time.Hour)})
			if store.IsFault(err) {
				return 0, lost, err
			}
			if err != nil {
				lost++
				continue
			}
			err = s.Complete(ctx, store.Ref{FileKey: f.Key, WorkerID: worker}, store.Completion{Tags: map[string]string{"k": "v"}, Version: "v1", At: storetest.T0})
			return 1, lost, err
		}
	}
}

package sqlite

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	coreclaim "github.com/nomarr/nomarr/core/claim"
	"github.com/nomarr/nomarr/core/store"
)

// The multi-process tests re-execute the test binary as child processes
// (TestHelperProcess with these variables set) that share one database file.
const (
	envHelper = "NOMARR_SQLITE_HELPER" // "worker": claim+complete until no work is left; "lock": hold the write lock
	envDB     = "NOMARR_SQLITE_DB"
	envWorker = "NOMARR_SQLITE_WORKER"
)

// TestHelperProcess is not a test: it is the child process of the
// multi-process tests and benchmarks. It opens the database, prints "ready",
// waits for a line on stdin, then claims and completes files as fast as it
// can (the worker's claimer: discovery batches from the start, candidates in
// key order) until none is left, and prints "done <files> <conflicts>".
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) == "lock" {
		helperLock(os.Getenv(envDB), os.Stdin, os.Stdout)
	}
	if os.Getenv(envHelper) != "worker" {
		t.Skip("child process of the multi-process tests")
	}
	if err := helperWorker(os.Getenv(envDB), os.Getenv(envWorker), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stdout, "error %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helperWorker(path, worker string, in io.Reader, out io.Writer) error {
	s, err := Open(path)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for go: %w", err)
	}
	n, conflicts, err := workLoop(context.Background(), s, worker)
	if err != nil {
		return err
	}
	r, total, longest := s.LockStats()
	fmt.Fprintf(out, "done %d %d %d %d %d\n", n, conflicts, r, total.Microseconds(), longest.Microseconds())
	return nil
}

// workLoop claims and completes files until discovery finds none (a round in
// which every candidate was lost to other workers is not the end of the work).
func workLoop(ctx context.Context, s store.Store, worker string) (done, conflicts int, err error) {
	c := coreclaim.NewClaimer(s, worker, time.Hour, coreclaim.DefaultBatch)
	tags := map[string]string{"by": worker, "nom:mood_happy": "0.5"}
	for {
		r, err := c.Next(ctx, t0)
		conflicts += len(r.Conflicts)
		if err != nil {
			return done, conflicts, err
		}
		if !r.Found {
			if len(r.Conflicts) > 0 {
				continue // every candidate was taken by others: discover again
			}
			return done, conflicts, nil
		}
		ref := store.Ref{FileKey: r.File.Key, WorkerID: worker}
		if err := s.Complete(ctx, ref, store.Completion{Tags: tags, Version: "v1", At: t0}); err != nil {
			return done, conflicts, err
		}
		done++
	}
}

type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	err   strings.Builder
}

// startChildren starts n helper processes on the database and waits until
// each has opened it.
func startChildren(tb testing.TB, path string, n int) []*child {
	tb.Helper()
	kids := spawnChildren(tb, path, n)
	waitReady(tb, kids)
	return kids
}

// spawnChildren starts n helper processes on the database.
func spawnChildren(tb testing.TB, path string, n int) []*child {
	tb.Helper()
	kids := make([]*child, n)
	for i := range kids {
		c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")}
		c.cmd.Env = append(os.Environ(), envHelper+"=worker", envDB+"="+path, fmt.Sprintf("%s=proc%d/worker:discovery:0", envWorker, i))
		c.cmd.Stderr = &c.err
		var err error
		if c.stdin, err = c.cmd.StdinPipe(); err != nil {
			tb.Fatal(err)
		}
		stdout, err := c.cmd.StdoutPipe()
		if err != nil {
			tb.Fatal(err)
		}
		c.out = bufio.NewReader(stdout)
		if err := c.cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		kids[i] = c
		tb.Cleanup(func() {
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		})
	}
	return kids
}

// waitReady waits until every child has opened the database.
func waitReady(tb testing.TB, kids []*child) {
	tb.Helper()
	for i, c := range kids {
		line, err := c.out.ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			tb.Fatalf("child %d: %q %v (stderr: %s)", i, line, err, c.err.String())
		}
	}
}

// result is what one child reports.
type result struct {
	files, conflicts  int
	lockRetries       int64 // write attempts that found the lock taken
	lockWait, maxWait time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("%d files (%d conflicts, %d lock retries, waited %s, longest %s)",
		r.files, r.conflicts, r.lockRetries, r.lockWait.Round(time.Millisecond), r.maxWait.Round(time.Microsecond))
}

// runChildren tells the children to go and waits for their results.
func runChildren(tb testing.TB, kids []*child) (res []result, files, conflicts int) {
	tb.Helper()
	for _, c := range kids {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			tb.Fatal(err)
		}
	}
	res = make([]result, len(kids))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for i, c := range kids {
		wg.Go(func() {
			line, _ := c.out.ReadString('\n')
			err := c.cmd.Wait()
			var r result
			var waitUs, maxUs int64
			if _, serr := fmt.Sscanf(line, "done %d %d %d %d %d", &r.files, &r.conflicts, &r.lockRetries, &waitUs, &maxUs); serr != nil || err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("child %d: %q %v (stderr: %s)", i, line, err, c.err.String()))
				mu.Unlock()
				return
			}
			r.lockWait, r.maxWait = time.Duration(waitUs)*time.Microsecond, time.Duration(maxUs)*time.Microsecond
			res[i] = r
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		tb.Fatal(strings.Join(errs, "\n"))
	}
	for _, r := range res {
		files += r.files
		conflicts += r.conflicts
	}
	return res, files, conflicts
}

func seedN(tb testing.TB, s *Store, n int) {
	tb.Helper()
	const batch = 5000
	files := make([]store.File, 0, batch)
	for i := 0; i < n; i++ {
		files = append(files, mkf(fmt.Sprintf("f%07d", i)))
		if len(files) == batch || i == n-1 {
			if _, err := s.UpsertFiles(bg, files); err != nil {
				tb.Fatal(err)
			}
			files = files[:0]
		}
	}
}

// TestMultiProcess: 4 processes and this one open a new database file at
// the same moment (concurrent schema bootstrap); then the 4 claim and
// complete files from it as fast as they can; every file is tagged exactly
// once.
func TestMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const procs = 4
	n := 2000
	if raceEnabled {
		n = 600
	}
	path := tempDB(t)
	kids := spawnChildren(t, path, procs)
	s := openT(t, path)
	waitReady(t, kids)
	seedN(t, s, n)
	start := time.Now()
	res, total, conflicts := runChildren(t, kids)
	el := time.Since(start)
	t.Logf("%d files by %d processes in %s (%.0f files/s), %d conflicts", total, procs, el.Round(time.Millisecond), float64(total)/el.Seconds(), conflicts)
	for i, r := range res {
		t.Logf("process %d: %v", i, r)
	}
	if total != n {
		t.Fatalf("children completed %d files, want %d", total, n)
	}
	c, err := s.Counts(bg)
	if err != nil || c != (store.Counts{Total: n, Tagged: n}) {
		t.Fatalf("Counts = %+v %v", c, err)
	}
	var once, more, sum int
	if err := s.r.QueryRow(`SELECT count(*), coalesce(sum(writes > 1), 0), coalesce(sum(writes), 0) FROM file_tags`).Scan(&once, &more, &sum); err != nil {
		t.Fatal(err)
	}
	if once != n || more != 0 || sum != n {
		t.Fatalf("file_tags: %d files, %d written more than once, %d writes; want %d, 0, %d", once, more, sum, n, n)
	}
	// Each file's tags name the process that completed it, and the per-process
	// tallies agree with the store.
	byProc := map[string]int{}
	rows, err := s.r.Query(`SELECT json_extract(tags, '$.by'), count(*) FROM file_tags GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var who string
		var k int
		rows.Scan(&who, &k)
		byProc[who] = k
	}
	rows.Close()
	for i, r := range res {
		if got := byProc[fmt.Sprintf("proc%d/worker:discovery:0", i)]; got != r.files {
			t.Fatalf("process %d reported %d files, the store says %d", i, r.files, got)
		}
	}
}

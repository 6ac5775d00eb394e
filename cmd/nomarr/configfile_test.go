package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/app"
)

// loadWithFile runs loadSettings on a config.yaml holding body, with a
// temporary data_dir and the extra command-line args.
func loadWithFile(t *testing.T, body string, args ...string) (*app.Settings, error) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s, _, err := loadSettings(fs, append([]string{"--config", file, "--data-dir", dir}, args...))
	return s, err
}

// TestConfigFileNullLeavesKeyUnset guards that an empty or null value in
// config.yaml (the usual way a template leaves a key unset) keeps the
// key's default instead of becoming text such as "<nil>": api_token "<nil>"
// would be a guessable token that lets a non-loopback http_addr start.
func TestConfigFileNullLeavesKeyUnset(t *testing.T) {
	for _, body := range []string{"api_token:\n", "api_token: ~\n", "api_token: null\n", "library_root: Null\n",
		"# nothing but a comment\n", "", "~\n"} {
		s, err := loadWithFile(t, body)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		for _, k := range []string{"api_token", "library_root"} {
			if v := s.Get(k); v != "" {
				t.Errorf("config.yaml %q: %s = %q, want empty (unset)", strings.TrimSpace(body), k, v)
			}
		}
	}
	s, err := loadWithFile(t, "http_addr:\nwrite_mode: ~\n")
	if err != nil {
		t.Fatal(err)
	}
	if s.Get("http_addr") != app.Default("http_addr") || s.Get("write_mode") != app.Default("write_mode") {
		t.Errorf("null http_addr / write_mode: got %q / %q, want the defaults", s.Get("http_addr"), s.Get("write_mode"))
	}
	s, err = loadWithFile(t, "api_token:\nhttp_addr: 0.0.0.0:8356\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := httpapi.New(nopBackend{}, httpapi.Options{Addr: s.Get("http_addr"), Token: s.Get("api_token")}); err == nil {
		t.Errorf("an empty api_token with http_addr 0.0.0.0:8356: the API starts with token %q instead of refusing",
			s.Get("api_token"))
	}
}

// nopBackend satisfies httpapi.Backend for New; it is never called.
type nopBackend struct{ httpapi.Backend }

// TestConfigDevZeroExits2 guards that --config naming a device is refused
// at once, exit 2, with a message naming the file: /dev/zero was read
// until memory ran out (config.ReadFile reads regular files only, of at
// most config.MaxFileSize bytes). The file reader's own cases are
// config's TestReadFile*.
func TestConfigDevZeroExits2(t *testing.T) {
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run([]string{"status", "--config", "/dev/zero", "--data-dir", t.TempDir()}, &out, &errb)
		done <- result{code, errb.String()}
	}()
	select {
	case r := <-done:
		if r.code != exitUsage || !strings.Contains(r.stderr, "/dev/zero") || !strings.Contains(r.stderr, "not a regular file") {
			t.Errorf("status --config /dev/zero: exit %d, stderr %q; want 2 and a message naming the file", r.code, r.stderr)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("status --config /dev/zero had not returned after 3 s")
	}
}

// TestTaggerWorkerCountEverywhere guards that docs/design.md §11's
// tagger_worker_count works from every source that workers does (the
// environment and flags, not only config.yaml), with invalid values
// refused, and that workers wins when one source sets both.
func TestTaggerWorkerCountEverywhere(t *testing.T) {
	workers := func(s *app.Settings) int {
		if s == nil {
			return -1
		}
		return s.Core.Workers
	}
	t.Setenv("NOMARR_TAGGER_WORKER_COUNT", "6")
	s, err := loadWithFile(t, "workers: 3\n")
	if err != nil || s.Core.Workers != 6 {
		t.Errorf("NOMARR_TAGGER_WORKER_COUNT=6 over the file's workers 3: workers = %d, err %v; want 6", workers(s), err)
	}
	t.Setenv("NOMARR_WORKERS", "4")
	if s, err = loadWithFile(t, ""); err != nil || s.Core.Workers != 4 {
		t.Errorf("NOMARR_WORKERS=4 and NOMARR_TAGGER_WORKER_COUNT=6: workers = %d, err %v; want 4", workers(s), err)
	}
	os.Unsetenv("NOMARR_WORKERS")
	t.Setenv("NOMARR_TAGGER_WORKER_COUNT", "-3")
	if _, err := loadWithFile(t, ""); err == nil || !strings.Contains(err.Error(), "NOMARR_TAGGER_WORKER_COUNT") {
		t.Errorf("NOMARR_TAGGER_WORKER_COUNT=-3: %v, want an error naming it", err)
	}
	os.Unsetenv("NOMARR_TAGGER_WORKER_COUNT")
	for _, flagName := range []string{"--tagger-worker-count", "--tagger_worker_count"} {
		s, err = loadWithFile(t, "", flagName, "5")
		if err != nil || s.Core.Workers != 5 {
			t.Errorf("%s 5: workers %d, err %v", flagName, workers(s), err)
		}
	}
	s, err = loadWithFile(t, "", "--workers", "2", "--tagger-worker-count", "5")
	if err != nil || s.Core.Workers != 2 {
		t.Errorf("--workers 2 --tagger-worker-count 5: workers %d, err %v; want 2", workers(s), err)
	}
	s, err = loadWithFile(t, "tagger_worker_count: 7\nworkers: 3\n")
	if err != nil || s.Core.Workers != 3 {
		t.Errorf("config.yaml workers 3 and tagger_worker_count 7: workers %d, err %v; want 3", workers(s), err)
	}
}

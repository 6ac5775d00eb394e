package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestConfigFileKeepsScalarSourceText guards that config.yaml values are
// read as the user typed them: YAML would read 0123 as 83, 0x1F as 31, 1e3
// as 1000 and 2024-01-01 as a time, so a token or a node name would
// silently change.
func TestConfigFileKeepsScalarSourceText(t *testing.T) {
	for _, c := range []struct{ key, val, want string }{
		{"api_token", "0123", "0123"}, {"api_token", "0x1F", "0x1F"}, {"api_token", "1e3", "1e3"},
		{"api_token", "1_000", "1_000"}, {"api_token", "12345678901234567890123", "12345678901234567890123"},
		{"api_token", "true", "true"}, {"api_token", `"null"`, "null"}, {"api_token", "'~'", "~"},
		{"node", "2024-01-01", "2024-01-01"}, {"node", "2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"},
	} {
		s, err := loadWithFile(t, c.key+": "+c.val+"\n")
		if err != nil {
			t.Errorf("%s: %s: %v", c.key, c.val, err)
			continue
		}
		if got := s.Get(c.key); got != c.want {
			t.Errorf("config.yaml `%s: %s` read as %q, want %q", c.key, c.val, got, c.want)
		}
	}
	s, err := loadWithFile(t, "workers: 3\ngpu: true\nhang_after: 45s\n")
	if err != nil || s.Core.Workers != 3 || !s.Core.GPU || s.Core.HangAfter.String() != "45s" {
		t.Errorf("workers: 3, gpu: true, hang_after: 45s read as %+v, %v", s, err)
	}
}

// TestConfigFileRejectsNonScalarValues guards that a list or mapping value,
// a duplicated key and a document that is not a mapping are errors naming
// the key or the file, not text such as "[a b]" or map[...].
func TestConfigFileRejectsNonScalarValues(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"api_token: [a, b]\n", `"api_token"`},
		{"api_token:\n  - a\n", `"api_token"`},
		{"node: {a: 1}\n", `"node"`},
		{"workers: 2\nworkers: 3\n", `"workers"`},
		{"- workers\n", "mapping"},
		{"just text\n", "mapping"},
	} {
		_, err := loadWithFile(t, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "config file") {
			t.Errorf("config.yaml %q: error %v, want one naming %s", c.body, err, c.want)
		}
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

package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/app"
)

func TestSettingsPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.yaml")
	body := "workers: 3\nhang_after: 40s\nstale_after: 12s\nhttp_addr: 127.0.0.1:9000\nwrite_mode: minimal\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NOMARR_WORKERS", "5")
	t.Setenv("NOMARR_HTTP_ADDR", "127.0.0.1:9001")
	t.Setenv("NOMARR_WRITE_MODE", "") // empty: unset, the file's value stays
	t.Setenv("NOMARR_HANG_AFTER", "") // for every kind of key
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	s, rest, err := loadSettings(fs, []string{"--config", file, "DIR", "--workers", "7", "--data-dir", dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0] != "DIR" {
		t.Errorf("positional arguments %v", rest)
	}
	if s.Core.Workers != 7 {
		t.Errorf("workers = %d: the flag must win over env and file", s.Core.Workers)
	}
	if s.Get("http_addr") != "127.0.0.1:9001" {
		t.Errorf("http_addr = %s: env must win over the file", s.Get("http_addr"))
	}
	if s.Core.HangAfter != 40*time.Second || s.Get("write_mode") != "minimal" {
		t.Errorf("file values lost: hang_after %s write_mode %s", s.Core.HangAfter, s.Get("write_mode"))
	}
	if s.Get("db") != "sqlite:"+filepath.Join(dir, "nomarr.db") {
		t.Errorf("db default = %s", s.Get("db"))
	}
}

func TestInvalidConfigurationExits2NamingTheKey(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(bad, []byte("wrkers: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		env  [2]string
		want string
	}{
		{[]string{"tag", "--workers", "lots", dir}, [2]string{}, "workers"},
		{[]string{"tag", "--write-mode", "all", "--analyzer", "noop", dir}, [2]string{}, "write_mode"},
		{[]string{"serve", "--config", bad}, [2]string{}, `"wrkers"`},
		{[]string{"status"}, [2]string{"NOMARR_HANG_AFTER", "soon"}, "NOMARR_HANG_AFTER"},
		{[]string{"tag", "--analyzer", "bogus", dir}, [2]string{}, "analyzer"},
		{[]string{"tag", "--onnxruntime-lib", "/nonexistent/libonnxruntime.so.1", dir}, [2]string{}, "make deps"},
		{[]string{"tag", "--onnxruntime-lib", bad, dir}, [2]string{}, "is not a shared library"}, // not ELF: no worker spawned
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			if c.env[0] != "" {
				t.Setenv(c.env[0], c.env[1])
			}
			var out, errb bytes.Buffer
			args := append(c.args, "--data-dir", dir)
			if code := run(args, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
			}
			if !strings.Contains(errb.String(), c.want) {
				t.Errorf("message %q does not name %s", errb.String(), c.want)
			}
		})
	}
}

func TestUnreachableArangoDBNeverShowsThePassword(t *testing.T) {
	_, err := app.OpenStore(context.Background(), "arangodb://nomarr:s3cret-pw@127.0.0.1:1/nomarr")
	if err == nil {
		t.Fatal("opening an unreachable ArangoDB succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("password in the error: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("the error does not name the server: %v", err)
	}
	if got := app.Redact("arangodb://nomarr:s3cret-pw@db:8529/nomarr"); strings.Contains(got, "s3cret-pw") {
		t.Errorf("app.Redact: %s", got)
	}
}

// TestRuntimeAndModelsFoundFromTheBinarysCheckout: bin/nomarr run from any
// directory finds the ONNX Runtime library and the models of the checkout
// that holds it, as it does from the checkout itself.
func TestRuntimeAndModelsFoundFromTheBinarysCheckout(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(root, ".cache", "onnxruntime", "libonnxruntime.so.1")
	models := filepath.Join(root, "..", "shared", "models", "musicnn")
	for _, p := range []string{lib, models} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v: run `make deps` (the library) with ../shared beside the checkout (the models)", err)
		}
	}
	// A checkout of its own: co/bin/nomarr, co/.cache/…, shared/models/….
	dir := t.TempDir()
	co := filepath.Join(dir, "co")
	for link, target := range map[string]string{
		filepath.Join(co, ".cache", "onnxruntime", "libonnxruntime.so.1"): lib,
		filepath.Join(dir, "shared", "models", "musicnn"):                 models,
	} {
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(co, "bin", "nomarr")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(nomarrBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	cmd := exec.Command(bin, "tag", elsewhere, "--data-dir", filepath.Join(elsewhere, "data"))
	cmd.Dir = elsewhere
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nothing to tag") {
		t.Fatalf("bin/nomarr from another directory: %v\n%s", err, out)
	}
}

// With models_dir and onnxruntime_lib left to their defaults, a runtime or
// model found in none of the places looked at is one message naming them
// all (a checkout without ../shared beside it, a binary copied elsewhere),
// not only the last.
func TestMissingRuntimeAndModelsNameEveryPlaceLooked(t *testing.T) {
	bin := nomarrBinary(t)
	work, data, lib := t.TempDir(), t.TempDir(), t.TempDir()
	tag := func(extra ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"tag", lib, "--data-dir", data}, extra...)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Fatalf("tag %v: %v, want exit 2\n%s", extra, err, out)
		}
		return string(out)
	}
	out := tag()
	for _, p := range []string{filepath.Join(work, ".cache", "onnxruntime", "libonnxruntime.so.1"),
		filepath.Join(data, "onnxruntime", "libonnxruntime.so.1"), "make deps"} {
		if !strings.Contains(out, p) {
			t.Errorf("missing runtime: %q does not name %s", out, p)
		}
	}
	ort, err := filepath.Abs(filepath.Join("..", "..", ".cache", "onnxruntime", "libonnxruntime.so.1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ort); err != nil {
		t.Logf("models half not checked: no ONNX Runtime library at %s (make deps fetches it)", ort)
		return
	}
	out = tag("--onnxruntime-lib", ort)
	for _, p := range []string{filepath.Join(filepath.Dir(work), "shared", "models", "musicnn"),
		filepath.Join(data, "models", "musicnn"), "set models_dir"} {
		if !strings.Contains(out, p) {
			t.Errorf("missing models: %q does not name %s", out, p)
		}
	}
}

// TestHintsCarryTheStoreFlags: the commands a hint tells the user to run
// (`nomarr workers reset`, `nomarr tag DIR` again, …) carry the flags this
// command was given that pick the store (--config, --data-dir, --db, and
// --node, which keys the restart state), quoted for a shell, and no
// other: run verbatim after `make run` (its own data dir) they used to
// look for a store in the default data dir.
func TestHintsCarryTheStoreFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "nomarr workers reset"},
		// The worker count bounds the workers an offline reset looks at.
		{[]string{"--workers", "3", "--log-level", "warn", "--analyzer", "noop"}, "nomarr workers reset --workers 3"},
		{[]string{"--data_dir", "/srv/my music", "--workers", "3", "--node", "n1"}, "nomarr workers reset --data-dir '/srv/my music' --node n1 --workers 3"},
		{[]string{"--db", "sqlite:/x/it's.db", "--config", "/etc/nomarr.yaml"}, `nomarr workers reset --config /etc/nomarr.yaml --db 'sqlite:/x/it'\''s.db'`},
		{[]string{"--tagger-worker-count", "4"}, "nomarr workers reset --workers 4"},
		// A store URL's password is not printed.
		{[]string{"--db", "arangodb://nomarr:s3cret@db.lan:8529/music"}, "nomarr workers reset --db arangodb://nomarr:xxxxx@db.lan:8529/music"},
	} {
		t.Setenv("NOMARR_DATA_DIR", t.TempDir()) // the environment is not repeated
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		args := c.args
		for i, a := range args { // a config file that is there
			if a == "--config" {
				args = slices.Clone(args)
				args[i+1] = filepath.Join(t.TempDir(), "nomarr.yaml")
				if err := os.WriteFile(args[i+1], nil, 0o644); err != nil {
					t.Fatal(err)
				}
				c.want = strings.Replace(c.want, "/etc/nomarr.yaml", args[i+1], 1)
			}
		}
		s, _, err := loadSettings(fs, args)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Again("workers", "reset"); got != c.want {
			t.Errorf("%q: hint %q, want %q", c.args, got, c.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/config"
)

// TestCommandHelp: `nomarr CMD --help` (and -h, and `nomarr help CMD`)
// prints the command's usage line and every configuration key once, in its
// flag spelling, with its default, on stdout, and exits 0; it used to dump
// each key twice (dashes and underscores) as "configuration key X", then
// "flag: help requested", and exit 2.
func TestCommandHelp(t *testing.T) {
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{c.name, "--help"}, &out, &errb); code != 0 {
				t.Fatalf("nomarr %s --help: exit %d, want 0; stderr %q", c.name, code, errb.String())
			}
			if errb.Len() != 0 {
				t.Errorf("nomarr %s --help wrote to stderr: %q", c.name, errb.String())
			}
			help := out.String()
			if !strings.HasPrefix(help, "usage: nomarr "+c.synopsis+"\n") {
				t.Errorf("help does not start with the usage line:\n%s", help)
			}
			if strings.Contains(help, "configuration key ") || strings.Contains(help, "help requested") {
				t.Errorf("the flag package's dump:\n%s", help)
			}
			var short, other bytes.Buffer
			run([]string{c.name, "-h"}, &short, &errb)
			run([]string{"help", c.name}, &other, &errb)
			if short.String() != help || other.String() != help {
				t.Errorf("-h and `nomarr help %s` differ from --help:\n%s\n---\n%s", c.name, short.String(), other.String())
			}
			if c.name == "sim" {
				return
			}
			keyLine := func(key string) string {
				m := regexp.MustCompile(`(?m)^  --`+regexp.QuoteMeta(strings.ReplaceAll(key, "_", "-"))+` +(.+)$`).FindAllStringSubmatch(help, -1)
				if len(m) != 1 {
					t.Errorf("key %s listed %d times, want once", key, len(m))
					return ""
				}
				return m[0][1]
			}
			for _, k := range append(config.Keys(), "db", "api_token", "http_addr", "log_level") {
				keyLine(k)
				if strings.Contains(k, "_") && strings.Contains(help, "--"+k+" ") {
					t.Errorf("key %s also listed with underscores", k)
				}
			}
			if got := keyLine("workers"); !strings.HasPrefix(got, "2 ") {
				t.Errorf("--workers default %q, want 2", got)
			}
			if got := keyLine("stop_grace"); got != "10s" {
				t.Errorf("--stop-grace default %q, want 10s", got)
			}
			if got := keyLine("http_addr"); got != "127.0.0.1:8356" {
				t.Errorf("--http-addr default %q", got)
			}
			if strings.Contains(help, "--tagger-worker-count ") {
				t.Errorf("an alias listed as a key of its own")
			}
		})
	}
}

// TestUnknownFlag: a mistyped flag is one line naming it (and the closest
// flag), with the way to the command's help, and exit 2; it used to print
// the whole flag dump.
func TestUnknownFlag(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ args, want []string }{
		{[]string{"tag", dir, "--wrkers", "3"}, []string{"nomarr tag: unknown flag --wrkers (did you mean --workers?); run `nomarr tag --help`"}},
		{[]string{"serve", "--api_tokn", "x"}, []string{"unknown flag --api_tokn (did you mean --api-token?)", "`nomarr serve --help`"}},
		{[]string{"status", "--bogus"}, []string{"nomarr status: unknown flag --bogus; run `nomarr status --help`"}},
		{[]string{"workers", "pause", "--jsn"}, []string{"unknown flag --jsn", "`nomarr workers --help`"}},
		{[]string{"scan", dir, "--db"}, []string{"nomarr scan: flag needs an argument: --db; run `nomarr scan --help`"}},
		{[]string{"sim", "x.yaml", "--sed", "1"}, []string{"unknown flag --sed (did you mean --seed?)", "`nomarr sim --help`"}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(c.args, &out, &errb); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			msg := errb.String()
			if strings.Count(msg, "\n") != 1 {
				t.Errorf("want one line, got:\n%s", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
		})
	}
}

// TestTopLevelHelp: `nomarr help` lists every command before the
// configuration paragraph (sim used to come after it), serve's usage names
// --api-token, and tag's says that it tags the whole store's pending files.
func TestTopLevelHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := out.String()
	cfg := strings.Index(help, "\nconfiguration:")
	if cfg < 0 {
		t.Fatalf("no configuration paragraph:\n%s", help)
	}
	for _, c := range commands {
		if i := strings.Index(help, "\n  "+c.name+" "); i < 0 || i > cfg {
			t.Errorf("%s is not listed before the configuration paragraph:\n%s", c.name, help)
		}
	}
	if !strings.Contains(help, "serve [--library-root DIR] [--http-addr 127.0.0.1:8356] [--api-token TOKEN]") {
		t.Errorf("serve's usage omits --api-token:\n%s", help)
	}
	if !strings.Contains(help, "tags every pending file in the store; DIR is scanned first") {
		t.Errorf("tag's usage does not say it tags the store:\n%s", help)
	}
	if code := run([]string{"help", "frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d, %q", code, errb.String())
	}
}

// TestUnknownEnvironmentWarned: a NOMARR_* variable that no key reads gets
// one warning line on stderr, with the key it most likely misspells; the
// project's own variables (the configuration file, the worker spec, test
// switches) and the keys' variables get none.
func TestUnknownEnvironmentWarned(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"worker_enabled": true})
	}))
	defer ts.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("workers: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"NOMARR_WROKERS": "3", "NOMARR_FROBNICATE": "1", "NOMARR_CONFIG": cfg,
		"NOMARR_TEST_ARANGO_URL": "x", "NOMARR_PROPERTY_CHECKS": "5", "NOMARR_SCAN_FILES": "5", "NOMARR_WORKER": "{}",
		"NOMARR_GPU_TEST_BAD_LIB": "x", "NOMARR_HANG_AFTER": "40s", "NOMARR_TAGGER_WORKER_COUNT": "2"} {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"status", "--http-addr", strings.TrimPrefix(ts.URL, "http://"), "--data-dir", t.TempDir()}, &out, &errb); code != 0 {
		t.Fatalf("status: exit %d: %s", code, errb.String())
	}
	want := "nomarr: ignoring NOMARR_FROBNICATE: not a configuration key\n" +
		"nomarr: ignoring NOMARR_WROKERS: not a configuration key (did you mean NOMARR_WORKERS?)\n"
	if errb.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errb.String(), want)
	}

	// A worker (started by its main process, with its environment) says
	// nothing of it: the main process has.
	errb.Reset()
	run([]string{"worker"}, &out, &errb)
	if strings.Contains(errb.String(), "NOMARR_WROKERS") {
		t.Errorf("a worker warned about its environment: %s", errb.String())
	}
}

// TestUnauthorizedSaysHowToPassTheToken: a daemon that answers 401 (it has
// an api_token) gets a message that says how to give one.
func TestUnauthorizedSaysHowToPassTheToken(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "missing or invalid API token"})
	}))
	defer ts.Close()
	addr := strings.TrimPrefix(ts.URL, "http://")
	for _, args := range [][]string{{"workers", "pause"}, {"workers", "reset", "worker:discovery:0"}, {"status"}} {
		var out, errb bytes.Buffer
		run(append(args, "--http-addr", addr, "--data-dir", t.TempDir()), &out, &errb)
		if !strings.Contains(errb.String(), "401 Unauthorized: missing or invalid API token; pass --api-token or set NOMARR_API_TOKEN") {
			t.Errorf("nomarr %s against a daemon answering 401: %q", strings.Join(args, " "), errb.String())
		}
	}
}

// TestEmptySQLitePath: `--db sqlite:` is refused as invalid configuration
// naming the empty path, not "sqlite: open : cannot open database file".
func TestEmptySQLitePath(t *testing.T) {
	dir := t.TempDir()
	for _, db := range []string{"sqlite:", "sqlite: "} {
		var out, errb bytes.Buffer
		if code := run([]string{"scan", dir, "--db", db, "--data-dir", dir}, &out, &errb); code != 2 {
			t.Errorf("--db %q: exit %d, want 2", db, code)
		}
		if !strings.Contains(errb.String(), "db: \""+db+"\" has an empty path: want sqlite:PATH") {
			t.Errorf("--db %q: %q", db, errb.String())
		}
	}
	if _, err := app.OpenStore(context.Background(), "sqlite:"); err == nil || !strings.Contains(err.Error(), "empty path") {
		t.Errorf("app.OpenStore(sqlite:) = %v", err)
	}
}

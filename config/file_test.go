package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readBody runs ReadFile on a config.yaml holding body.
func readBody(t *testing.T, body string) (map[string]string, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return ReadFile(file)
}

// TestReadFileNullLeavesKeyUnset guards that an empty or null value in
// config.yaml (the usual way a template leaves a key unset) leaves the key
// out instead of becoming text such as "<nil>": api_token "<nil>" would be
// a guessable token that lets a non-loopback http_addr start.
func TestReadFileNullLeavesKeyUnset(t *testing.T) {
	for _, body := range []string{"api_token:\n", "api_token: ~\n", "api_token: null\n", "library_root: Null\n",
		"# nothing but a comment\n", "", "~\n", "http_addr:\nwrite_mode: ~\n"} {
		m, err := readBody(t, body)
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if len(m) != 0 {
			t.Errorf("config.yaml %q: read as %q, want no key set", strings.TrimSpace(body), m)
		}
	}
	m, err := readBody(t, "api_token:\nhttp_addr: 0.0.0.0:8356\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["api_token"]; ok || m["http_addr"] != "0.0.0.0:8356" {
		t.Errorf("`api_token:` and `http_addr: 0.0.0.0:8356` read as %q, want only http_addr", m)
	}
}

// TestReadFileKeepsScalarSourceText guards that config.yaml values are read
// as the user typed them: YAML would read 0123 as 83, 0x1F as 31, 1e3 as
// 1000 and 2024-01-01 as a time, so a token or a node name would silently
// change.
func TestReadFileKeepsScalarSourceText(t *testing.T) {
	for _, c := range []struct{ key, val, want string }{
		{"api_token", "0123", "0123"}, {"api_token", "0x1F", "0x1F"}, {"api_token", "1e3", "1e3"},
		{"api_token", "1_000", "1_000"}, {"api_token", "12345678901234567890123", "12345678901234567890123"},
		{"api_token", "true", "true"}, {"api_token", `"null"`, "null"}, {"api_token", "'~'", "~"},
		{"node", "2024-01-01", "2024-01-01"}, {"node", "2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"},
	} {
		m, err := readBody(t, c.key+": "+c.val+"\n")
		if err != nil {
			t.Errorf("%s: %s: %v", c.key, c.val, err)
			continue
		}
		if got := m[c.key]; got != c.want {
			t.Errorf("config.yaml `%s: %s` read as %q, want %q", c.key, c.val, got, c.want)
		}
	}
	m, err := readBody(t, "node: &n 0x1F\napi_token: *n\n")
	if err != nil || m["api_token"] != "0x1F" {
		t.Errorf("api_token: *n with the anchor &n 0x1F read as %q, %v; want 0x1F", m, err)
	}
	m, err = readBody(t, "workers: 3\ngpu: true\nhang_after: 45s\n")
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromValues(m)
	if err != nil || c.Workers != 3 || !c.GPU || c.HangAfter.String() != "45s" {
		t.Errorf("workers: 3, gpu: true, hang_after: 45s read as %q, %+v, %v", m, c, err)
	}
}

// TestReadFileRejectsNonScalarValues guards that a list or mapping value, a
// duplicated key and a document that is not a mapping are errors naming
// the key or the file, not text such as "[a b]" or map[...].
func TestReadFileRejectsNonScalarValues(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"api_token: [a, b]\n", `"api_token"`},
		{"api_token:\n  - a\n", `"api_token"`},
		{"node: {a: 1}\n", `"node"`},
		{"workers: 2\nworkers: 3\n", `"workers"`},
		{"- workers\n", "mapping"},
		{"just text\n", "mapping"},
		{"[a]: 1\n", "a key must be a name"},
		{"a: b: c\n", "config file"},
	} {
		_, err := readBody(t, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "config file") {
			t.Errorf("config.yaml %q: error %v, want one naming %s", c.body, err, c.want)
		}
	}
}

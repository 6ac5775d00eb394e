package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/config"
)

// TestEveryKeyCommentedAtItsDefault: the file names every key once,
// commented out, sets nothing as written, and with every line that has a
// value uncommented reads back (config.ReadFile) as each key's default.
func TestEveryKeyCommentedAtItsDefault(t *testing.T) {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			t.Errorf("line %q is not a comment: the file would set a key", line)
		}
		if len(line) > width {
			t.Errorf("line %q is over %d characters", line, width)
		}
	}

	want := map[string]string{}
	values := config.Defaults().Values()
	for _, k := range config.Keys() {
		want[k] = shortDuration(values[k])
	}
	for _, k := range config.AppKeys() {
		want[k.Name] = k.Default
	}
	keyLine := regexp.MustCompile(`(?m)^#([a-z_]+):(.*)$`)
	seen := map[string]int{}
	var uncommented strings.Builder
	for _, m := range keyLine.FindAllStringSubmatch(text, -1) {
		seen[m[1]]++
		if strings.TrimSpace(m[2]) != "" {
			uncommented.WriteString(m[1] + ":" + m[2] + "\n")
		}
	}
	for k := range want {
		if seen[k] != 1 {
			t.Errorf("key %s appears %d times as a commented key line, want 1", k, seen[k])
		}
	}
	for k := range seen {
		if _, ok := want[k]; !ok {
			t.Errorf("%s is no key", k)
		}
	}

	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(uncommented.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := config.ReadFile(path)
	if err != nil {
		t.Fatalf("uncommented file: %v\n%s", err, uncommented.String())
	}
	for k, v := range want {
		if v == "" {
			continue
		}
		if got[k] != v {
			t.Errorf("%s reads back as %q, want its default %q", k, got[k], v)
		}
	}
}

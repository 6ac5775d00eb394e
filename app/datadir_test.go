package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultDataDir(t *testing.T) {
	home := t.TempDir()
	missing := filepath.Join(home, "gone")
	account := func(name, dir string) homeOf {
		return func() (string, string, error) { return name, dir, nil }
	}
	noAccount := func() (string, string, error) { return "", "", errors.New("user: unknown userid 4242") }
	cases := []struct {
		name    string
		env     map[string]string
		account homeOf
		want    string // "" when an error is wanted
		wantErr []string
	}{
		{"systemd's state directory first", map[string]string{"STATE_DIRECTORY": "/var/lib/nomarr", "XDG_DATA_HOME": "/x", "HOME": "/h"},
			account("u", home), "/var/lib/nomarr", nil},
		{"the first of several state directories", map[string]string{"STATE_DIRECTORY": "/var/lib/nomarr:/var/lib/other"},
			account("u", home), "/var/lib/nomarr", nil},
		{"XDG_DATA_HOME", map[string]string{"XDG_DATA_HOME": "/x", "HOME": "/h"}, account("u", home), "/x/nomarr", nil},
		{"HOME", map[string]string{"HOME": "/h"}, account("u", home), "/h/.local/share/nomarr", nil},
		{"relative values are passed over", map[string]string{"STATE_DIRECTORY": "rel", "XDG_DATA_HOME": "x", "HOME": "/h"},
			account("u", home), "/h/.local/share/nomarr", nil},
		{"no HOME: the user database's home", map[string]string{}, account("u", home),
			filepath.Join(home, ".local", "share", "nomarr"), nil},
		{"no HOME, a home that is not there", map[string]string{}, account("svc", missing), "",
			[]string{"HOME is not set", "svc has no home folder", missing, "--data-dir", "NOMARR_DATA_DIR"}},
		{"no HOME, a relative home", map[string]string{}, account("svc", "."), "",
			[]string{"svc has no home folder", "--data-dir"}},
		{"no HOME, an empty home", map[string]string{}, account("svc", ""), "",
			[]string{"says none", "--data-dir"}},
		{"no HOME, no user entry", map[string]string{}, noAccount, "",
			[]string{"HOME is not set", "unknown userid 4242", "--data-dir"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := defaultDataDir(func(k string) string { return c.env[k] }, c.account)
			if c.want != "" {
				if err != nil || got != c.want {
					t.Fatalf("got %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", got)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestDataDirWithoutHome: with no HOME, XDG_DATA_HOME or STATE_DIRECTORY,
// the store is under the user's home from the user database, not under
// the working directory.
func TestDataDirWithoutHome(t *testing.T) {
	for _, k := range []string{"HOME", "XDG_DATA_HOME", "STATE_DIRECTORY", "NOMARR_DATA_DIR", "NOMARR_DB", "NOMARR_CONFIG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Chdir(t.TempDir())
	_, home, err := accountHome()
	if err != nil {
		t.Skipf("this user has no entry in the user database (%v): the error case is TestDefaultDataDir's", err)
	}
	if fi, err := os.Stat(home); err != nil || !fi.IsDir() {
		t.Skipf("this user's home %s is not a folder: the error case is TestDefaultDataDir's", home)
	}
	s, err := (&Sources{flags: map[string]string{}}).Resolve(new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".local", "share", "nomarr"); s.Get("data_dir") != want {
		t.Errorf("data_dir %q, want %q", s.Get("data_dir"), want)
	}
	if want := "sqlite:" + filepath.Join(home, ".local", "share", "nomarr", "nomarr.db"); s.Get("db") != want {
		t.Errorf("db %q, want %q", s.Get("db"), want)
	}
}

// TestDefaultDataDirNotWritable: when the default data_dir cannot be
// made, the error names it and --data-dir.
func TestDefaultDataDirNotWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"XDG_DATA_HOME", "STATE_DIRECTORY", "NOMARR_DATA_DIR", "NOMARR_DB", "NOMARR_CONFIG"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", file) // data_dir below a file: mkdir fails, even as root
	t.Chdir(t.TempDir())
	s, err := (&Sources{flags: map[string]string{}}).Resolve(new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	err = ensureDataDir(s)
	if err == nil {
		t.Fatal("no error for a data_dir below a file")
	}
	for _, w := range []string{filepath.Join(file, ".local", "share", "nomarr"), "its default", "--data-dir"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

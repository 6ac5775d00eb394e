package app

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/config"
)

// testSettings resolves the settings a command line of flags gives, as a
// command does (DefineFlags, then Resolve), without NOMARR_* warnings.
func testSettings(t *testing.T, args ...string) *Settings {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	src := DefineFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	s, err := src.Resolve(io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// resolve resolves the settings a command line of flags gives, in a
// working directory of its own (no ./config.yaml), returning the error.
func resolve(t *testing.T, args ...string) (*Settings, error) {
	t.Helper()
	t.Chdir(t.TempDir())
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	src := DefineFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return src.Resolve(io.Discard)
}

// TestEmptyPathKeyIsAnError guards that a key taking a path given empty
// or blank, as a flag, a NOMARR_* variable that is set, or a config.yaml
// string, is an error saying the path is empty, and that --config and
// NOMARR_CONFIG are held to the same: an unset $MUSIC_DIR must not pass
// for the default (or for the working directory). A key no source sets,
// a null config.yaml value and an empty variable of a key that takes no
// path keep the default.
func TestEmptyPathKeyIsAnError(t *testing.T) {
	var paths []string
	for _, k := range config.AppKeys() {
		if k.Path {
			paths = append(paths, k.Name)
		}
	}
	if want := []string{"db", "data_dir", "library_root", "playlists_dir", "models_dir", "onnxruntime_lib"}; !slices.Equal(paths, want) {
		t.Fatalf("path keys %v, want %v", paths, want)
	}
	refused := func(what string, err error, name string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "the path is empty") || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming %s and saying the path is empty", what, err, name)
		}
	}
	for _, k := range paths {
		flagName := "--" + strings.ReplaceAll(k, "_", "-")
		env := "NOMARR_" + strings.ToUpper(k)
		for _, v := range []string{"", " ", "\t\n"} {
			_, err := resolve(t, flagName, v)
			refused(fmt.Sprintf("%s %q", flagName, v), err, k)
			t.Setenv(env, v)
			_, err = resolve(t)
			refused(fmt.Sprintf("%s=%q", env, v), err, env)
			os.Unsetenv(env)
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(k+": "+strconv.Quote(v)+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = resolve(t, "--config", file)
			refused(fmt.Sprintf("config.yaml %s: %q", k, v), err, k)
		}
		file := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(file, []byte(k+":\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if s, err := resolve(t, "--config", file); err != nil || s.Explicit(k) {
			t.Errorf("config.yaml `%s:` (null): %v, explicit %v; want the default", k, err, s != nil && s.Explicit(k))
		}
	}
	for _, v := range []string{"", "  "} {
		_, err := resolve(t, "--config", v)
		refused(fmt.Sprintf("--config %q", v), err, "--config")
		t.Setenv("NOMARR_CONFIG", v)
		_, err = resolve(t)
		refused(fmt.Sprintf("NOMARR_CONFIG=%q", v), err, "NOMARR_CONFIG")
		os.Unsetenv("NOMARR_CONFIG")
	}
	t.Setenv("NOMARR_API_TOKEN", "") // no path: empty is unset, as a compose file's ${TOKEN}
	s, err := resolve(t, "--data-dir", t.TempDir())
	if err != nil || s.Get("api_token") != "" || s.Get("library_root") != "" || !strings.HasPrefix(s.Get("db"), "sqlite:") {
		t.Errorf("NOMARR_API_TOKEN empty, library_root and db unset: %v; want their defaults", err)
	}
}

package app

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nomarr/nomarr/config"
)

// Settings is the whole configuration of a nomarr command: the worker-system
// keys of package config plus the application's own.
type Settings struct {
	Core config.Config
	app  map[string]string
	// searched holds, for a path key left to its default, every place
	// looked at when none of them had it (the last is the key's value), so
	// that the message about the missing file can name them all.
	searched map[string][]string
	// storeFlags are the flags of this command line that pick the store
	// (storeFlagKeys), as given, for the commands a hint tells the user to
	// run (again).
	storeFlags []string
	// from holds, for each key a source gave a value (not empty), that
	// source: fromFile, fromEnv or fromFlag, the last that applied; a key
	// left to its default or computed (node's host name) has none.
	// Aliases are recorded under their key.
	from map[string]string
}

// The sources a key's value can come from (Settings.from).
const (
	fromFile = "config file"
	fromEnv  = "environment"
	fromFlag = "flag"
)

// explicit reports whether key's value was given by a source (config
// file, NOMARR_* variable or flag), not left to its default.
func (s *Settings) Explicit(key string) bool { return s.from[key] != "" }

// storeFlagKeys are the keys whose flags a hint repeats: those that pick
// the store (a config file may set them too), the node, whose name keys
// the workers' restart state, and the worker count, which bounds the
// workers an offline `workers reset` looks at.
var storeFlagKeys = []string{"data_dir", "db", "node", "workers"}

// again is the command line `nomarr WORDS…` with the store-selecting flags
// this command was given (storeFlags), quoted for a shell: a hint that
// names it reaches the store this command used. Flags it was not given
// are left out (their defaults, or the environment, apply again). A
// store URL's password is not repeated: the hint shows it as the store's
// log lines do (Redact), for the user to put back.
func (s *Settings) Again(words ...string) string {
	parts := []string{"nomarr"}
	for _, w := range words {
		parts = append(parts, shellQuote(w))
	}
	for i, f := range s.storeFlags {
		if i > 0 && s.storeFlags[i-1] == "--db" {
			f = Redact(f)
		}
		parts = append(parts, shellQuote(f))
	}
	return strings.Join(parts, " ")
}

// shellQuote is w as a shell word: as it is when it holds nothing a shell
// would take apart or expand, else in single quotes.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@%+=,") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// appKeys are the application's keys (config.AppKeys) with their
// defaults ("" = none, or computed in finish).
var appKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range config.AppKeys() {
		m[k.Name] = k.Default
	}
	return m
}()

// pathKeys are the application's keys that take a path (config.AppKey.Path).
var pathKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range config.AppKeys() {
		if k.Path {
			m[k.Name] = true
		}
	}
	return m
}()

func (s *Settings) Get(key string) string { return s.app[key] }

// Sources are the configuration sources a command line names: the
// --config file and the key flags, as given (DefineFlags).
type Sources struct {
	configFile  string
	configGiven bool // --config was given, empty or not
	flags       map[string]string
}

// DefineFlags defines on fs --config and a flag per key (dashes, and
// underscores for a key that has them); once fs has parsed a command line,
// Resolve applies what they were given.
func DefineFlags(fs *flag.FlagSet) *Sources {
	src := &Sources{flags: map[string]string{}}
	fs.Func("config", "read keys from `FILE` (YAML); default NOMARR_CONFIG, else ./config.yaml when there", func(v string) error {
		src.configFile, src.configGiven = v, true
		return nil
	})
	for _, k := range allKeys() {
		usage := "configuration key " + k
		fs.Func(strings.ReplaceAll(k, "_", "-"), usage, func(v string) error { src.flags[k] = v; return nil })
		if strings.Contains(k, "_") {
			fs.Func(k, usage, func(v string) error { src.flags[k] = v; return nil })
		}
	}
	return src
}

// Resolve applies, in order of increasing precedence: defaults,
// config.yaml (--config, NOMARR_CONFIG, or ./config.yaml when present),
// NOMARR_* environment variables, and the flags (--key value, dashes or
// underscores). Within one source a key wins over its alias. Errors name
// the key and its source. NOMARR_* variables that no key reads are warned
// about on warnings (envWarnings).
func (src *Sources) Resolve(warnings io.Writer) (*Settings, error) {
	s := &Settings{Core: config.Defaults(), app: map[string]string{}, from: map[string]string{}}
	for k, v := range appKeys {
		s.app[k] = v
	}
	flags := src.flags
	for _, w := range envWarnings(os.Environ()) {
		fmt.Fprintln(warnings, w)
	}
	path, err := src.configPath()
	if err != nil {
		return nil, err
	}
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path != "" {
		if err := s.loadFile(path); err != nil {
			return nil, err
		}
	}
	// An empty variable is unset, as a null value in config.yaml is (a
	// compose file's ${TOKEN} with nothing set must not wipe api_token),
	// except for a key that takes a path: set, empty or blank, it is an
	// error (set refuses it), since an unset ${MUSIC_DIR} would otherwise
	// pass for the default.
	for _, k := range applyOrder(allKeys()) {
		if v, ok := os.LookupEnv("NOMARR_" + strings.ToUpper(k)); v != "" || (ok && pathKeys[k]) {
			if err := s.set(fromEnv, k, v); err != nil {
				return nil, fmt.Errorf("environment NOMARR_%s: %w", strings.ToUpper(k), err)
			}
		}
	}
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	for _, k := range applyOrder(keys) {
		if err := s.set(fromFlag, k, flags[k]); err != nil {
			return nil, fmt.Errorf("flag --%s: %w", strings.ReplaceAll(k, "_", "-"), err)
		}
	}
	if err := s.finish(); err != nil {
		return nil, err
	}
	if src.configGiven {
		s.storeFlags = append(s.storeFlags, "--config", src.configFile)
	}
	for _, k := range storeFlagKeys {
		if v, ok := flags[k]; ok {
			s.storeFlags = append(s.storeFlags, "--"+strings.ReplaceAll(k, "_", "-"), v)
			continue
		}
		for alias, canonical := range config.Aliases() { // --tagger-worker-count: said as --workers
			if v, ok := flags[alias]; ok && canonical == k {
				s.storeFlags = append(s.storeFlags, "--"+strings.ReplaceAll(k, "_", "-"), v)
			}
		}
	}
	return s, nil
}

// configPath is the config file --config or NOMARR_CONFIG names ("" when
// neither is given, or NOMARR_CONFIG is unset). Given empty or blank, as
// the flag or as a variable that is set, it is an error.
func (src *Sources) configPath() (string, error) {
	if src.configGiven {
		if err := CheckPath("config", src.configFile); err != nil {
			return "", fmt.Errorf("flag --config: %w", err)
		}
		return src.configFile, nil
	}
	path, ok := os.LookupEnv("NOMARR_CONFIG")
	if !ok {
		return "", nil
	}
	if err := CheckPath("config", path); err != nil {
		return "", fmt.Errorf("environment NOMARR_CONFIG: %w", err)
	}
	return path, nil
}

// CheckPath refuses a path that is empty or blank (whitespace only),
// named what in the message: an unset shell variable ("$MUSIC_DIR") or a
// forgotten value would otherwise mean the working directory, or a
// default, unasked.
func CheckPath(what, path string) error {
	if strings.TrimSpace(path) == "" {
		return fmt.Errorf("%s: the path is empty (%q): an unset variable? Give a path (. for the working directory)", what, path)
	}
	return nil
}

// CheckWorkers judges the worker count against host (config.CheckWorkers),
// for the commands that start workers (tag, serve; not sim, whose workers
// are simulated): an error is a count the host cannot run, a warning one
// past its CPUs, for the log.
func (s *Settings) CheckWorkers(host config.Host) (warning string, err error) {
	return config.CheckWorkers(s.Core.Workers, host.CPUs, host.MemAvailable)
}

// Keys lists every name a source may set, sorted: the worker-system keys,
// their aliases (tagger_worker_count) and the application's keys.
func Keys() []string { return allKeys() }

// AppKeys are the application's own keys, sorted.
func AppKeys() []string {
	keys := make([]string, 0, len(appKeys))
	for k := range appKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Default is an application key's default value ("" where it is
// computed: the host name, a path under data_dir, …).
func Default(key string) string { return appKeys[key] }

// allKeys lists every name a source may set, sorted: the worker-system
// keys, their aliases (tagger_worker_count) and the application's keys.
// Each has a NOMARR_* variable and a flag.
func allKeys() []string {
	keys := config.Keys()
	for k := range config.Aliases() {
		keys = append(keys, k)
	}
	for k := range appKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// applyOrder returns names in the order one source applies them: aliases
// first, so that a key set next to its alias wins (config.SortKeys).
func applyOrder(names []string) []string {
	out := slices.Clone(names)
	config.SortKeys(out)
	return out
}

// set sets key to value, given by source src (recorded in from when not
// empty).
func (s *Settings) set(src, key, value string) error {
	if _, ok := appKeys[key]; ok {
		if pathKeys[key] {
			if err := CheckPath(key, value); err != nil {
				return fmt.Errorf("%w, or leave %s unset for its default", err, key)
			}
		}
		s.app[key] = value
		s.noteFrom(src, key, value)
		return nil
	}
	if config.Known(key) {
		if err := s.Core.Set(key, value); err != nil {
			return err
		}
		s.noteFrom(src, key, value)
		return nil
	}
	if k := closestKey(key); k != "" {
		return fmt.Errorf("unknown key %q (did you mean %s?)", key, k)
	}
	return fmt.Errorf("unknown key %q (known: %s)", key, strings.Join(allKeys(), ", "))
}

// noteFrom records that src gave key (or the key it is an alias of) its
// value; an empty value leaves the key to its default, from no source.
func (s *Settings) noteFrom(src, key, value string) {
	if s.from == nil {
		return
	}
	if k, ok := config.Aliases()[key]; ok {
		key = k
	}
	if value == "" {
		delete(s.from, key)
		return
	}
	s.from[key] = src
}

// finish fills computed defaults and validates.
func (s *Settings) finish() error {
	if s.app["data_dir"] == "" {
		dir, err := defaultDataDir(os.Getenv, accountHome)
		if err != nil {
			return err
		}
		s.app["data_dir"] = dir
	}
	if s.app["db"] == "" {
		s.app["db"] = "sqlite:" + filepath.Join(s.app["data_dir"], "nomarr.db")
	}
	if err := unsupportedStore(s.app["db"]); err != nil {
		return err
	}
	if p, ok := strings.CutPrefix(s.app["db"], "sqlite:"); ok && strings.TrimSpace(p) == "" {
		return fmt.Errorf("db: %q has an empty path: want sqlite:PATH, such as sqlite:%s", s.app["db"],
			filepath.Join(s.app["data_dir"], "nomarr.db"))
	}
	// Looked for from the working directory (a checkout), then from the
	// checkout holding this binary (bin/nomarr run from anywhere), then
	// under the data dir, then where the Debian package installs them.
	checkout := checkoutOfBinary()
	if s.app["models_dir"] == "" {
		models := filepath.Join("..", "shared", "models", "musicnn")
		s.lookFor("models_dir", models, filepath.Join(checkout, models),
			filepath.Join(s.app["data_dir"], "models", "musicnn"), installedModelsDir)
	}
	if s.app["onnxruntime_lib"] == "" {
		lib := filepath.Join(".cache", "onnxruntime", "libonnxruntime.so.1")
		s.lookFor("onnxruntime_lib", lib, filepath.Join(checkout, lib),
			filepath.Join(s.app["data_dir"], "onnxruntime", "libonnxruntime.so.1"), installedORTLib)
	}
	for _, k := range []string{"ort_threads", "batch_size"} {
		if n, err := strconv.Atoi(s.app[k]); err != nil || n < 1 {
			return fmt.Errorf("%s: want a positive integer, got %q", k, s.app[k])
		}
	}
	for _, k := range []string{"ort_cpu_arena", "reuse_file_tags"} {
		if _, err := strconv.ParseBool(s.app[k]); err != nil {
			return fmt.Errorf("%s: want true or false, got %q", k, s.app[k])
		}
	}
	if s.app["node"] == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "localhost"
		}
		s.app["node"] = h
	}
	switch s.app["write_mode"] {
	case "none", "minimal", "full":
	default:
		return fmt.Errorf("write_mode: want none, minimal or full, got %q", s.app["write_mode"])
	}
	if err := s.checkTagSettings(); err != nil {
		return err
	}
	if d, err := time.ParseDuration(s.app["rescan_interval"]); err != nil || d < 0 {
		return fmt.Errorf("rescan_interval: want a duration such as 1h, got %q", s.app["rescan_interval"])
	}
	switch s.app["log_level"] {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log_level: want debug, info, warn or error, got %q", s.app["log_level"])
	}
	return s.Core.Validate()
}

// Where the Debian package (packaging/) installs the models and the ONNX
// Runtime library: the last places models_dir and onnxruntime_lib are
// looked for.
const (
	installedModelsDir = "/usr/share/nomarr/models/musicnn"
	installedORTLib    = "/usr/lib/nomarr/libonnxruntime.so.1"
)

// firstExisting returns the first path that exists (absolute), or the last.
// checkoutOfBinary is the folder above the one holding this binary (the
// checkout, for bin/nomarr); "" when unknown, which firstExisting then
// tries as the working directory again.
func checkoutOfBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return filepath.Dir(filepath.Dir(exe))
}

// lookFor sets key to the first of paths that exists (firstExisting) and,
// when none does, records them all, absolute and each once, in searched.
func (s *Settings) lookFor(key string, paths ...string) {
	s.app[key] = firstExisting(paths...)
	if _, err := os.Stat(s.app[key]); err == nil {
		return
	}
	var looked []string
	for _, p := range paths {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if !slices.Contains(looked, p) {
			looked = append(looked, p)
		}
	}
	if s.searched == nil {
		s.searched = map[string][]string{}
	}
	s.searched[key] = looked
}

func firstExisting(paths ...string) string {
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
			return p
		}
	}
	return paths[len(paths)-1]
}

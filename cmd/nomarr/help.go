package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/nomarr/nomarr/config"
)

// flagError is a command line the flag package refused: an unknown flag, a
// flag without its value, a bad boolean.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }

// parseInterleaved parses fs's flags and the positional arguments in any
// order and returns the positional ones. The flag package's own messages
// (and its dump of every flag) are held back: -h or --help returns
// flag.ErrHelp and anything else it refuses a *flagError, for the caller
// to say in one line (reportFlagError).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	out := fs.Output()
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	defer fs.SetOutput(out)
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, flag.ErrHelp
			}
			return nil, &flagError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		rest, args = append(rest, args[0]), args[1:]
	}
}

// reportFlagError says in one line what is wrong with a flag of `nomarr
// name` (naming the closest flag of fs for an unknown one) and where the
// command's flags are listed; it returns exitUsage.
func reportFlagError(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	msg := err.Error()
	if flagName, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + flagName
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, strings.ReplaceAll(f.Name, "_", "-")) })
		if k := closest(strings.ReplaceAll(flagName, "_", "-"), names); k != "" {
			msg += " (did you mean --" + k + "?)"
		}
	} else if strings.HasPrefix(msg, "flag needs an argument: -") || strings.HasPrefix(msg, "invalid ") {
		// The flag package names flags with one dash; the help, with two.
		msg = strings.Replace(msg, ": -", ": --", 1)
		msg = strings.Replace(msg, " for -", " for --", 1)
	}
	fmt.Fprintf(stderr, "nomarr %s: %s; run `nomarr %s --help`\n", name, msg, name)
	return exitUsage
}

// commandSettings is loadSettings for `nomarr name`, with its messages:
// -h or --help prints the command's help on stdout (exit 0); a bad flag
// or configuration is one line on stderr (exit 2). When ok is false the
// command exits with code.
func commandSettings(name string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (s *settings, rest []string, code int, ok bool) {
	s, rest, err := loadSettings(fs, args)
	var fe *flagError
	switch {
	case errors.Is(err, flag.ErrHelp):
		printHelp(stdout, name, fs)
		return nil, nil, 0, false
	case errors.As(err, &fe):
		return nil, nil, reportFlagError(stderr, name, fs, err), false
	case err != nil:
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return nil, nil, exitUsage, false
	}
	return s, rest, 0, true
}

// usageError prints the usage of `nomarr name` as one line, for positional
// arguments it refused, and returns exitUsage.
func usageError(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "%s; run `nomarr %s --help`\n", usageLine(name), name)
	return exitUsage
}

// usageLine is the one-line usage of `nomarr name`.
func usageLine(name string) string {
	if c, ok := findCommand(name); ok {
		return "usage: nomarr " + c.synopsis
	}
	return "usage: nomarr " + name
}

// printHelp prints `nomarr name --help`: the usage line, what the command
// does, its own flags, then every configuration key once, in its flag
// spelling, with its default.
func printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	c, _ := findCommand(name)
	fmt.Fprintf(w, "%s\n\n%s", usageLine(name), c.about)
	keyFlags := map[string]bool{}
	for _, k := range allKeys() {
		keyFlags[k], keyFlags[strings.ReplaceAll(k, "_", "-")] = true, true
	}
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !keyFlags[f.Name] {
			own = append(own, f)
		}
	})
	if len(own) > 0 {
		fmt.Fprintln(w, "\nflags:")
		for _, f := range own {
			arg, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(w, "  %-26s %s\n", strings.TrimSpace("--"+f.Name+" "+arg), usage)
		}
	}
	if name == "sim" {
		return // a scenario carries its own configuration
	}
	fmt.Fprintln(w, "\nconfiguration keys with their defaults; each is also NOMARR_<KEY> in the\n"+
		"environment and <key> (snake_case) in config.yaml:")
	appNames := make([]string, 0, len(appKeys))
	for k := range appKeys {
		appNames = append(appNames, k)
	}
	sort.Strings(appNames)
	for _, k := range appNames {
		writeKey(w, k, appDefault(k))
	}
	fmt.Fprintln(w, "worker system:")
	core := config.Defaults().Values()
	for _, k := range config.Keys() {
		writeKey(w, k, shortDuration(core[k]))
	}
}

func writeKey(w io.Writer, key, def string) {
	for alias, k := range config.Aliases() {
		if k == key {
			def += " (alias --" + strings.ReplaceAll(alias, "_", "-") + ")"
		}
	}
	fmt.Fprintf(w, "  --%-24s %s\n", strings.ReplaceAll(key, "_", "-"), def)
}

// appDefaults describes the application keys' defaults where the value
// alone would not say enough: a computed one, or the other choices.
var appDefaults = map[string]string{
	"db":              "sqlite:<data_dir>/nomarr.db (or arangodb://USER:PASS@HOST:8529/DB)",
	"data_dir":        "$XDG_DATA_HOME/nomarr, else ~/.local/share/nomarr",
	"models_dir":      "../shared/models/musicnn from the working directory, else from the checkout holding this binary, else <data_dir>/models/musicnn",
	"onnxruntime_lib": ".cache/onnxruntime/libonnxruntime.so.1 (make deps) from the working directory, else from the checkout holding this binary, else under <data_dir>/onnxruntime",
	"node":            "the host name",
	"analyzer":        "musicnn (or noop, script:SCENARIO)",
	"write_mode":      "full (or minimal, none)",
	"log_level":       "info (or debug, warn, error)",
	"library_root":    "none (serve: scan nothing)",
	"api_token":       "none",
}

func appDefault(key string) string {
	if d, ok := appDefaults[key]; ok {
		return d
	}
	return appKeys[key]
}

// shortDuration writes a duration's text without its zero tail: 1m, not
// 1m0s; 720h, not 720h0m0s. Other values are returned as they are.
func shortDuration(v string) string {
	if strings.HasSuffix(v, "m0s") {
		v = strings.TrimSuffix(v, "0s")
	}
	if strings.HasSuffix(v, "h0m") {
		v = strings.TrimSuffix(v, "0m")
	}
	return v
}

// ownEnv are the NOMARR_* variables the project sets or reads for other
// purposes than configuration: the configuration file, the worker
// specification a main process hands its workers, and test switches
// (besides every name with a TEST word, such as NOMARR_TEST_ARANGO_URL).
var ownEnv = []string{"NOMARR_CONFIG", workerEnv, "NOMARR_PROPERTY_CHECKS", "NOMARR_SCAN_FILES", "NOMARR_WRITE_TRACES",
	"NOMARR_SQLITE_HELPER", "NOMARR_SQLITE_DB", "NOMARR_SQLITE_WORKER", "NOMARR_TAGWRITE_CHILD"}

// envWarnings returns a line for each NOMARR_* variable of environ (KEY=VALUE
// entries) that no configuration key reads, naming the closest key when
// one is an obvious typo. A worker never calls it: its environment is its
// main process's, already warned about.
func envWarnings(environ []string) []string {
	known := map[string]bool{}
	for _, k := range allKeys() {
		known["NOMARR_"+strings.ToUpper(k)] = true
	}
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, "NOMARR_")
		if !ok || known[name] || slices.Contains(ownEnv, name) || slices.Contains(strings.Split(rest, "_"), "TEST") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range slices.Compact(names) {
		line := "nomarr: ignoring " + name + ": not a configuration key"
		if k := closestKey(strings.TrimPrefix(name, "NOMARR_")); k != "" {
			line += " (did you mean NOMARR_" + strings.ToUpper(k) + "?)"
		}
		out = append(out, line)
	}
	return out
}

// closestKey returns the configuration key that name (any case, dashes or
// underscores) most likely misspells, or "" (closest).
func closestKey(name string) string {
	return closest(strings.ReplaceAll(strings.ToLower(name), "-", "_"), allKeys())
}

// closest returns the candidate that name most likely misspells: the only
// one within two edits (a swap of neighbours is one) and fewer edits than
// a third of its length; "" when there is none or more than one. An alias
// and its key count as one.
func closest(name string, candidates []string) string {
	best, bestD, tie := "", 3, false
	for _, k := range candidates {
		d := editDistance(name, k)
		if d > 2 || 3*d > len(k) {
			continue
		}
		canon := func(s string) string { return config.Canonical(strings.ReplaceAll(s, "-", "_")) }
		switch {
		case d < bestD:
			best, bestD, tie = k, d, false
		case d == bestD && canon(k) != canon(best):
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b:
// insertions, deletions, substitutions and swaps of neighbours, one each.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nomarr/nomarr/app"
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
		if k := app.Closest(strings.ReplaceAll(flagName, "_", "-"), names); k != "" {
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
func commandSettings(name string, fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (s *app.Settings, rest []string, code int, ok bool) {
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
	for _, k := range app.Keys() {
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
			dashes := "--"
			if len(f.Name) == 1 { // -0
				dashes = "-"
			}
			fmt.Fprintf(w, "  %-26s %s\n", strings.TrimSpace(dashes+f.Name+" "+arg), usage)
		}
	}
	if name == "sim" {
		return // a scenario carries its own configuration
	}
	fmt.Fprintln(w, "\nconfiguration keys with their defaults; each is also NOMARR_<KEY> in the\n"+
		"environment and <key> (snake_case) in config.yaml:")
	for _, k := range app.AppKeys() {
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
	"data_dir":        "$STATE_DIRECTORY (systemd), else $XDG_DATA_HOME/nomarr, else ~/.local/share/nomarr",
	"models_dir":      "../shared/models/musicnn from the working directory, else from the checkout holding this binary, else <data_dir>/models/musicnn",
	"onnxruntime_lib": ".cache/onnxruntime/libonnxruntime.so.1 (make deps) from the working directory, else from the checkout holding this binary, else under <data_dir>/onnxruntime",
	"node":            "the host name",
	"analyzer":        "musicnn (or noop, script:SCENARIO)",
	"write_mode":      "full (or minimal, none)",
	"standard_tags":   "mood (or genre, mood,genre, none)",
	"calibration":     "none (or library: run `nomarr calibrate` first)",
	"log_level":       "info (or debug, warn, error)",
	"library_root":    "none (serve: scan nothing)",
	"api_token":       "none",
}

func appDefault(key string) string {
	if d, ok := appDefaults[key]; ok {
		return d
	}
	return app.Default(key)
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

// loadSettings defines the configuration's flags on fs, parses args (flags
// and positional arguments in any order) and resolves the settings
// (app.Sources.Resolve). -h or --help returns flag.ErrHelp, and a flag the
// command does not know a *flagError, for the caller to report
// (commandSettings). NOMARR_* variables that no key reads are warned about
// on fs's output.
func loadSettings(fs *flag.FlagSet, args []string) (*app.Settings, []string, error) {
	src := app.DefineFlags(fs)
	warnings := fs.Output()
	rest, err := parseInterleaved(fs, args)
	if err != nil {
		return nil, nil, err
	}
	s, err := src.Resolve(warnings)
	if err != nil {
		return nil, nil, err
	}
	return s, rest, nil
}

package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/config"
)

// exitUsage is the exit code for invalid configuration or usage.
const exitUsage = 2

// startCommand parses a job command's settings and positional arguments
// (exactly nargs), checks its analyzer and its worker count against this
// host (app.Settings.CheckWorkers; a warning is logged). When ok is false
// it has printed the help or the message: exit with code.
func startCommand(name string, args []string, nargs int, stdout, stderr io.Writer) (s *app.Settings, rest []string, log *slog.Logger, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok = commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return nil, nil, nil, code, false
	}
	if len(rest) != nargs {
		return nil, nil, nil, usageError(stderr, name), false
	}
	for _, dir := range rest { // tag DIR
		if !pathArgOK(stderr, name, "DIR", dir) {
			return nil, nil, nil, exitUsage, false
		}
	}
	if err := app.CheckAnalyzer(s); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return nil, nil, nil, exitUsage, false
	}
	log = app.NewLogger(s, stderr)
	warning, err := s.CheckWorkers(config.HostResources())
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return nil, nil, nil, exitUsage, false
	}
	if warning != "" {
		log.Warn(warning, "workers", s.Core.Workers)
	}
	return s, rest, log, 0, true
}

// noArgCommand parses the settings of `nomarr name`, a command that takes
// no argument and only the configuration's flags. When ok is false it has
// printed the help or the message: exit with code.
func noArgCommand(name string, args []string, stdout, stderr io.Writer) (s *app.Settings, code int, ok bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return nil, code, false
	}
	if len(rest) != 0 {
		return nil, usageError(stderr, name), false
	}
	return s, 0, true
}

// fail prints err as `nomarr name`'s failure and is the exit code 1.
func fail(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
	return 1
}

// pathArgOK reports whether path, the argument what (DIR, SCENARIO) of
// `nomarr name`, is usable; when it is empty or blank (app.CheckPath) it
// says so on stderr, for an exit with exitUsage: `nomarr tag "$MUSIC_DIR"`
// with the variable unset would otherwise tag the working directory.
func pathArgOK(stderr io.Writer, name, what, path string) bool {
	if err := app.CheckPath(what, path); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return false
	}
	return true
}

// signalExit is the exit code of a command stopped by sig: 128 + its
// number, as a shell reports a process killed by it (130 for SIGINT, 143
// for SIGTERM), so that a script sees the interruption.
func signalExit(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// scanSummary is the scan's line for a person (`nomarr scan`): the audio
// files found, what they were to the store (kindsNote) and the known files
// no longer there (missingNote), e.g. "1204 audio files (12 new, 3
// changed, 1 back from missing, 1188 unchanged), 2 known files no longer
// there (marked missing)".
func scanSummary(r app.ScanResult) string {
	return nFiles(r.Found(), "audio ") + kindsNote(r) + missingNote(r)
}

// kindsNote is " (12 new, 3 changed, 1 back from missing, 1188
// unchanged)": the kinds of the files found that occurred, or "" when
// none was found.
func kindsNote(r app.ScanResult) string {
	var kinds []string
	for _, k := range []struct {
		n    int
		name string
	}{{r.Kinds.New, "new"}, {r.Kinds.Changed, "changed"}, {r.Kinds.Back, "back from missing"}, {r.Kinds.Unchanged, "unchanged"}} {
		if k.n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", k.n, k.name))
		}
	}
	if len(kinds) == 0 {
		return ""
	}
	return " (" + strings.Join(kinds, ", ") + ")"
}

// missingNote is ", 2 known files no longer there (marked missing)", or
// "" when the scan marked none.
func missingNote(r app.ScanResult) string {
	if r.Missing == 0 {
		return ""
	}
	return fmt.Sprintf(", %s no longer there (marked missing)", nFiles(r.Missing, "known "))
}

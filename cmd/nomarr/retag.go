package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/nomarr/nomarr/app"
)

// runRetag implements `nomarr retag [DIR] [--all]` (app.Retag): it marks
// the tagged files (under DIR) whose stored tags the configuration's tag
// options would change, or all of them with --all, and retags them with
// worker processes that load no model. Exit 1 when files are left (failed
// retags wait for a retry), when every worker failed or the workers are
// paused, or when files changed since they were tagged were sent back to
// a full analysis; 130 or 143 when a signal stopped it.
func runRetag(args []string, stdout, stderr io.Writer) int {
	const name = "retag"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := fs.Bool("all", false, "mark every tagged file of this model set (needed after a change of standard_tags, mood_tier or write_mode)")
	s, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) > 1 {
		return usageError(stderr, name)
	}
	scope := app.RetagScope{All: *all}
	where := ""
	if len(rest) == 1 {
		if !pathArgOK(stderr, name, "DIR", rest[0]) {
			return exitUsage
		}
		abs, err := filepath.Abs(rest[0])
		if err != nil {
			fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
			return 1
		}
		scope.Match, where = underDir(abs), " under "+printable(abs)
	}
	if err := app.CheckAnalyzer(s); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return exitUsage
	}
	log := app.NewLogger(s, stderr)
	v := &retagView{stderr: stderr, where: where}
	end, err := app.Retag(s, scope, log, v)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		var ce *app.ConfigError
		if errors.As(err, &ce) {
			return exitUsage
		}
		return 1
	}
	switch {
	case end.Total == 0 && end.Left == 0:
		fmt.Fprintf(stdout, "nothing to retag%s: the stored tags are the ones this configuration derives\n", where)
		if !*all {
			fmt.Fprintf(stdout, "(after a change of standard_tags, mood_tier or write_mode, `%s` rewrites every file)\n", s.Again(name, "--all"))
		}
		return 0
	case end.Deferred != "":
		fmt.Fprintf(stdout, "%s marked for a retag; the running main process's workers retag them (%s)\n", nFiles(end.Left, ""), end.Deferred)
		return 0
	case end.Paused && end.Total == 0:
		fmt.Fprintf(stderr, "nomarr %s: %s marked; the workers are paused: run `%s`, then `%s` again\n",
			name, nFiles(end.Left, ""), s.Again("workers", "resume"), s.Again(name))
		return 1
	}
	fmt.Fprintf(stdout, "retagged %d, sent back to full analysis %d, left %d of %s in %s\n", max(end.Total-end.Left-end.Reanalyze, 0),
		end.Reanalyze, end.Left, nFiles(end.Total, "marked "), end.Took.Round(100*time.Millisecond))
	switch {
	case end.Signal != nil:
		fmt.Fprintf(stderr, "nomarr %s: interrupted; run `%s` again to go on\n", name, s.Again(name))
		return signalExit(end.Signal)
	case end.AllFailed:
		fmt.Fprintf(stderr, "nomarr %s: every worker failed; see the log, fix the cause, and run `%s`\n", name, s.Again("workers", "reset"))
		return 1
	case end.Paused:
		fmt.Fprintf(stderr, "nomarr %s: paused during the run; run `%s`, then `%s` again\n", name, s.Again("workers", "resume"), s.Again(name))
		return 1
	case end.Reanalyze > 0 && end.Left == 0:
		fmt.Fprintf(stderr, "nomarr %s: %s changed since %s tagged: `%s` analyses %s again\n",
			name, nFiles(end.Reanalyze, ""), pick(end.Reanalyze, "it was", "they were"), s.Again("tag", "DIR"), pick(end.Reanalyze, "it", "them"))
		return 1
	case end.Left > 0:
		fmt.Fprintf(stderr, "nomarr %s: %s left marked: a failed retag waits before it is tried again "+
			"(see the log's file_retry lines); `%s` again later, or a running `nomarr serve`, retags %s\n",
			name, nFiles(end.Left, ""), s.Again(name), pick(end.Left, "it", "them"))
		return 1
	}
	return 0
}

// retagView prints a retag run's progress on stderr, a line every 5 s.
type retagView struct {
	stderr   io.Writer
	where    string
	lastLine time.Time
}

func (v *retagView) Marked(marked, total int) {
	fmt.Fprintf(v.stderr, "marked %s%s for a retag", nFiles(marked, ""), v.where)
	if earlier := total - marked; earlier > 0 {
		fmt.Fprintf(v.stderr, " (%d more marked earlier)", earlier)
	}
	fmt.Fprintln(v.stderr)
}

func (v *retagView) Progress(done, total int) {
	if time.Since(v.lastLine) >= 5*time.Second {
		fmt.Fprintf(v.stderr, "retagging: %d/%d done\n", done, total)
		v.lastLine = time.Now()
	}
}

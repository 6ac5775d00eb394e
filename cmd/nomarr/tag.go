package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/store"
)

// runTag implements `nomarr tag DIR` (app.Tag): it shows the run's
// progress, prints its summary, and exits 1 when files failed or are left,
// when every worker failed or when the workers are paused; 130 or 143
// (128 + the signal's number, as a shell reports a process the signal
// killed) when SIGINT or SIGTERM stopped it: a script sees that the run
// was cut short, not that files failed.
func runTag(args []string, stdout, stderr io.Writer) int {
	s, rest, log, code, ok := startCommand("tag", args, 1, stdout, stderr)
	if !ok {
		return code
	}
	dir := rest[0]
	v := &tagView{s: s, dir: dir, stdout: stdout, stderr: stderr}
	end, err := app.Tag(s, dir, log, v)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		var ce *app.ConfigError
		switch {
		case errors.As(err, &ce):
			return exitUsage
		case end.Signal != nil: // the store down at the end of an interrupted run
			return signalExit(end.Signal)
		}
		return 1
	}
	switch end.Stage {
	case app.TagScanInterrupted:
		fmt.Fprintf(stderr, "nomarr tag: interrupted during the scan of %s; run `%s` again to go on\n", dir, s.Again("tag", dir))
		return signalExit(end.Signal)
	case app.TagPausedAtStart:
		fmt.Fprintln(stderr, "nomarr tag:", pauseAdvice+pauseHint(s, dir))
		return 1
	case app.TagNothing:
		b := end.Before
		invalid := ""
		if n := b.Invalid(); n > 0 {
			invalid = fmt.Sprintf(", %d missing or empty", n)
		}
		fmt.Fprintf(stdout, "nothing to tag: %s, %d tagged, %d failed%s\n", nFiles(b.Total, ""), b.Tagged, b.Failed, invalid)
		return 0
	}
	printSummary(stdout, end.Before, end.After, end.Took)
	if end.VectorsBefore > 0 || end.VectorsAfter > 0 {
		// Files tagged before vectors were kept, or whose tags were
		// reused from the file, got their vector (a backfill).
		fmt.Fprintf(stdout, "track vectors made %d, still missing %d\n", max(end.VectorsBefore-end.VectorsAfter, 0), end.VectorsAfter)
	}
	return tagOutcome(s, dir, log, end, stderr)
}

// tagOutcome says what a run that tagged left, and returns its exit code.
func tagOutcome(s *app.Settings, dir string, log *slog.Logger, end app.TagEnd, stderr io.Writer) int {
	before, c := end.Before, end.After
	switch {
	case end.Signal != nil:
		fmt.Fprintf(stderr, "nomarr tag: interrupted: %s not yet tagged; run `%s` again to go on\n", nFiles(c.Pending, ""), s.Again("tag", dir))
		return signalExit(end.Signal)
	case end.AllFailed:
		fmt.Fprintf(stderr, "nomarr tag: every worker failed; see the log, fix the cause, and run `%s`\n", s.Again("workers", "reset"))
		return 1
	case end.Paused && c.Pending > 0: // the advice was given when the pause was seen
		fmt.Fprintf(stderr, "nomarr tag: %s not yet tagged (paused)\n", nFiles(c.Pending, ""))
		return 1
	}
	code := 0
	if n := c.Failed - before.Failed; n > 0 {
		why := "the log's file_failed lines say why"
		if !log.Enabled(context.Background(), slog.LevelWarn) {
			why = "run with --log-level warn to see why"
		}
		fmt.Fprintf(stderr, "nomarr tag: %s failed; %s\n", nFiles(n, ""), why)
		code = 1
	}
	switch {
	case c.Invalid() > before.Invalid():
		n := c.Invalid() - before.Invalid()
		fmt.Fprintf(stderr, "nomarr tag: %s went missing during the run (a drive or share not mounted?); "+
			"%s tagged by the next `nomarr tag` or rescan that finds %s\n", nFiles(n, ""), pick(n, "it is", "they are"), pick(n, "it", "them"))
		code = 1
	case c.Pending > 0:
		see := "see the log's file_retry lines"
		if !log.Enabled(context.Background(), slog.LevelInfo) {
			see = "--log-level info shows them"
		}
		when, later := "", "later"
		if at := end.NextRetry; !at.IsZero() {
			when = fmt.Sprintf(", %s at %s (in %s)", pick(c.Pending, "due", "the first due"), at.Local().Format("15:04:05"),
				time.Until(at).Round(time.Second))
			later = "then"
		}
		fmt.Fprintf(stderr, "nomarr tag: %s %s for a retry after a transient error%s (%s); "+
			"run `%s` again %s, or keep `nomarr serve` running, to retry %s\n",
			nFiles(c.Pending, ""), pick(c.Pending, "waits", "wait"), when, see, s.Again("tag", dir), later, pick(c.Pending, "it", "them"))
		code = 1
	}
	return code
}

// tagView prints a tag run's progress on stderr: a progress bar on a
// terminal, else a line every 5 s.
type tagView struct {
	s        *app.Settings
	dir      string
	stdout   io.Writer
	stderr   io.Writer
	bar      *progressbar.ProgressBar
	lastLine time.Time
}

func (v *tagView) Found(r app.ScanResult) {
	fmt.Fprintf(v.stderr, "found %s in %s%s%s\n", nFiles(r.Found(), "audio "), v.dir, kindsNote(r), missingNote(r))
}

// Pending says, when files of earlier scans (other folders, or left by an
// earlier run) are pending too, that they are tagged as well: discovery
// is store-wide, and the summary counts them.
func (v *tagView) Pending(before store.Counts, fromDir int) {
	if earlier := before.Pending - fromDir; earlier > 0 {
		fmt.Fprintf(v.stderr, "%s to tag in the store: %d from %s, %d from earlier scans\n",
			nFiles(before.Pending, ""), fromDir, v.dir, earlier)
	}
}

func (v *tagView) Tagging(total int) {
	if f, ok := v.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		v.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(v.stderr), progressbar.OptionSetDescription("tagging"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
}

func (v *tagView) Progress(done, total int, c store.Counts, failed int) {
	if v.bar != nil {
		_ = v.bar.Set(done)
	} else if time.Since(v.lastLine) >= 5*time.Second {
		fmt.Fprintf(v.stderr, "tagging: %d/%d done, %d in progress, %d failed\n", done, total, c.Claimed, failed)
		v.lastLine = time.Now()
	}
}

func (v *tagView) Paused() {
	fmt.Fprintln(v.stderr, "nomarr tag: paused during the run: stopping;", pauseAdvice+pauseHint(v.s, v.dir))
}

func (v *tagView) Tagged() {
	if v.bar != nil {
		_ = v.bar.Finish()
	}
}

// printSummary prints a run's one-line summary: what it tagged and failed
// (now against before), what is left, out of how many files, in how long.
func printSummary(w io.Writer, before, now store.Counts, took time.Duration) {
	invalid := ""
	if n := now.Invalid(); n > 0 {
		invalid = fmt.Sprintf(", missing or empty %d", n)
	}
	fmt.Fprintf(w, "tagged %d, failed %d, pending %d%s of %s in %s\n", now.Tagged-before.Tagged,
		now.Failed-before.Failed, now.Pending, invalid, nFiles(now.Total, ""), took.Round(100*time.Millisecond))
}

// pauseAdvice is what `nomarr tag` says about a pause, followed by
// pauseHint.
const pauseAdvice = "the workers are paused (nomarr workers pause, the API, or the dashboard of a serve on this store)"

// pauseHint is what to run to go on after a pause, with the store flags
// this run was given (app.Settings.Again).
func pauseHint(s *app.Settings, dir string) string {
	return fmt.Sprintf("; run `%s`, then `%s` again", s.Again("workers", "resume"), s.Again("tag", dir))
}

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/nomarr/nomarr/adapters/gpu"
	"github.com/nomarr/nomarr/adapters/library"
	gpuhealth "github.com/nomarr/nomarr/core/gpu"
	"github.com/nomarr/nomarr/core/health"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/driver"
)

// runTag implements `nomarr tag DIR`: scan DIR, tag every pending file of
// the store (discovery is store-wide: DIR's and earlier scans') with the
// configured number of worker processes, show progress, print a summary, and
// exit 1 when files failed or are left.
//
// It ends when nothing is left, when every worker failed, when the workers
// are paused (at start or during the run: tagpause.go; exit 1), or when
// nothing is in progress and nothing can be claimed now: the files left wait for a
// retry after a transient error (60 s, 120 s, … up to 30 min apart), which
// a one-shot run does not sit through; the next `tag`, or `serve`, retries
// them. SIGINT or SIGTERM ends it too, gracefully, with exit code 130 or
// 143 (128 + the signal's number, as a shell reports a process the signal
// killed): a script sees that the run was cut short, not that files failed.
// A second signal forces the stop (forcestop.go), with the same exit code.
func runTag(args []string, stdout, stderr io.Writer) int {
	s, rest, log, code, ok := startCommand("tag", args, 1, stdout, stderr)
	if !ok {
		return code
	}
	if err := library.CheckRoot(rest[0]); err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		return 1
	}
	st, err := openForSettings(s)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		return 1
	}
	defer st.Close()
	// The first SIGINT or SIGTERM stops the run gracefully (the workers
	// finish their current job within stop_grace); a second one, once the
	// workers run, forces the stop (forcestop.go). The run then exits 128 +
	// the first signal's number (signalExit).
	var forcing atomic.Pointer[driver.Main]
	ctx, interrupted, release := stopSignals(forceOnSignal(log, &forcing))
	defer release()
	// A run beside another one under the same node name is refused before
	// the scan, not after it (the start refuses it all the same).
	if why := nodeRefusal(ctx, st, s); why != "" {
		fmt.Fprintln(stderr, "nomarr tag:", why)
		return 1
	}
	models := scanModels(s)
	scanned, err := scanLibrary(ctx, st, rest[0], models, log)
	if sig := interrupted(); sig != nil {
		fmt.Fprintf(stderr, "nomarr tag: interrupted during the scan of %s; run `%s` again to go on\n", rest[0], s.again("tag", rest[0]))
		return signalExit(sig)
	}
	if err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		return 1
	}
	fmt.Fprintf(stderr, "found %s in %s%s%s\n", nFiles(scanned.found(), "audio "), rest[0], scanned.kindsNote(), scanned.missingNote())
	if workersPaused(ctx, st) { // tagpause.go
		fmt.Fprintln(stderr, "nomarr tag:", pauseAdvice+pauseHint(s, rest[0]))
		return 1
	}
	// The library before the run; with nothing pending (every file tagged,
	// failed or missing) no worker is started, and loading the models for
	// nothing is skipped. Its one line is the run's summary.
	before, err := st.Counts(ctx)
	if err == nil && before.Pending == 0 {
		invalid := ""
		if n := before.Invalid(); n > 0 {
			invalid = fmt.Sprintf(", %d missing or empty", n)
		}
		fmt.Fprintf(stdout, "nothing to tag: %s, %d tagged, %d failed%s\n", nFiles(before.Total, ""), before.Tagged, before.Failed, invalid)
		return 0
	}
	// Discovery is store-wide: files of earlier scans (other folders, or
	// left by an earlier run) are tagged too, and the summary counts them.
	if err == nil {
		if earlier := before.Pending - scanned.pending; earlier > 0 {
			fmt.Fprintf(stderr, "%s to tag in the store: %d from %s, %d from earlier scans\n",
				nFiles(before.Pending, ""), scanned.pending, rest[0], earlier)
		}
	}
	// The file lines still waiting for their path are logged before the
	// summary, and in any case before the store closes and the process
	// exits (the quarantine of the last file).
	paths := newPathLogger(log, st)
	defer paths.close(pathDrainTimeout)
	m, err := newMain(s, st, log, logSinkWith(log, paths))
	if err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		return exitUsage
	}
	// This host's model set stays recorded while the workers tag with it.
	recordCtx, stopRecording := context.WithCancel(ctx)
	defer stopRecording()
	go keepRecorded(recordCtx, st, func() modelScan { return scanModels(s) }, inventory.ModelSetRenew, log)
	go m.WatchClock(recordCtx, s.core.LeaseTTL) // this host's clock against the store server's, when it has one
	if s.core.GPU {
		go m.ProbeGPU(ctx, s.core.GPUProbeInterval, func(ctx context.Context) (bool, string) {
			return gpu.Probe(ctx, "nvidia-smi", gpuhealth.ProbeTimeout)
		})
	}
	m.OnStoreWait = logStoreWait(log)
	forcing.Store(m)
	stop := make(chan struct{})
	ran := make(chan error, 1)
	go func() {
		err := m.Run(ctx, stop)
		reportForced(log, m, s.core.LeaseTTL)
		ran <- err
	}()

	start := time.Now()
	total := before.Pending
	tty := false
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		tty = true
	}
	var bar *progressbar.ProgressBar
	if tty {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("tagging"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish())
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastLine := time.Time{}
	allFailed, paused := false, false
	idle := 0 // polls in a row with nothing in progress and nothing claimable
loop:
	for {
		select {
		case err := <-ran:
			if err != nil {
				fmt.Fprintln(stderr, "nomarr tag:", err)
				return 1
			}
			break loop
		case <-tick.C:
		}
		c, fresh, err := m.LibraryCounts(context.Background())
		if !fresh {
			continue // a store that counts slowly is not asked at every tick
		}
		if err != nil {
			log.Warn("store unavailable", "err", err)
			continue
		}
		done := total - c.Pending
		if bar != nil {
			_ = bar.Set(done)
		} else if time.Since(lastLine) >= 5*time.Second {
			fmt.Fprintf(stderr, "tagging: %d/%d done, %d in progress, %d failed\n", done, total, c.Claimed, c.Failed-before.Failed)
			lastLine = time.Now()
		}
		failed := 0
		_ = m.Do(context.Background(), func(_ context.Context, now time.Time) {
			for _, id := range m.Node.Sup.Components() {
				if m.Node.Status(id, now) == health.Failed {
					failed++
				}
			}
		})
		allFailed = failed == s.core.Workers
		paused = workersPaused(context.Background(), st)
		if paused {
			fmt.Fprintln(stderr, "nomarr tag: paused during the run: stopping;", pauseAdvice+pauseHint(s, rest[0]))
		}
		idle++
		if c.Pending == 0 || c.Claimed > 0 {
			idle = 0
		} else if ready, err := st.Discover(context.Background(), time.Now(), "", 1); err != nil || len(ready) > 0 {
			idle = 0
		}
		if (c.Pending == 0 && c.Claimed == 0) || allFailed || paused || idle >= idlePolls {
			close(stop)
			if err := <-ran; err != nil {
				fmt.Fprintln(stderr, "nomarr tag:", err)
				return 1
			}
			break
		}
	}
	if bar != nil {
		_ = bar.Finish()
	}
	paths.close(pathDrainTimeout)
	c, err := st.Counts(context.Background())
	if err != nil {
		fmt.Fprintln(stderr, "nomarr tag:", err)
		if sig := interrupted(); sig != nil { // the store down at the end of an interrupted run
			return signalExit(sig)
		}
		return 1
	}
	printSummary(stdout, before, c, time.Since(start))
	switch {
	case interrupted() != nil:
		fmt.Fprintf(stderr, "nomarr tag: interrupted: %s not yet tagged; run `%s` again to go on\n", nFiles(c.Pending, ""), s.again("tag", rest[0]))
		return signalExit(interrupted())
	case allFailed:
		fmt.Fprintf(stderr, "nomarr tag: every worker failed; see the log, fix the cause, and run `%s`\n", s.again("workers", "reset"))
		return 1
	case paused && c.Pending > 0: // the advice was given when the pause was seen
		fmt.Fprintf(stderr, "nomarr tag: %s not yet tagged (paused)\n", nFiles(c.Pending, ""))
		return 1
	}
	code = 0
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
		if at, ok := nextRetry(context.Background(), st, time.Now()); ok {
			when = fmt.Sprintf(", %s at %s (in %s)", pick(c.Pending, "due", "the first due"), at.Local().Format("15:04:05"),
				time.Until(at).Round(time.Second))
			later = "then"
		}
		fmt.Fprintf(stderr, "nomarr tag: %s %s for a retry after a transient error%s (%s); "+
			"run `%s` again %s, or keep `nomarr serve` running, to retry %s\n",
			nFiles(c.Pending, ""), pick(c.Pending, "waits", "wait"), when, see, s.again("tag", rest[0]), later, pick(c.Pending, "it", "them"))
		code = 1
	}
	return code
}

// nextRetry is when the first pending file that waits (next_retry_at or
// skip_until after now) can be claimed again; false when none waits or
// the store cannot tell. It looks at up to retryLookPages pages of the
// files claimable within a day (a transient retry waits 30 min at most).
func nextRetry(ctx context.Context, st store.Store, now time.Time) (time.Time, bool) {
	var first time.Time
	after := ""
	for range retryLookPages {
		page, err := st.Discover(ctx, now.Add(24*time.Hour), after, listBatch)
		if err != nil {
			return time.Time{}, false
		}
		for _, f := range page {
			at := f.NextRetryAt
			if f.SkipUntil.After(at) {
				at = f.SkipUntil
			}
			if at.After(now) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if len(page) < listBatch {
			break
		}
		after = page[len(page)-1].Key
	}
	return first, !first.IsZero()
}

// retryLookPages bounds nextRetry's reads.
const retryLookPages = 2

// idlePolls is how many progress polls in a row (0.5 s apart, or further
// on a store that counts slowly: driver.CountsFactor) must find nothing in
// progress and nothing claimable before tag ends with files left: long
// enough for a worker between two jobs to claim the next.
const idlePolls = 4

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

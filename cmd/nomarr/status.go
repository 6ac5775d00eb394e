package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/app"
	"github.com/nomarr/nomarr/core/clockskew"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// runStatus implements `nomarr status [--json]`: the daemon's view, or the
// store's library counts when no daemon runs (nothing listens at
// http_addr). It exits 1 when the store cannot be read: no daemon and no
// store, or a daemon that reports its store unavailable (the view is still
// printed, with the store's error); when the daemon's store writes are
// failing (store_writes_failing, printed too); when the daemon found its
// database damaged (store_corrupt, printed with how to repair it) or, with
// no daemon, the store is damaged; when a worker of the daemon
// failed (each is listed with its reason and the reset command); when the
// daemon's clock is dangerously off the store server's (clock_skew
// dangerous, printed too: other hosts may take its live claims); and when
// a daemon listens but does not answer (apiCall): the store's counts alone
// would hide its workers.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	s, rest, code, ok := commandSettings("status", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return usageError(stderr, "status")
	}
	var info httpapi.Info
	if err := apiCall(s, http.MethodGet, "/api/v1/info", &info); err != nil {
		if !errors.Is(err, errNoDaemon) { // a daemon runs: the store alone would hide its workers
			fmt.Fprintln(stderr, "nomarr status:", err)
			return 1
		}
		// No daemon is the usual case, not an error: the dial's error is
		// not shown. Looking creates nothing: a SQLite store that is not
		// there (a mistyped --db, another --data-dir) is said to be missing.
		if serr := app.StoreMissing(s); serr != nil {
			fmt.Fprintf(stderr, "nomarr status: no daemon at %s, and %v\n", s.Get("http_addr"), serr)
			return 1
		}
		st, serr := app.OpenForSettings(s)
		if serr != nil {
			fmt.Fprintf(stderr, "nomarr status: no daemon at %s, and the store is %s: %v\n", s.Get("http_addr"), storeState(serr), serr)
			return 1
		}
		defer st.Close()
		c, cerr := st.Counts(context.Background())
		if cerr != nil {
			fmt.Fprintf(stderr, "nomarr status: the store is %s: %v\n", storeState(cerr), cerr)
			return 1
		}
		v, ok, merr := st.GetMeta(context.Background(), store.MetaWorkerEnabled)
		if merr != nil { // the flag cannot be told: not shown as enabled
			fmt.Fprintln(stderr, "nomarr status: reading the pause flag:", merr)
			return 1
		}
		// The records are seen from this host (node), as its daemon
		// would; a damaged value is left out, as the daemon leaves it.
		raw, _, merr := st.GetMeta(context.Background(), inventory.ModelSetsKey)
		if merr != nil {
			fmt.Fprintln(stderr, "nomarr status: reading the hosts' model-set records:", merr)
			return 1
		}
		var sets *httpapi.ModelSetsInfo
		if m, derr := inventory.DecodeModelSets(raw); derr == nil {
			sets = httpapi.NewModelSetsInfo(m.Report(s.Get("node"), time.Now()))
		}
		// The version is this binary's; there is no instance (no main
		// process), so --json leaves it out (offlineJSON).
		info = httpapi.Info{Version: buildVersion(), Store: app.Redact(s.Get("db")), Library: c, WorkerEnabled: store.Enabled(v, ok), ModelSets: sets}
		if set := app.VectorModelSet(s); set != "" {
			if jc, jerr := st.CountJobs(context.Background(), set); jerr == nil {
				info.Jobs = &httpapi.JobsInfo{ModelSet: set, Retag: jc.Retag, VectorsMissing: jc.Vector}
			}
		}
		fmt.Fprintf(stderr, "no daemon at %s: showing the store only\n", s.Get("http_addr"))
	}
	if *asJSON {
		b, err := json.Marshal(info)
		if err == nil && info.Instance == "" {
			b = offlineJSON(b)
		}
		var out bytes.Buffer
		if err == nil {
			err = json.Indent(&out, b, "", "  ")
		}
		if err != nil {
			fmt.Fprintln(stderr, "nomarr status:", err)
			return 1
		}
		out.WriteByte('\n')
		_, _ = out.WriteTo(stdout)
	} else {
		if info.Instance != "" {
			// The node is compared only when one was asked for: the
			// default (this host's name) asks for no daemon in particular.
			node := ""
			if s.Explicit("node") {
				node = s.Get("node")
			}
			writeDaemonLine(stdout, info, s.Get("http_addr"), node, time.Now())
		}
		writeStatus(stdout, info, time.Now(), s.Again)
		writeFailedWorkers(stdout, info.Workers, func() string {
			if a := s.Get("http_addr"); a != app.Default("http_addr") { // the daemon this command asked
				return s.Again("workers", "reset", "--http-addr", a)
			}
			return s.Again("workers", "reset")
		})
	}
	if info.StoreError != "" || info.StoreWritesFailing != nil || info.StoreCorrupt != nil || failedWorkers(info.Workers) > 0 ||
		info.ClockSkew == string(clockskew.Dangerous) {
		return 1
	}
	return 0
}

// storeState is what a failure to read the store says of it: "damaged"
// for a corrupt database (no retry mends it), else "unavailable".
func storeState(err error) string {
	if store.IsCorrupt(err) {
		return "damaged"
	}
	return "unavailable"
}

// writeStoreCorruptLine says, once the daemon found its database damaged,
// since when, which call found it, and how to repair the file (the
// error's own advice).
func writeStoreCorruptLine(stdout io.Writer, c *httpapi.StoreCorruption, now time.Time) {
	if c == nil {
		return
	}
	fmt.Fprintf(stdout, "store damaged since %s (%s ago), found by %s: %s\n", c.Since.Local().Format(time.DateTime),
		now.Sub(c.Since).Round(time.Second), strings.ReplaceAll(c.Op, "_", " "), c.Error)
}

// writeStoreWritesLine says, while the daemon's last store write failed,
// since when and why: the store may answer the reads above and still take
// no write.
func writeStoreWritesLine(stdout io.Writer, f *httpapi.StoreWriteFailure, now time.Time) {
	if f == nil {
		return
	}
	fmt.Fprintf(stdout, "store writes failing since %s (%s ago): %s: %s\n", f.Since.Local().Format(time.DateTime),
		now.Sub(f.Since).Round(time.Second), strings.ReplaceAll(f.Op, "_", " "), f.Error)
}

// writeClockLine says, when the daemon's last measurement of its clock
// against the store server's is not ok, how far off it is and what to do,
// and how old the measurement is once it is older than two measurement
// periods (the store server has not answered since); nothing when it is
// ok or was not measured (a store without a server clock).
func writeClockLine(stdout io.Writer, info httpapi.Info, now time.Time) {
	if info.ClockSkew == "" || info.ClockSkew == string(clockskew.OK) || info.ClockOffsetMs == nil {
		return
	}
	off := time.Duration(*info.ClockOffsetMs) * time.Millisecond
	unc := time.Duration(0)
	if info.ClockUncertaintyMs != nil {
		unc = time.Duration(*info.ClockUncertaintyMs) * time.Millisecond
	}
	age := ""
	if at := info.ClockMeasuredAt; at != nil && now.Sub(*at) > 2*clockskew.Every {
		age = fmt.Sprintf(" [measured %s ago: the store server has not answered since]", now.Sub(*at).Round(time.Minute))
	}
	if info.ClockSkew == string(clockskew.Unknown) {
		fmt.Fprintf(stdout, "clock skew unknown: the store server answered too slowly to tell (the daemon's clock %s the server's, ±%s)%s\n",
			clockskew.Words(off), unc, age)
		return
	}
	fmt.Fprintf(stdout, "clock skew %s: the daemon's clock is %s the store server's (±%s)%s; claim leases and node-name holds are judged "+
		"by each host's clock: synchronise every host's clock with NTP\n", info.ClockSkew, clockskew.Words(off), unc, age)
}

// failedWorkers counts the workers in status failed: the restart policy
// gave up on them and they stay down until a manual reset, so status
// exits 1 for them as for a store it cannot read (a health check sees a
// daemon that runs with fewer workers than configured, for good).
func failedWorkers(ws []httpapi.WorkerInfo) int {
	n := 0
	for _, w := range ws {
		if w.Status == "failed" {
			n++
		}
	}
	return n
}

// writeDaemonLine names the main process that answered: its node, pid,
// uptime and version, and the address it was asked at. When node (the
// one this command was told, by flag, NOMARR_NODE or config file; "" when
// left to the host name) is another one, it says so: the workers shown
// are the daemon's, not those of the node asked for, whose daemon listens
// elsewhere.
func writeDaemonLine(stdout io.Writer, info httpapi.Info, addr, node string, now time.Time) {
	daemonNode, pid, started := splitInstance(info.Instance)
	if info.Node != "" {
		daemonNode = info.Node
	}
	who := "daemon " + info.Instance
	if pid != "" {
		who = fmt.Sprintf("daemon %s (pid %s", daemonNode, pid)
		if !started.IsZero() && now.After(started) {
			who += ", up " + now.Sub(started).Round(time.Second).String()
		}
		who += ")"
	}
	fmt.Fprintf(stdout, "%s at %s, version %s\n", who, addr, info.Version)
	if daemonNode != "" && node != "" && daemonNode != node {
		fmt.Fprintf(stdout, "this is node %s's daemon, not node %s's: the workers below are %s's "+
			"(node %s's daemon, if it runs, listens at its own http_addr)\n", daemonNode, node, daemonNode, node)
	}
}

// splitInstance takes an instance id <node>:<pid>:<start-ms> apart; an id
// of another shape (configured) gives only its whole as node.
func splitInstance(id string) (node, pid string, started time.Time) {
	i := strings.LastIndexByte(id, ':')
	if i < 0 {
		return id, "", time.Time{}
	}
	j := strings.LastIndexByte(id[:i], ':')
	if j < 0 {
		return id, "", time.Time{}
	}
	p, errp := strconv.Atoi(id[j+1 : i])
	ms, errm := strconv.ParseInt(id[i+1:], 10, 64)
	if errp != nil || errm != nil || p <= 0 {
		return id, "", time.Time{}
	}
	return id[:j], strconv.Itoa(p), time.UnixMilli(ms)
}

// writeFailedWorkers prints, under the table, why each failed worker
// failed (its restart policy's reason) and the command that restarts
// them: a failed worker is not restarted until a manual reset.
func writeFailedWorkers(stdout io.Writer, ws []httpapi.WorkerInfo, reset func() string) {
	n := 0
	for _, w := range ws {
		if w.Status != "failed" {
			continue
		}
		n++
		reason := w.FailureReason
		if reason == "" {
			reason = "no reason recorded"
		}
		fmt.Fprintf(stdout, "%s failed: %s\n", w.Component, reason)
	}
	if n > 0 {
		fmt.Fprintf(stdout, "failed workers stay down until a reset: `%s` restarts them\n", reset())
	}
}

// writeStatus prints info as text. When the daemon reports its store
// unavailable, the library counts it sends are zeros that mean nothing: the
// store's error is printed in their place. The hosts' model-set records
// follow, in one line, with one more when they hold the re-tagging back
// (writeModelSetsLine). again names the commands a line points to
// (app.Settings.Again).
func writeStatus(stdout io.Writer, info httpapi.Info, now time.Time, again func(...string) string) {
	if info.StoreError != "" {
		msg := info.StoreError // often says it already
		if !strings.HasPrefix(msg, "store unavailable") {
			msg = "store unavailable: " + msg
		}
		fmt.Fprintf(stdout, "%s (store %s)", msg, info.Store)
	} else {
		l := info.Library
		fmt.Fprintf(stdout, "store %s: %s, %d tagged, %d failed, %d pending, %d in progress",
			info.Store, nFiles(l.Total, ""), l.Tagged, l.Failed, l.Pending, l.Claimed)
		if n := l.Invalid(); n > 0 {
			// `nomarr missing` lists the files not on disk, not the empty
			// ones (they are there: nothing to forget).
			fmt.Fprintf(stdout, ", %d not valid (empty files, or files gone at the last scan: `%s` lists the gone ones)", n, again("missing"))
		}
	}
	enabled := fmt.Sprint(info.WorkerEnabled)
	if info.StoreError != "" { // the pause flag could not be read
		enabled = "unknown"
	}
	fmt.Fprintf(stdout, "; workers enabled: %s\n", enabled)
	writeJobsLine(stdout, info.Jobs)
	writeStoreCorruptLine(stdout, info.StoreCorrupt, now)
	writeStoreWritesLine(stdout, info.StoreWritesFailing, now)
	writeClockLine(stdout, info, now)
	writeModelSetsLine(stdout, info.ModelSets, now, again)
	if len(info.Workers) > 0 {
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		// JOB is last: a path is long, and the columns before it stay aligned.
		fmt.Fprintln(tw, "COMPONENT\tSTATUS\tPHASE\tPID\tRESTARTS\tLAST FRAME\tFILES\tJOB")
		for _, w := range info.Workers {
			age := "-"
			if w.LastFrameAgeMs >= 0 {
				age = (time.Duration(w.LastFrameAgeMs) * time.Millisecond).Round(100 * time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%s\n", w.Component, w.Status, dash(w.Phase), w.PID, w.Restarts, age, w.FilesProcessed, jobName(w))
		}
		tw.Flush()
	}
	writeEventsLine(stdout, info)
}

// writeJobsLine says, when there is any, what work other than tagging is
// left: files marked for a retag, and files without a track vector of
// the host's model set (the workers make them once nothing is left to
// tag).
func writeJobsLine(stdout io.Writer, j *httpapi.JobsInfo) {
	if j == nil || j.Retag == 0 && j.VectorsMissing == 0 {
		return
	}
	fmt.Fprintf(stdout, "to do besides tagging: %d marked for a retag, %d without a track vector of model set %s\n",
		j.Retag, j.VectorsMissing, j.ModelSet)
}

// writeEventsLine sums up what the daemon's supervisor did since it
// started — kills by cause, worker ends, poison quarantines, the claims it
// removed — in one line, printed only when any of it happened: a calm
// daemon's status stays short. Causes are listed in name order, those at
// 0 left out.
func writeEventsLine(stdout io.Writer, info httpapi.Info) {
	kills := map[string]int64{}
	var nKills, deaths int64
	for _, w := range info.Workers {
		deaths += w.Deaths
		for c, n := range w.Kills {
			kills[c] += n
			nKills += n
		}
	}
	var released int64
	for _, n := range info.ClaimsReleased {
		released += n
	}
	if nKills == 0 && deaths == 0 && info.FilesQuarantined == 0 && released == 0 {
		return
	}
	parts := []string{fmt.Sprintf("%d worker %s", deaths, pick(int(deaths), "exit", "exits"))}
	if nKills > 0 {
		parts = append(parts, fmt.Sprintf("%d %s (%s)", nKills, pick(int(nKills), "kill", "kills"), byCause(kills)))
	}
	parts = append(parts, nFiles(int(info.FilesQuarantined), "")+" quarantined")
	if released > 0 {
		parts = append(parts, fmt.Sprintf("%d %s removed (%s)", released, pick(int(released), "claim", "claims"), byCause(info.ClaimsReleased)))
	}
	fmt.Fprintf(stdout, "since the daemon started: %s\n", strings.Join(parts, ", "))
}

// byCause is "hang 2, stall 1": the causes counted, in name order.
func byCause(m map[string]int64) string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		if m[c] > 0 {
			out = append(out, fmt.Sprintf("%s %d", strings.ReplaceAll(c, "_", " "), m[c]))
		}
	}
	return strings.Join(out, ", ")
}

// jobName is a worker's current job as a person reads it: the file's path
// when the daemon could tell it, else its key; "-" with none.
func jobName(w httpapi.WorkerInfo) string {
	switch {
	case w.CurrentPath != "":
		return w.CurrentPath
	case w.CurrentJob != "":
		return w.CurrentJob
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// offlineJSON is the JSON of an Info without a main process (no daemon)
// less its empty "instance", which would read as a daemon with no name.
// Instance is Info's first field, so its empty value opens the object.
func offlineJSON(b []byte) []byte {
	if rest, ok := bytes.CutPrefix(b, []byte(`{"instance":"",`)); ok {
		return append([]byte{'{'}, rest...)
	}
	return b
}

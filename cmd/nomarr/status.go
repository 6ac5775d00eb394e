package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/inventory"
	"github.com/nomarr/nomarr/core/store"
)

// runStatus implements `nomarr status [--json]`: the daemon's view, or the
// store's library counts when no daemon runs (nothing listens at
// http_addr). It exits 1 when the store cannot be read: no daemon and no
// store, or a daemon that reports its store unavailable (the view is still
// printed, with the store's error); when the daemon's store writes are
// failing (store_writes_failing, printed too); and when a daemon listens
// but does not answer (apiCall): the store's counts alone would hide its workers.
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
		if serr := storeMissing(s); serr != nil {
			fmt.Fprintf(stderr, "nomarr status: no daemon at %s, and %v\n", s.get("http_addr"), serr)
			return 1
		}
		st, serr := openForSettings(s)
		if serr != nil {
			fmt.Fprintf(stderr, "nomarr status: no daemon at %s, and the store is unavailable: %v\n", s.get("http_addr"), serr)
			return 1
		}
		defer st.Close()
		c, cerr := st.Counts(context.Background())
		if cerr != nil {
			fmt.Fprintln(stderr, "nomarr status:", cerr)
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
			sets = httpapi.NewModelSetsInfo(m.Report(s.get("node"), time.Now()))
		}
		// The version is this binary's; there is no instance (no main
		// process), so --json leaves it out (offlineJSON).
		info = httpapi.Info{Version: buildVersion(), Store: redact(s.get("db")), Library: c, WorkerEnabled: store.Enabled(v, ok), ModelSets: sets}
		fmt.Fprintf(stderr, "no daemon at %s: showing the store only\n", s.get("http_addr"))
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
		writeStatus(stdout, info, time.Now(), s.again)
	}
	if info.StoreError != "" || info.StoreWritesFailing != nil {
		return 1
	}
	return 0
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

// writeStatus prints info as text. When the daemon reports its store
// unavailable, the library counts it sends are zeros that mean nothing: the
// store's error is printed in their place. The hosts' model-set records
// follow, in one line, with one more when they hold the re-tagging back
// (writeModelSetsLine). again names the commands a line points to
// (settings.again).
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
	writeStoreWritesLine(stdout, info.StoreWritesFailing, now)
	writeModelSetsLine(stdout, info.ModelSets, now, again)
	if len(info.Workers) > 0 {
		tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "COMPONENT\tSTATUS\tPHASE\tJOB\tPID\tRESTARTS\tLAST FRAME\tFILES")
		for _, w := range info.Workers {
			age := "-"
			if w.LastFrameAgeMs >= 0 {
				age = (time.Duration(w.LastFrameAgeMs) * time.Millisecond).Round(100 * time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%d\n", w.Component, w.Status, w.Phase, w.CurrentJob, w.PID, w.Restarts, age, w.FilesProcessed)
		}
		tw.Flush()
	}
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

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/nomarr/nomarr/adapters/library"
	"github.com/nomarr/nomarr/app"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// runWorkers implements `nomarr workers pause|resume|reset [ID]`. Each goes
// through the daemon at http_addr; only when nothing listens there
// (errNoDaemon) does it act on the store itself. A daemon that listens but
// does not answer in time is an error (exit 1), never a reason to write
// behind it. Pause and resume then write the cluster-wide flag, which the
// workers of any running main process read. Reset clears the persisted
// restart state so the next start spawns the worker, unless a main
// process may be running under this node name (app.NodeInUse): it keeps the
// restart state in memory and would write over the reset. An ID that
// names no worker is refused either way (exit 1).
func runWorkers(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings("workers", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) == 0 || len(rest) > 2 || (rest[0] != "pause" && rest[0] != "resume" && rest[0] != "reset") ||
		(rest[0] != "reset" && len(rest) == 2) {
		return usageError(stderr, "workers")
	}
	op, id := rest[0], ""
	if len(rest) == 2 {
		id = rest[1]
	}
	path := "/api/v1/workers/" + op
	if op == "reset" && id != "" {
		path = "/api/v1/workers/" + id + "/reset"
	}
	apiErr := apiCall(s, http.MethodPost, path, nil)
	if apiErr == nil {
		fmt.Fprintf(stdout, "%s: done\n", strings.TrimSpace(op+" "+id))
		return 0
	}
	if !errors.Is(apiErr, errNoDaemon) {
		fmt.Fprintln(stderr, "nomarr workers:", apiErr)
		return 1
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr workers:", err)
		return 1
	}
	defer st.Close()
	ctx := context.Background()
	switch op {
	case "pause", "resume":
		if err := st.SetMeta(ctx, store.MetaWorkerEnabled, fmt.Sprint(op == "resume")); err != nil {
			fmt.Fprintln(stderr, "nomarr workers:", err)
			return 1
		}
	case "reset":
		why, err := app.NodeInUse(ctx, st, s.Get("node"), s.Core.LeaseTTL)
		if err == nil && why != "" {
			err = fmt.Errorf("%s; it would overwrite a reset written in the store: "+
				"reset through its API (--http-addr, the address it serves), or once it has stopped", why)
		}
		if err != nil {
			fmt.Fprintln(stderr, "nomarr workers:", err)
			return 1
		}
		ids, err := offlineResetIDs(ctx, st, s.Get("node"), s.Core.Workers, id)
		if err != nil {
			fmt.Fprintln(stderr, "nomarr workers:", err)
			return 1
		}
		switch {
		case len(ids) == 0 && id == "":
			fmt.Fprintln(stdout, "reset: no failed worker in the store (no daemon running)")
			return 0
		case len(ids) == 0:
			fmt.Fprintf(stdout, "reset %s: nothing to reset, no restart state in the store (no daemon running)\n", id)
			return 0
		}
		id = strings.Join(ids, ", ")
		now := time.Now().UnixMilli()
		for _, c := range ids {
			key := supervisor.RestartKey(s.Get("node"), c)
			if err := st.SaveRestart(ctx, key, restart.Reset(restart.State{Component: key}, now)); err != nil {
				fmt.Fprintln(stderr, "nomarr workers:", err)
				return 1
			}
		}
	}
	fmt.Fprintf(stdout, "%s: done in the store (no daemon running)\n", strings.TrimSpace(op+" "+id))
	return 0
}

// runScan implements `nomarr scan DIR`.
func runScan(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings("scan", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return usageError(stderr, "scan")
	}
	if !pathArgOK(stderr, "scan", "DIR", rest[0]) {
		return exitUsage
	}
	if err := library.CheckRoot(rest[0]); err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
	}
	st, err := app.OpenForSettings(s)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
	}
	defer st.Close()
	r, err := app.ScanLibrary(context.Background(), st, rest[0], app.ModelScan{}, app.NewLogger(s, stderr)) // indexes only: re-tagging is for the processes whose workers tag
	if err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
	}
	fmt.Fprintf(stdout, "scanned %s: %s\n", rest[0], scanSummary(r))
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nomarr/nomarr/adapters/httpapi"
	"github.com/nomarr/nomarr/core/restart"
	"github.com/nomarr/nomarr/core/store"
	"github.com/nomarr/nomarr/core/supervisor"
)

// apiCall calls the running daemon's API.
func apiCall(s *settings, method, path string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+s.get("http_addr")+path, nil)
	if err != nil {
		return err
	}
	if tok := s.get("api_token"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("no nomarr daemon answers on %s (is `nomarr serve` running?): %w", s.get("http_addr"), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// runStatus implements `nomarr status [--json]`: the daemon's view, or the
// store's library counts when no daemon runs.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	s, rest, err := loadSettings(fs, args)
	if err != nil || len(rest) != 0 {
		if err != nil {
			fmt.Fprintln(stderr, "nomarr status:", err)
		}
		return exitUsage
	}
	var info httpapi.Info
	if err := apiCall(s, http.MethodGet, "/api/v1/info", &info); err != nil {
		st, serr := openForSettings(s)
		if serr != nil {
			fmt.Fprintln(stderr, "nomarr status:", err)
			return 1
		}
		defer st.Close()
		c, cerr := st.Counts(context.Background())
		if cerr != nil {
			fmt.Fprintln(stderr, "nomarr status:", cerr)
			return 1
		}
		info = httpapi.Info{Store: redact(s.get("db")), Library: c, WorkerEnabled: true}
		if v, ok, err := st.GetMeta(context.Background(), store.MetaWorkerEnabled); err == nil {
			info.WorkerEnabled = store.Enabled(v, ok)
		}
		fmt.Fprintln(stderr, "nomarr status:", err, "— showing the store only")
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(info)
		return 0
	}
	l := info.Library
	fmt.Fprintf(stdout, "store %s: %d files, %d tagged, %d failed, %d pending, %d in progress",
		info.Store, l.Total, l.Tagged, l.Failed, l.Pending, l.Claimed)
	if n := l.Invalid(); n > 0 {
		fmt.Fprintf(stdout, ", %d not valid (empty, or gone at the last scan)", n)
	}
	fmt.Fprintf(stdout, "; workers enabled: %v\n", info.WorkerEnabled)
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
	return 0
}

// runWorkers implements `nomarr workers pause|resume|reset [ID]`. Pause and
// resume go through the daemon when one answers, else straight to the store
// (the flag is cluster-wide either way). Reset goes through the daemon, else
// it clears the persisted restart state so the next start spawns the worker.
func runWorkers(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("workers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, err := loadSettings(fs, args)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr workers:", err)
		return exitUsage
	}
	if len(rest) == 0 || len(rest) > 2 || (rest[0] != "pause" && rest[0] != "resume" && rest[0] != "reset") ||
		(rest[0] != "reset" && len(rest) == 2) {
		fmt.Fprintln(stderr, "usage: nomarr workers pause|resume|reset [ID]")
		return exitUsage
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
	if !strings.Contains(apiErr.Error(), "no nomarr daemon") {
		fmt.Fprintln(stderr, "nomarr workers:", apiErr)
		return 1
	}
	st, err := openForSettings(s)
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
		ids := []string{id}
		if id == "" {
			ids = ids[:0]
			for i := 0; i < s.core.Workers; i++ {
				ids = append(ids, supervisor.ComponentID(i))
			}
		}
		now := time.Now().UnixMilli()
		for _, c := range ids {
			key := supervisor.RestartKey(s.get("node"), c)
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
	s, rest, err := loadSettings(fs, args)
	if err != nil || len(rest) != 1 {
		if err != nil {
			fmt.Fprintln(stderr, "nomarr scan:", err)
		} else {
			fmt.Fprintln(stderr, "usage: nomarr scan DIR")
		}
		return exitUsage
	}
	st, err := openForSettings(s)
	if err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
	}
	defer st.Close()
	n, missing, err := scanInto(context.Background(), st, rest[0], newLogger(s, stderr))
	if err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
	}
	fmt.Fprintf(stdout, "scanned %s: %d audio files", rest[0], n)
	if missing > 0 {
		fmt.Fprintf(stdout, ", %d known files no longer there (marked missing)", missing)
	}
	fmt.Fprintln(stdout)
	return 0
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/nomarr/nomarr/adapters/library"
	"io"
	"net/http"
	"strings"
	"time"

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
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s %s: %s: %s; pass --api-token or set NOMARR_API_TOKEN", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// runWorkers implements `nomarr workers pause|resume|reset [ID]`. Pause and
// resume go through the daemon when one answers, else straight to the store
// (the flag is cluster-wide either way). Reset goes through the daemon, else
// it clears the persisted restart state so the next start spawns the worker;
// an ID that names no worker is refused either way (exit 1).
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
	if !strings.Contains(apiErr.Error(), "no nomarr daemon") {
		fmt.Fprintln(stderr, "nomarr workers:", apiErr)
		return 1
	}
	st, err := openExisting(s)
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
		ids, err := offlineResetIDs(ctx, st, s.get("node"), s.core.Workers, id)
		if err != nil {
			fmt.Fprintln(stderr, "nomarr workers:", err)
			return 1
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
	s, rest, code, ok := commandSettings("scan", fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 1 {
		return usageError(stderr, "scan")
	}
	if err := library.CheckRoot(rest[0]); err != nil {
		fmt.Fprintln(stderr, "nomarr scan:", err)
		return 1
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

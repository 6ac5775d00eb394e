package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/app"
)

// apiTimeout is how long an admin command waits for the daemon's answer
// (a variable for the tests only).
var apiTimeout = 5 * time.Second

// apiClient talks to the daemon. It never goes through a proxy
// (HTTP_PROXY, HTTPS_PROXY): the daemon is this host or one the operator
// named in http_addr, and the bearer token must not reach a third party.
var apiClient = &http.Client{Transport: noProxyTransport()}

// noProxyTransport is Go's default transport without its proxy.
func noProxyTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	return t
}

// errNoDaemon: nothing listens at http_addr, so no daemon runs there. Only
// this error lets an admin command act on the store instead.
var errNoDaemon = errors.New("no nomarr daemon")

// apiCall calls the running daemon's API.
//
// Invariant: it returns an error wrapping errNoDaemon only when the
// connection was refused, which is what a daemon that is not running
// looks like (its listening socket went with it). A daemon that listens
// but does not answer within apiTimeout (its loop stuck in a slow store
// call, or the process stopped) and every other transport error are
// other errors, so that no command writes behind a running daemon. Such a
// request may still be carried out later by the daemon.
func apiCall(s *app.Settings, method, path string, out any) error {
	addr := s.Get("http_addr")
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
	if err != nil {
		return fmt.Errorf("request to %s: %w", addr, err)
	}
	if tok := s.Get("api_token"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return transportError(addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return transportError(addr, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%s %s: %s: %s; pass --api-token or set NOMARR_API_TOKEN", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, e.Error)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			return fmt.Errorf("%s %s: reading the daemon's answer: %w", method, path, err)
		}
	}
	return nil
}

// transportError says what a failed exchange with the daemon at addr
// means: nobody listens (errNoDaemon), the daemon did not answer in time,
// or something else went wrong on the way.
func transportError(addr string, err error) error {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w listens on %s (is `nomarr serve` running?): %w", errNoDaemon, addr, err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("the nomarr daemon at %s did not answer within %s (busy, or its store slow or down?); "+
			"nothing was done in its place, and the request may still be carried out: see its log, and try again", addr, apiTimeout)
	}
	return fmt.Errorf("talking to the nomarr daemon at %s: %w; nothing was done in its place", addr, err)
}

package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
)

// runServe implements `nomarr serve` (app.Serve): it exits 0 after a
// stop by SIGINT or SIGTERM, graceful or forced; 1 when the daemon could
// not start (http_addr cannot be bound, a store of the wrong kind, its node
// name in use) or failed; 2 on invalid usage or configuration.
func runServe(args []string, stdout, stderr io.Writer) int {
	s, _, log, code, ok := startCommand("serve", args, 0, stdout, stderr)
	if !ok {
		return code
	}
	if err := app.Serve(s, log, buildVersion()); err != nil {
		fmt.Fprintln(stderr, "nomarr serve:", err)
		var ce *app.ConfigError
		if errors.As(err, &ce) {
			return exitUsage
		}
		return 1
	}
	return 0
}

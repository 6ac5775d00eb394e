package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
)

// runNavidromeConfig implements `nomarr navidrome-config`: it prints the
// Tags section of navidrome.toml that shows every nom key in Navidrome.
func runNavidromeConfig(args []string, stdout, stderr io.Writer) int {
	const name = "navidrome-config"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	_, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return usageError(stderr, name)
	}
	if err := app.WriteNavidromeConfig(stdout); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	return 0
}

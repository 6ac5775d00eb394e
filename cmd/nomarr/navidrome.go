package main

import (
	"io"

	"github.com/nomarr/nomarr/app"
)

// runNavidromeConfig implements `nomarr navidrome-config`: it prints the
// Tags section of navidrome.toml that shows every nom key in Navidrome.
func runNavidromeConfig(args []string, stdout, stderr io.Writer) int {
	const name = "navidrome-config"
	if _, code, ok := noArgCommand(name, args, stdout, stderr); !ok {
		return code
	}
	if err := app.WriteNavidromeConfig(stdout); err != nil {
		return fail(stderr, name, err)
	}
	return 0
}

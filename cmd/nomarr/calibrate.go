package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
)

// runCalibrate implements `nomarr calibrate`: it computes the library's
// calibration from the stored scores of this host's model set, stores it
// and prints each class's distribution.
func runCalibrate(args []string, stdout, stderr io.Writer) int {
	const name = "calibrate"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	s, rest, code, ok := commandSettings(name, fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if len(rest) != 0 {
		return usageError(stderr, name)
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	defer st.Close()
	if _, err := app.Calibrate(context.Background(), st, app.ModelSetVersion(s), stdout); err != nil {
		fmt.Fprintf(stderr, "nomarr %s: %v\n", name, err)
		return 1
	}
	if s.Get("calibration") != "library" {
		fmt.Fprintln(stdout, "calibration is none: set calibration: library to use it.")
	}
	return 0
}

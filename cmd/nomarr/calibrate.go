package main

import (
	"context"
	"fmt"
	"io"

	"github.com/nomarr/nomarr/app"
)

// runCalibrate implements `nomarr calibrate`: it computes the library's
// calibration from the stored scores of this host's model set, stores it
// and prints each class's distribution.
func runCalibrate(args []string, stdout, stderr io.Writer) int {
	const name = "calibrate"
	s, code, ok := noArgCommand(name, args, stdout, stderr)
	if !ok {
		return code
	}
	st, err := app.OpenExisting(s)
	if err != nil {
		return fail(stderr, name, err)
	}
	defer st.Close()
	if _, err := app.Calibrate(context.Background(), st, app.ModelSetVersion(s), stdout); err != nil {
		return fail(stderr, name, err)
	}
	if s.Get("calibration") != "library" {
		fmt.Fprintln(stdout, "calibration is none: set calibration: library to use it.")
	}
	return 0
}

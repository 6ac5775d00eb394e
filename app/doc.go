// Package app is the application layer: it composes the core, the
// adapters and the driver into the runs of the nomarr binary. It resolves
// the settings (defaults, config.yaml, NOMARR_* variables, flags), opens
// the store, scans the library, keeps this host's model-set record, runs
// `tag` (Tag) and `serve` (Serve) with their background services under one
// supervisor (app/service), and handles their stop signals. It prints
// nothing a person reads: the command (cmd/nomarr) parses the flags and
// prints what a run reports (TagView, TagEnd, the errors), and a test
// drives a run without the command line.
//
// The application does not import the simulator: the drills' script
// analyzer is passed in (WorkerArgs.Script).
package app

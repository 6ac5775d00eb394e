// Command nomarr is the one production binary: the one-shot tagger (tag),
// the daemon (serve), the admin commands (status, workers, scan, models, …), the
// deterministic simulator (sim), and two hidden subcommands: worker (a
// worker process, started by a main process) and drill (a scenario played
// with real processes, for the real-process tests).
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// command is one user-facing subcommand: its synopsis and one-line summary
// for `nomarr help`, and the text of `nomarr CMD --help`.
type command struct {
	name, synopsis, summary, about string
}

// commands are listed by `nomarr help` in this order.
var commands = []command{
	{"tag", "tag DIR [--workers N] [--db sqlite:PATH] [--analyzer noop]",
		"tags every pending file in the store; DIR is scanned first",
		"Scans DIR into the store, then tags every pending file of the store (DIR's and\n" +
			"those of earlier scans) with `workers` worker processes, and prints a summary.\n" +
			"Exit 0 when all is tagged; 1 when files failed or are left (run it again to go\n" +
			"on); 2 on invalid usage or configuration; 130 or 143 when interrupted\n" +
			"(SIGINT, SIGTERM).\n"},
	{"serve", "serve [--library-root DIR] [--http-addr 127.0.0.1:8356] [--api-token TOKEN]",
		"daemon: scan and rescan, workers, health monitor, HTTP API and dashboard",
		"Runs until SIGINT or SIGTERM, then stops gracefully. Scans library_root at start\n" +
			"and every rescan_interval. api_token is required unless http_addr is a loopback\n" +
			"address; when set, pause, resume and reset need it (Authorization: Bearer\n" +
			"TOKEN), and so does every request from another host.\n"},
	{"status", "status [--json]",
		"the daemon's workers, the library counts and the hosts' model sets",
		"Asks the daemon at http_addr; with no daemon running, shows the store's counts.\n" +
			"Then the model set each host sharing the store recorded, and, when they differ,\n" +
			"which host holds this one's re-tagging back and until when (see `nomarr models`).\n" +
			"Exit 1 when the store cannot be read, when the daemon's store writes are failing,\n" +
			"when a worker failed (it stays down until `nomarr workers reset`), or when the\n" +
			"daemon's clock is dangerously off the store server's (sync the hosts with NTP).\n"},
	{"workers", "workers pause|resume|reset [ID]",
		"pause or resume every worker sharing the store; reset a failed worker",
		"Goes through the daemon at http_addr when one answers, else straight to the\n" +
			"store. reset without ID resets every failed worker of this node.\n"},
	{"scan", "scan DIR",
		"add DIR's audio files to the library",
		"Adds DIR's audio files to the store and marks the known files under DIR that\n" +
			"are gone as missing. Tags nothing. Prints the files found, by what they were\n" +
			"to the store (new, changed, back from missing, unchanged), and the known files\n" +
			"marked missing.\n"},
	{"failed", "failed [DIR] [--json | -0]",
		"list the failed files (under DIR) with the reason each failed",
		"Prints one line per failed file: its path, a tab, its last error. A path or\n" +
			"error holding a character that does not print (a newline, a tab, an escape)\n" +
			"or bytes that are not UTF-8, or beginning with \", is printed quoted as Go\n" +
			"quotes a string (\"a\\nb.mp3\"). --json prints one JSON object per file and\n" +
			"line; -0 the raw paths only, each followed by a NUL byte (for xargs -0).\n" +
			"Reads the store only.\n"},
	{"retry", "retry [DIR]",
		"send the failed files (under DIR) back to work",
		"A failed file stays failed until its content changes. Once its cause is fixed\n" +
			"(a permission, a missing codec), retry clears its failure, attempts and crash\n" +
			"count (a quarantined file too); `nomarr tag` or a running `nomarr serve` then\n" +
			"tags it.\n"},
	{"missing", "missing [DIR] [--json | -0]",
		"list the files (under DIR) the store keeps that are no longer on disk",
		"A file a scan no longer finds is kept in the store, not valid, with its tagging\n" +
			"state and tags, so that a library on a drive that was not mounted does not\n" +
			"lose them. Prints the path of each such file still absent, quoted as `failed`\n" +
			"quotes it; --json and -0 as for `failed`. Reads the store only.\n"},
	{"forget", "forget [DIR]",
		"delete the files (under DIR) no longer on disk from the store",
		"For files that left the library for good (moved, renamed, deleted): the store\n" +
			"forgets each file `nomarr missing` lists, with its stored tags. A file that a\n" +
			"scan found again meanwhile is kept. If one comes back later, it is a new file\n" +
			"(when it still holds this model set's tags, reuse_file_tags takes them).\n"},
	{"models", "models [forget NODE]",
		"the model set each host sharing the store tags with; forget a host's record",
		"Lists the model set each host sharing the store recorded (serve and tag record\n" +
			"their host's at each scan and every 30 min), how long ago, and whether the\n" +
			"re-tagging of files tagged by other models is held back: it is while the records\n" +
			"of the last 2 h name more than one model set. forget NODE deletes NODE's record,\n" +
			"for a host gone with other models (it would hold the others back for 2 h); a\n" +
			"host that still runs records its own again within 30 min. Reads and writes the\n" +
			"store, daemon or not. Exit 1 when NODE has no record.\n"},
	{"similar", "similar FILE [-n 20] [--json | --m3u]",
		"the tracks that sound closest to FILE",
		"Lists the n tracks whose track vectors (of this host's model set) are closest\n" +
			"to FILE's, best first, with their cosine score; --json as one object a line,\n" +
			"--m3u as an M3U8 playlist. Reads the store only. Exit 1 when FILE is not a\n" +
			"file of the store or has no track vector yet.\n"},
	{"mix", "mix SEED... [-n 30] [--out FILE.m3u8]",
		"a playlist that starts from the seeds and stays close to them",
		"Opens with the seeds and adds tracks close to them but not to each other: no\n" +
			"near-duplicate (another file of the same recording), at most 2 tracks of one\n" +
			"artist and 3 of one album in a row, artist and album taken from the folder\n" +
			"layout (ARTIST/ALBUM/FILE). Lists the paths, or writes an M3U8 playlist.\n"},
	{"path", "path A B [-n 15] [--out FILE.m3u8]",
		"a playlist that moves from A to B in even steps",
		"Places n-2 waypoints evenly between A's and B's track vectors and takes for\n" +
			"each the closest unused track, with mix's rules. Lists the paths, or writes\n" +
			"an M3U8 playlist.\n"},
	{"playlists", "playlists --out DIR [--rules FILE]",
		"M3U8 and Navidrome smart playlists per mood label and per rule",
		"Writes in DIR, for each label of the regular mood tier in the stored tags and\n" +
			"for each rule of FILE (a YAML list: name, mood, tier, genre, score, min, max),\n" +
			"NAME.m3u8 (paths relative to DIR) and NAME.nsp, a Navidrome smart playlist\n" +
			"selecting the same tracks through the custom tags (docs/commands.md). Running\n" +
			"it again replaces them and deletes those no longer written; a file it did not\n" +
			"write (not in DIR/.nomarr-playlists) is never touched. Reads the store only.\n"},
	{"calibrate", "calibrate [--db sqlite:PATH]",
		"scale the mood scores by the library's: compute and store the calibration",
		"Reads the class scores the store keeps for every file tagged by this host's model\n" +
			"set (at least 20), computes each class's 5th and 95th percentiles, stores them\n" +
			"and prints each class's distribution. With calibration: library, tag and serve\n" +
			"then scale each mood score so that the library's 5th percentile counts as 0 and\n" +
			"its 95th as 1 before the mood thresholds apply; the files' nom:derived names the\n" +
			"calibration. Exit 1 when the store cannot be read or holds too few files.\n"},
	{"retag", "retag [DIR] [--all]",
		"write the tags again from the stored scores, without the models",
		"After a change of mood_thresholds, calibration (`nomarr calibrate`), top_tags_max\n" +
			"or, with --all, standard_tags, mood_tier or write_mode: marks the tagged files\n" +
			"(under DIR) whose stored tags this configuration would change (every one with\n" +
			"--all) and rewrites their tags from the scores the store keeps, with worker\n" +
			"processes that neither decode nor load a model. A file changed since it was\n" +
			"tagged goes back to a full analysis. With a daemon running on this node, marks\n" +
			"them for its workers. Exit 1 when files are left, the workers failed or paused.\n"},
	{"navidrome-config", "navidrome-config [--config FILE]",
		"print the Tags section of navidrome.toml for every tag Nomarr writes",
		"Prints a custom tag for each nom key, with the names Navidrome reads it under in\n" +
			"every format (scores as floats, lists split on \"; \"), to add to navidrome.toml\n" +
			"before a full scan. MOOD and GENRE need none (docs/media-servers.md).\n"},
	{"sim", "sim SCENARIO [--seed N] [--json] [--no-check]",
		"run a scenario in the deterministic simulator",
		"Prints the JSONL trace (with --json) and a summary. Exit 1 when an expectation\n" +
			"fails, 2 when the scenario is invalid.\n"},
}

// findCommand returns the command named name.
func findCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usage is the text of `nomarr help`.
var usage = func() string {
	var b strings.Builder
	b.WriteString("usage: nomarr <command> [arguments]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %s\n        %s\n", c.synopsis, c.summary)
	}
	b.WriteString("  help [COMMAND]\n        this text, or a command's flags and configuration keys with their defaults\n")
	b.WriteString("  version, --version\n        the build's version: its commit (+dirty when built from a changed tree), or dev\n\n")
	b.WriteString("configuration: flags (--key value) > NOMARR_<KEY> environment > config.yaml;\n" +
		"invalid configuration exits 2 with a message naming the key.\n")
	return b.String()
}()

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "sim":
		return runSim(args[1:], stdout, stderr)
	case "tag":
		return runTag(args[1:], stdout, stderr)
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "status":
		return runStatus(args[1:], stdout, stderr)
	case "workers":
		return runWorkers(args[1:], stdout, stderr)
	case "scan":
		return runScan(args[1:], stdout, stderr)
	case "failed":
		return runFailed(args[1:], stdout, stderr)
	case "retry":
		return runRetry(args[1:], stdout, stderr)
	case "missing":
		return runMissing(args[1:], stdout, stderr)
	case "forget":
		return runForget(args[1:], stdout, stderr)
	case "models":
		return runModels(args[1:], stdout, stderr)
	case "similar":
		return runSimilar(args[1:], stdout, stderr)
	case "mix":
		return runMix(args[1:], stdout, stderr)
	case "path":
		return runPath(args[1:], stdout, stderr)
	case "playlists":
		return runPlaylists(args[1:], stdout, stderr)
	case "calibrate":
		return runCalibrate(args[1:], stdout, stderr)
	case "retag":
		return runRetag(args[1:], stdout, stderr)
	case "navidrome-config":
		return runNavidromeConfig(args[1:], stdout, stderr)
	case "version", "--version", "-version":
		return runVersion(args[1:], stdout, stderr)
	case "worker": // hidden: started by a main process
		return runWorker(args[1:], stderr)
	case "drill": // hidden: real-process playback of a scenario
		return runDrill(args[1:], stdout, stderr)
	case "help", "-h", "--help", "-help":
		switch {
		case len(args) == 1:
			fmt.Fprint(stdout, usage)
			return 0
		case len(args) > 2:
			fmt.Fprintln(stderr, "usage: nomarr help [COMMAND]")
			return exitUsage
		}
		if args[1] == "help" {
			fmt.Fprint(stdout, usage)
			return 0
		}
		if _, ok := findCommand(args[1]); !ok && args[1] != "version" {
			fmt.Fprintf(stderr, "nomarr help: unknown command %q; run `nomarr help`\n", args[1])
			return exitUsage
		}
		return run([]string{args[1], "--help"}, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "nomarr: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

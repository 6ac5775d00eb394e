package audio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nomarr/nomarr/core/worker"
)

// ioErrors are the errno texts (glibc) of the I/O errors ffmpeg may print
// while it reads a file from a storage or network file system in trouble.
var ioErrors = []string{"Input/output error", "Stale file handle", "Connection timed out",
	"Transport endpoint is not connected", "Host is down", "No route to host",
	"No such device or address", "No such device"}

// TestFFmpegReadErrorsAreTransient guards that an I/O error ffmpeg reports
// while it opens or reads the file (a NAS hiccup) is Transient, as
// checkFile classes the same errors at its own stat and open, not
// Permanent "not audio" or "corrupt": ffmpeg 5.x reports a failed read as
// it reports a failed open ("<input>: Input/output error"), ffmpeg ≥ 6.1
// as "Error during demuxing" or "Error opening input". The stderr samples
// follow what ffmpeg 5.1 printed for reads failed with EIO, ESTALE and
// ETIMEDOUT (an LD_PRELOAD read(2) that fails), at the start and in the
// middle of an MP3 and a FLAC file.
func TestFFmpegReadErrorsAreTransient(t *testing.T) {
	const in = "file:/music/x.flac"
	for _, msg := range ioErrors {
		for _, stderr := range []string{
			in + ": " + msg + "\n",
			"[flac @ 0x55792e4a9b80] invalid residual\n[flac @ 0x55792e4a9b80] decode_frame() failed\n" +
				in + ": " + msg + "\n    Last message repeated 1 times\n" +
				"Error while decoding stream #0:0: Invalid data found when processing input\n",
			"[in#0/flac @ 0x5581] Error during demuxing: " + msg + "\n",
			"[in#0 @ 0x5581] Error opening input: " + msg + "\nError opening input file " + in +
				".\nError opening input files: " + msg + "\n",
		} {
			e := classifyExit(1, []byte(stderr), in, nil, exitChecks{})
			if e.Class != worker.Transient || !strings.HasPrefix(e.Reason, "file temporarily unreadable: ") ||
				!strings.Contains(e.Reason, msg) || e.Missing {
				t.Errorf("exit 1, %q: got %s %q, want transient, file temporarily unreadable: …%s", stderr, e.Class, e.Reason, msg)
			}
			if e := classifyCleanExit([]byte(stderr), in); e == nil || e.Class != worker.Transient {
				t.Errorf("exit 0, %q: got %v, want transient", stderr, e)
			}
		}
	}
	// Not read failures: a damaged file, and the phrases in a quoted name or
	// in the file's own path.
	for _, stderr := range []string{
		"[flac @ 0x1] invalid residual\nError while decoding stream #0:0: Invalid data found when processing input\n",
		"[concat @ 0x2] Impossible to open 'Host is down.mp3'\n",
		"[mp3 @ 0x3] Skipping 0 bytes of junk at 1234.\n",
		"",
	} {
		if e := classifyCleanExit([]byte(stderr), in); e != nil {
			t.Errorf("exit 0, %q: got %v, want nil", stderr, e)
		}
	}
	trap := "file:/music/Host is down/Stale file handle.flac"
	if e := classifyCleanExit([]byte("[flac @ 0x1] invalid residual in "+trap+"\n"), trap); e != nil {
		t.Errorf("the file's path drove the class: %v", e)
	}
}

// TestReadFailureMidFileIsNotSuccess guards against taking a decode cut
// short by a failed read for the whole file: ffmpeg 5.1 prints the read
// error and exits 0 with the audio decoded up to it (checked with an
// LD_PRELOAD read(2) failing with EIO in the middle of a 20 s MP3: 16 s of
// audio, exit status 0). Decode must fail Transient instead; a good file in
// a folder named like an I/O error still decodes.
func TestReadFailureMidFileIsNotSuccess(t *testing.T) {
	fake := script(t, `while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
head -c 1920000 /dev/zero # 30 s
echo "$in: Input/output error" >&2
exit 0`)
	_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: fake})
	if e := asError(t, err, worker.Transient); e.Reason != "file temporarily unreadable: Input/output error" {
		t.Errorf("reason %q", e.Reason)
	}

	requireFFmpeg(t)
	flac, err := os.ReadFile(filepath.Join(library(t), "good", "speech.flac"))
	if err != nil {
		t.Fatal(err)
	}
	if x, err := Decode(context.Background(), fileIn(t, "Host is down", "Stale file handle.flac", flac), Options{}); err != nil || len(x) == 0 {
		t.Errorf("good file in a folder named like an I/O error: %d samples, %v", len(x), err)
	}
}

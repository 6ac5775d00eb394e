package audio

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/worker"
)

// longFile generates a 20 s FLAC tone with ffmpeg.
func longFile(t *testing.T) string {
	t.Helper()
	requireFFmpeg(t)
	path := filepath.Join(t.TempDir(), "long.flac")
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi",
		"-i", "sine=frequency=440:duration=20", "-ar", "44100", path).CombinedOutput()
	if err != nil {
		t.Fatalf("generate %s: %v\n%s", path, err, out)
	}
	return path
}

// A stop (systemctl stop, a shutdown) sends SIGTERM to every process of the
// service, ffmpeg included, which then exits 255 with nothing on stderr:
// the decode is interrupted, not a verdict on the file.
func TestStopSignalMidDecodeIsInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			file := longFile(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			// Real ffmpeg, slowed to real time by -re: a 20 s decode.
			fake := script(t, fmt.Sprintf("echo $$ > %s\nexec ffmpeg -re \"$@\"", pidFile))
			done := make(chan error, 1)
			go func() {
				_, err := Decode(context.Background(), file, Options{FFmpeg: fake})
				done <- err
			}()
			pid := readPIDs(t, pidFile, 1)[0]
			time.Sleep(500 * time.Millisecond)
			if !alive(pid) {
				t.Fatal("ffmpeg -re finished a 20 s file in 500 ms")
			}
			if err := syscall.Kill(pid, sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				e := asError(t, err, worker.ServiceDown)
				if !e.Interrupted || !strings.HasPrefix(e.Reason, "decode interrupted: ") || e.Dependency() != worker.DepDecoder {
					t.Errorf("got %v (interrupted %v)", e, e.Interrupted)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Decode did not return 10 s after the signal")
			}
		})
	}
}

func TestSignalExitClasses(t *testing.T) {
	for _, c := range []struct {
		body        string
		class       worker.Class
		interrupted bool
		reason      string
	}{
		{"kill -TERM $$", worker.ServiceDown, true, "decode interrupted: ffmpeg stopped by signal: terminated"},
		{"kill -HUP $$", worker.ServiceDown, true, "decode interrupted: ffmpeg stopped by signal: hangup"},
		{"kill -KILL $$", worker.Transient, false, "ffmpeg killed by signal: killed"},
		{"kill -ABRT $$", worker.Transient, false, "ffmpeg killed by signal: aborted"},
		{"exit 255", worker.ServiceDown, true,
			"decode interrupted: ffmpeg exited 255 without a diagnostic (its exit after a stop signal)"},
		{"echo 'Exiting normally, received signal 15.' >&2; exit 255", worker.ServiceDown, true,
			"decode interrupted: ffmpeg exited after a stop signal: Exiting normally, received signal 15."},
		{"echo 'Error while decoding stream #0:0: Invalid data found when processing input' >&2; exit 255",
			worker.Transient, false,
			"ffmpeg exit status 255 (a stop signal, or: Error while decoding stream #0:0: Invalid data found when processing input)"},
		{"exit 254", worker.Permanent, false, "corrupt: ffmpeg exit status 254"},
	} {
		_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: script(t, c.body)})
		e := asError(t, err, c.class)
		if e.Reason != c.reason || e.Interrupted != c.interrupted {
			t.Errorf("%s: got %q (interrupted %v), want %q (interrupted %v)", c.body, e.Reason, e.Interrupted, c.reason, c.interrupted)
		}
	}
}

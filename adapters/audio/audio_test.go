package audio

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nomarr/nomarr/core/worker"
	"github.com/nomarr/nomarr/internal/unprivileged"
)

// The test library comes from scripts/testaudio.sh (sox, espeak-ng, ffmpeg),
// generated once per test binary. Missing tools fail the tests: the decoder
// is part of the product, so its tests must not silently skip.
var (
	libOnce sync.Once
	libDir  string
	libErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if libDir != "" {
		os.RemoveAll(libDir)
	}
	os.Exit(code)
}

const depsHint = "run scripts/deps.sh (as root or with sudo) to install ffmpeg, sox and espeak-ng"

func requireFFmpeg(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		tb.Fatalf("ffmpeg is not installed: %s", depsHint)
	}
}

// library returns the directory of the generated test library (good/, bad/).
func library(tb testing.TB) string {
	tb.Helper()
	libOnce.Do(func() {
		for _, tool := range []string{"ffmpeg", "sox", "espeak-ng", "bash"} {
			if _, err := exec.LookPath(tool); err != nil {
				libErr = fmt.Errorf("%s is not installed: %s", tool, depsHint)
				return
			}
		}
		dir, err := os.MkdirTemp("", "nomarr-audio-test-")
		if err != nil {
			libErr = err
			return
		}
		libDir = dir
		start := time.Now()
		out, err := exec.Command("bash", "../../scripts/testaudio.sh", dir).CombinedOutput()
		if err != nil {
			libErr = fmt.Errorf("scripts/testaudio.sh: %v\n%s", err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "test library generated in %v\n", time.Since(start).Round(time.Millisecond))
	})
	if libErr != nil {
		tb.Fatal(libErr)
	}
	return libDir
}

var (
	sources = []string{"speech", "chord", "noise", "silence", "mix"}
	formats = []string{"mp3", "flac", "ogg", "opus", "m4a"}
)

func rms(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s / float64(len(x)))
}

func peak(x []float32) float64 {
	var p float64
	for _, v := range x {
		p = max(p, math.Abs(float64(v)))
	}
	return p
}

// asError asserts err is an *Error of class want.
func asError(t *testing.T, err error, want worker.Class) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want class %q", want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *audio.Error", err, err)
	}
	if e.Class != want {
		t.Fatalf("class %q (reason %q, err %v), want %q", e.Class, e.Reason, e.Err, want)
	}
	if e.Reason == "" {
		t.Fatalf("empty reason: %v", e)
	}
	return e
}

func TestDecodeGoodFiles(t *testing.T) {
	dir := library(t)
	const want = 6 * SampleRate
	for _, src := range sources {
		for _, ext := range formats {
			name := src + "." + ext
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				x, err := Decode(context.Background(), filepath.Join(dir, "good", name), Options{})
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(float64(len(x)-want)) / want; d > 0.02 {
					t.Errorf("%d samples, want %d ± 2%%", len(x), want)
				}
				r := rms(x)
				if src == "silence" {
					if r > 1e-4 {
						t.Errorf("silence has RMS %g", r)
					}
				} else if r < 0.01 {
					t.Errorf("RMS %g, want > 0.01 (not silent)", r)
				}
				if p := peak(x); p > 1.1 {
					t.Errorf("peak %g: the downmix is not an average", p)
				}
			})
		}
	}
}

// The downmix is (L+R)/2 as in Essentia's MonoLoader: the chord is
// identical in both channels with a peak of -3 dBFS (0.708), so it keeps
// that peak; ffmpeg's default downmix would give 1.0.
func TestDownmixIsAverage(t *testing.T) {
	x, err := Decode(context.Background(), filepath.Join(library(t), "good", "chord.flac"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak(x); p < 0.68 || p > 0.73 {
		t.Errorf("peak %.3f, want 0.708 (average of the channels)", p)
	}
}

func TestDecodeBadFiles(t *testing.T) {
	dir := library(t)
	notRegular := t.TempDir()
	cases := []struct {
		name   string
		path   string
		prefix string // of the reason
	}{
		{"text renamed mp3", filepath.Join(dir, "bad", "notaudio.mp3"), "not audio: "},
		{"no audio stream", filepath.Join(dir, "bad", "noaudio.mkv"), "not audio: Stream map 'a:0' matches no streams"},
		{"truncated mp3", filepath.Join(dir, "bad", "truncated.mp3"), "too short: 0.1 s"},
		{"empty file", filepath.Join(dir, "bad", "empty.flac"), "empty"},
		{"0.5 s clip", filepath.Join(dir, "bad", "short.flac"), "too short: 0.5 s"},
		{"missing", filepath.Join(dir, "bad", "nonexistent.flac"), "missing"},
		{"missing dir", filepath.Join(dir, "nodir", "x.flac"), "missing"},
		{"file as dir", filepath.Join(dir, "good", "speech.flac", "x.flac"), "missing"}, // ENOTDIR
		{"directory", notRegular, "unreadable: not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(context.Background(), c.path, Options{})
			e := asError(t, err, worker.Permanent)
			if !strings.HasPrefix(e.Reason, c.prefix) {
				t.Errorf("reason %q, want prefix %q", e.Reason, c.prefix)
			}
			if e.Missing != (c.prefix == "missing") {
				t.Errorf("Missing = %v for reason %q", e.Missing, e.Reason)
			}
			if strings.Contains(e.Reason, " @ 0x") || strings.Contains(e.Reason, "file:/") {
				t.Errorf("reason %q quotes an address or the path", e.Reason)
			}
			t.Logf("%v", e)
		})
	}
}

func TestGarbageIsPermanentInEveryFormat(t *testing.T) {
	requireFFmpeg(t)
	dir := t.TempDir()
	junk := bytes.Repeat([]byte("not audio at all \x00\xff\x13\x37"), 300)
	for _, ext := range append(formats, "wav", "aiff", "wma", "bin") {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, "junk."+ext)
			if err := os.WriteFile(p, junk, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Decode(context.Background(), p, Options{})
			e := asError(t, err, worker.Permanent)
			t.Logf("%s: %s", ext, e.Reason)
		})
	}
}

func TestUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 { // root reads a mode-000 file anyway
		unprivileged.Rerun(t, "^TestUnreadableFile$")
		return
	}
	p := filepath.Join(t.TempDir(), "locked.flac")
	if err := os.WriteFile(p, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := Decode(context.Background(), p, Options{})
	if e := asError(t, err, worker.Permanent); e.Reason != "unreadable" {
		t.Errorf("reason %q, want unreadable", e.Reason)
	}
}

func TestFileErrorClasses(t *testing.T) {
	for _, c := range []struct {
		err    error
		class  worker.Class
		reason string
	}{
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, worker.Permanent, "missing"},
		{&fs.PathError{Op: "stat", Path: "x", Err: syscall.ENOTDIR}, worker.Permanent, "missing"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, worker.Permanent, "unreadable"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EPERM}, worker.Permanent, "unreadable"},
		{&fs.PathError{Op: "stat", Path: "x", Err: syscall.ESTALE}, worker.Transient, "file temporarily unreadable"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EIO}, worker.Transient, "file temporarily unreadable"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENXIO}, worker.Transient, "file temporarily unreadable"},
		{&fs.PathError{Op: "stat", Path: "x", Err: syscall.ENODEV}, worker.Transient, "file temporarily unreadable"},
	} {
		var e *Error
		if !errors.As(fileError(c.err), &e) || e.Class != c.class || e.Reason != c.reason || e.Missing != (c.reason == "missing") {
			t.Errorf("%v: got %+v, want %s %q", c.err, e, c.class, c.reason)
		}
		if !errors.Is(e, c.err) {
			t.Errorf("%v does not wrap %v", e, c.err)
		}
	}
}

func TestFFmpegMissing(t *testing.T) {
	dir := library(t)
	good := filepath.Join(dir, "good", "speech.flac")
	check := func(t *testing.T, err error) {
		t.Helper()
		e := asError(t, err, worker.ServiceDown)
		if e.Dependency() != worker.DepDecoder {
			t.Errorf("dependency %q, want %q", e.Dependency(), worker.DepDecoder)
		}
		if !strings.Contains(e.Reason, "install ffmpeg") {
			t.Errorf("reason %q does not say to install ffmpeg", e.Reason)
		}
	}
	t.Run("path", func(t *testing.T) {
		_, err := Decode(context.Background(), good, Options{FFmpeg: "/nonexistent/ffmpeg"})
		check(t, err)
		check(t, Available("/nonexistent/ffmpeg"))
	})
	t.Run("not in PATH", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		_, err := Decode(context.Background(), good, Options{Decoder: DecoderFFmpeg})
		check(t, err)
		check(t, Available(""))
	})
	t.Run("not executable", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "ffmpeg")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Decode(context.Background(), good, Options{FFmpeg: p})
		check(t, err)
	})
}

func TestAvailable(t *testing.T) {
	requireFFmpeg(t)
	start := time.Now()
	if err := Available(""); err != nil {
		t.Fatal(err)
	}
	t.Logf("Available took %v", time.Since(start))
	// An "ffmpeg" that runs but decodes nothing is no decoder.
	fake := script(t, "exit 0")
	e := asError(t, Available(fake), worker.ServiceDown)
	if e.Dependency() != worker.DepDecoder {
		t.Errorf("dependency %q", e.Dependency())
	}
}

// script writes an executable shell script (a fake ffmpeg) and returns its
// path.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-ffmpeg")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// anyFile is a non-empty regular file for fake-ffmpeg tests (the file
// checks run before ffmpeg).
func anyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.flac")
	if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readPIDs reads the pids a fake ffmpeg wrote, one per line, waiting for
// the file to appear.
func readPIDs(t *testing.T, path string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		var pids []int
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d pids after 5 s, want %d", path, len(pids), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: best effort
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// assertGone fails unless every pid is dead within a second (SIGKILL is
// asynchronous for a grandchild).
func assertGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("process %d outlived Decode", pid)
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestTimeout(t *testing.T) {
	dir := library(t)
	t.Run("1ns", func(t *testing.T) {
		_, err := Decode(context.Background(), filepath.Join(dir, "good", "speech.flac"), Options{Timeout: time.Nanosecond})
		e := asError(t, err, worker.Transient)
		if e.Reason != "decode timed out after 1ns" || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v", e)
		}
	})
	t.Run("hung ffmpeg and its child", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pids")
		// A shell that waits on a child: the child holds the output pipe
		// open, so only a process-group kill ends it.
		fake := script(t, fmt.Sprintf("echo $$ >> %s\nsleep 60 &\necho $! >> %[1]s\nwait", pidFile))
		start := time.Now()
		_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: fake, Timeout: 300 * time.Millisecond})
		took := time.Since(start)
		e := asError(t, err, worker.Transient)
		if !strings.HasPrefix(e.Reason, "decode timed out after 300ms") {
			t.Errorf("reason %q", e.Reason)
		}
		if took > 300*time.Millisecond+waitDelay {
			t.Errorf("Decode took %v after a 300 ms timeout", took)
		}
		assertGone(t, readPIDs(t, pidFile, 2)...)
	})
}

func TestCancelKillsFFmpeg(t *testing.T) {
	dir := library(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	// Real ffmpeg, slowed to real time by -re: a 6 s decode.
	fake := script(t, fmt.Sprintf("echo $$ > %s\nexec ffmpeg -re \"$@\"", pidFile))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Decode(ctx, filepath.Join(dir, "good", "speech.flac"), Options{FFmpeg: fake})
		done <- err
	}()
	pid := readPIDs(t, pidFile, 1)[0]
	time.Sleep(300 * time.Millisecond)
	if !alive(pid) {
		t.Fatal("ffmpeg -re finished a 6 s file in 300 ms")
	}
	cancel()
	select {
	case err := <-done:
		e := asError(t, err, worker.ServiceDown)
		if e.Reason != "decode interrupted: canceled" || !e.Interrupted || !errors.Is(err, context.Canceled) {
			t.Errorf("got %v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Decode did not return 5 s after cancel")
	}
	assertGone(t, pid)
}

func TestKilledBySignalIsTransient(t *testing.T) {
	_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: script(t, "kill -SEGV $$")})
	e := asError(t, err, worker.Transient)
	if e.Reason != "ffmpeg killed by signal: segmentation fault" {
		t.Errorf("reason %q", e.Reason)
	}
}

func TestExitClassesFromFakeFFmpeg(t *testing.T) {
	for _, c := range []struct {
		body   string
		class  worker.Class
		reason string
	}{
		{`echo "[mp3 @ 0x55d0c0a1b2c0] Failed to read frame size: Could not seek to 1091." >&2
		  while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
		  echo "$in: Invalid argument" >&2; exit 1`,
			worker.Permanent, "not audio: Failed to read frame size: Could not seek to 1091."},
		// Only the open failure ("<input>: ...") says it is not audio.
		{`while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
		  echo "$in: Operation not permitted" >&2; exit 1`,
			worker.Permanent, "not audio: Operation not permitted"},
		{`echo "boom" >&2; exit 3`, worker.Permanent, "corrupt: boom"},
		{`exit 1`, worker.Permanent, "corrupt: ffmpeg exit status 1"},
		{`echo "Cannot allocate memory" >&2; exit 1`, worker.Transient, "ffmpeg out of resources: Cannot allocate memory"},
		{`echo "ffmpeg: error while loading shared libraries: libavcodec.so.59" >&2; exit 127`,
			worker.ServiceDown, "ffmpeg is broken: ffmpeg: error while loading shared libraries: libavcodec.so.59"},
		{`echo "Unrecognized option 'rematrix_maxval'." >&2; exit 1`,
			worker.ServiceDown, "ffmpeg is broken: Unrecognized option 'rematrix_maxval'."},
		{`exit 0`, worker.Permanent, "empty"},
		// More stderr than the limit: ffmpeg is never blocked on it.
		{`head -c 1000000 /dev/zero | tr '\0' x >&2; echo >&2; exit 1`, worker.Permanent, "corrupt: xxx"},
	} {
		// The script is written before any subtest runs: a child forked
		// while another subtest still held it open for writing would fail
		// to exec it ("text file busy").
		ffmpeg := script(t, c.body)
		t.Run(c.reason, func(t *testing.T) {
			t.Parallel()
			_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: ffmpeg})
			e := asError(t, err, c.class)
			if !strings.HasPrefix(e.Reason, c.reason) {
				t.Errorf("reason %q, want %q", e.Reason, c.reason)
			}
			if len(e.Reason) > maxReasonLine+50 {
				t.Errorf("reason of %d bytes", len(e.Reason))
			}
			if c.class == worker.ServiceDown && e.Dependency() != worker.DepDecoder {
				t.Errorf("dependency %q", e.Dependency())
			}
		})
	}
}

func TestClassifyExitRealMessages(t *testing.T) {
	const in = "file:/music/x.flac"
	for _, c := range []struct {
		stderr string
		class  worker.Class
		reason string
	}{
		{in + ": Invalid data found when processing input\n", worker.Permanent,
			"not audio: Invalid data found when processing input"},
		{"[mov,mp4,m4a,3gp,3g2,mj2 @ 0x564862519a80] moov atom not found\n" + in + ": Invalid data found when processing input\n",
			worker.Permanent, "not audio: moov atom not found"},
		{in + ": End of file\n", worker.Permanent, "not audio: End of file"},
		{"Cannot determine format of input stream 0:0 after EOF\nError marking filters as finished\n", worker.Permanent,
			"not audio: Cannot determine format of input stream 0:0 after EOF"},
		{"Stream map 'a:0' matches no streams.\nTo ignore this, add a trailing '?' to the map.\n", worker.Permanent,
			"not audio: Stream map 'a:0' matches no streams."},
		{in + ": No such file or directory\n", worker.Permanent, "missing"},
		{in + ": Permission denied\n", worker.Permanent, "unreadable: Permission denied"},
		{"[flac @ 0x1] invalid residual\nError while decoding stream #0:0: Invalid data found when processing input\n",
			worker.Permanent, "corrupt: invalid residual"},
		{"Conversion failed!\n", worker.Permanent, "corrupt: Conversion failed!"},
	} {
		e := classifyExit(1, []byte(c.stderr), in, nil, exitChecks{})
		if e.Class != c.class || e.Reason != c.reason || e.Missing != (c.reason == "missing") {
			t.Errorf("%q: got %s %q, want %s %q", c.stderr, e.Class, e.Reason, c.class, c.reason)
		}
	}
}

// trapFolders are folder names that hold the phrases classifyExit looks
// for: a file's path must never decide its class.
var trapFolders = []string{"Protocol Not Found", "Out of Memory", "Unknown Encoder",
	"No such file or directory", "Permission denied", "Unrecognized option", "Host is down"}

// TestFilePathNeverDrivesClassification guards that the file's path, which
// ffmpeg quotes in its messages, never decides the class of a failed decode:
// ffmpeg ≥ 6.1 reports an input it cannot open as "Error opening input file
// file:/PATH.", ffmpeg 5.x as "file:/PATH: <error>" (a newline in the path
// splits it over lines), and a corrupt file in a folder named "Protocol Not
// Found" must stay Permanent, not become ServiceDown (never failed, opening
// the decoder breaker again and again) or, in "Out of Memory", Transient.
func TestFilePathNeverDrivesClassification(t *testing.T) {
	t.Run("ffmpeg 6.1 messages", func(t *testing.T) {
		fake := script(t, `while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
echo "[mp3 @ 0x55d0c0a1b2c0] Failed to read frame size: Could not seek to 1046." >&2
echo "[in#0 @ 0x55d0c0a1b2c0] Error opening input: Invalid argument" >&2
echo "Error opening input file $in." >&2
echo "Error opening input files: Invalid argument" >&2
exit 234`)
		for _, folder := range append(trapFolders, "Unknown Encoder\nDemos") {
			p := fileIn(t, folder, "01.mp3", []byte("not audio at all"))
			_, err := Decode(context.Background(), p, Options{FFmpeg: fake})
			e := asError(t, err, worker.Permanent)
			if want := "not audio: Failed to read frame size: Could not seek to 1046."; e.Reason != want || e.Missing {
				t.Errorf("%q: reason %q (missing %v), want %q", folder, e.Reason, e.Missing, want)
			}
		}
	})
	t.Run("installed ffmpeg", func(t *testing.T) {
		flac, err := os.ReadFile(filepath.Join(library(t), "good", "speech.flac"))
		if err != nil {
			t.Fatal(err)
		}
		junk := bytes.Repeat([]byte("not audio at all \x00\xff\x13\x37"), 300)
		for _, folder := range append(trapFolders, "Unknown Encoder\nDemos", "Out of Memory\n",
			"\nProtocol not found\n", "Out of Memory\x01\tx", "No such file or directory\r\nx") {
			for _, c := range []struct{ name, reason string }{
				{"junk.mp3", "not audio: "},
				{"junk.flac", "not audio: "},
				{"head.flac", "not audio: End of file"}, // cut inside the metadata
			} {
				data := junk
				if c.name == "head.flac" {
					data = flac[:100]
				}
				_, err := Decode(context.Background(), fileIn(t, folder, c.name, data), Options{})
				e := asError(t, err, worker.Permanent)
				if !strings.HasPrefix(e.Reason, c.reason) || e.Missing || strings.Contains(e.Reason, "<file>") {
					t.Errorf("%q/%s: reason %q (missing %v), want prefix %q", folder, c.name, e.Reason, e.Missing, c.reason)
				}
			}
		}
	})
	t.Run("real messages", func(t *testing.T) {
		// What ffmpeg 5.1 and ≥ 6.1 print for a file gone or unreadable
		// between checkFile and ffmpeg's open (checkFile catches both
		// before ffmpeg runs, so these come from a race).
		for _, folder := range append(trapFolders, "Unknown Encoder\nDemos", "Out of Memory\x01\tx") {
			in := "file:/music/" + folder + "/01 x.flac"
			printed := strings.ReplaceAll(in, "\x01", "?") // av_log's sanitizing
			for _, c := range []struct{ stderr, reason string }{
				{printed + ": No such file or directory\n", "missing"},
				{printed + ": Permission denied\n", "unreadable: Permission denied"},
				{printed + ": End of file\n", "not audio: End of file"},
				{"[mp3 @ 0x55ef03005a80] Failed to read frame size: Could not seek to 1040.\n" + printed + ": Invalid argument\n",
					"not audio: Failed to read frame size: Could not seek to 1040."},
				{"[in#0 @ 0x5581] Error opening input: No such file or directory\nError opening input file " + printed +
					".\nError opening input files: No such file or directory\n", "missing"},
				{"[in#0 @ 0x5581] Error opening input: Permission denied\nError opening input file " + printed +
					".\nError opening input files: Permission denied\n", "unreadable: Permission denied"},
				{"Error opening input file " + printed + ".\nError opening input files: Invalid data found when processing input\n",
					"not audio: Invalid data found when processing input"},
				// The stderr limit cut ffmpeg off inside the path.
				{"[flac @ 0x1] invalid residual\n[concat @ 0x2] Impossible to open '" + printed[:len(printed)-8],
					"corrupt: invalid residual"},
			} {
				e := classifyExit(1, []byte(c.stderr), in, nil, exitChecks{})
				if e.Class != worker.Permanent || e.Reason != c.reason || e.Missing != (c.reason == "missing") {
					t.Errorf("%q: got %s %q, want permanent %q", c.stderr, e.Class, e.Reason, c.reason)
				}
			}
		}
	})
}

// fileIn writes data to a file named name in a new folder named folder, and
// returns its path.
func fileIn(t *testing.T, folder, name string, data []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileTextIsNotAnOutage guards that what a file makes ffmpeg print
// cannot make the decoder look broken or the file look missing: a message
// that reads like a broken ffmpeg is ServiceDown only when the preflight
// fails too, quoted names (a concat list names other files) are not
// searched, and "No such file or directory" for a file still there is about
// another file.
func TestFileTextIsNotAnOutage(t *testing.T) {
	requireFFmpeg(t)
	// Fails like a broken ffmpeg on the files under "Album", decodes the
	// preflight's file.
	fake := func(msg string) string {
		return script(t, `while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
case "$in" in *Album*) { `+msg+`; } >&2; exit 1;; esac
exec ffmpeg -nostdin -hide_banner -v error -protocol_whitelist file -i "$in" -map a:0 -ac 1 -ar 16000 -rematrix_maxval 1 -f f32le -`)
	}
	for _, c := range []struct {
		msg    string
		reason string
	}{
		{`echo "Unrecognized option 'x'."; echo "Error splitting the argument list: Option not found"`,
			"corrupt: Unrecognized option 'x'."},
		{`echo "[concat @ 0x5576fd63b980] Unsafe file name 'Unknown encoder - Out of Memory.mp3'"; echo "$in: Operation not permitted"`,
			"not audio: Unsafe file name 'Unknown encoder - Out of Memory.mp3'"},
		{`echo "[concat @ 0x5576fd63b980] Impossible to open 'file:/x/Protocol not found.mp3'"; echo "$in: No such file or directory"`,
			"not audio: Impossible to open 'file:/x/Protocol not found.mp3'"},
		{`echo "$in: Protocol not found"`, "not audio: Protocol not found"},
	} {
		_, err := Decode(context.Background(), fileIn(t, "Album", "01.mp3", []byte("data")), Options{FFmpeg: fake(c.msg)})
		e := asError(t, err, worker.Permanent)
		if e.Reason != c.reason || e.Missing {
			t.Errorf("%s: reason %q (missing %v), want %q", c.msg, e.Reason, e.Missing, c.reason)
		}
	}
	// A file gone by the time ffmpeg opens it is still missing.
	gone := script(t, `while [ $# -gt 0 ]; do [ "$1" = -i ] && in=$2; shift; done
rm -f "${in#file:}"; echo "$in: No such file or directory" >&2; exit 1`)
	_, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: gone})
	if e := asError(t, err, worker.Permanent); e.Reason != "missing" || !e.Missing {
		t.Errorf("file removed under ffmpeg: %+v", e)
	}
}

func TestMaxSeconds(t *testing.T) {
	dir := library(t)
	t.Run("ffmpeg stops", func(t *testing.T) {
		x, err := Decode(context.Background(), filepath.Join(dir, "good", "speech.flac"), Options{MaxSeconds: 2, MinSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(x) != 2*SampleRate {
			t.Errorf("%d samples, want %d", len(x), 2*SampleRate)
		}
	})
	t.Run("endless output", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		fake := script(t, fmt.Sprintf("echo $$ > %s\nexec cat /dev/zero", pidFile))
		x, err := Decode(context.Background(), anyFile(t), Options{FFmpeg: fake, MaxSeconds: 20, MinSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(x) != 20*SampleRate {
			t.Errorf("%d samples, want %d", len(x), 20*SampleRate)
		}
		assertGone(t, readPIDs(t, pidFile, 1)...)
	})
}

func TestMinSeconds(t *testing.T) {
	short := filepath.Join(library(t), "bad", "short.flac")
	x, err := Decode(context.Background(), short, Options{MinSeconds: -1})
	if err != nil || len(x) != SampleRate/2 {
		t.Fatalf("MinSeconds -1: %d samples, %v; want %d", len(x), err, SampleRate/2)
	}
	x, err = Decode(context.Background(), short, Options{MinSeconds: 0.4})
	if err != nil || len(x) != SampleRate/2 {
		t.Fatalf("MinSeconds 0.4: %d samples, %v", len(x), err)
	}
}

func TestAwkwardFileNames(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(library(t), "good", "chord.ogg"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"-i.ogg", "http:evil.ogg", "concat:a|b.ogg", "a %d ?#[1].ogg", "ünï cödé ♫.ogg", "x.ogg,"} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, src, 0o644); err != nil {
			t.Fatal(err)
		}
		x, err := Decode(context.Background(), p, Options{})
		if err != nil || len(x) < 6*SampleRate*98/100 {
			t.Errorf("%q: %d samples, %v", name, len(x), err)
		}
	}
	// A relative path starting with "-" or holding "proto:" is a file too.
	t.Chdir(dir)
	for _, name := range []string{"-i.ogg", "http:evil.ogg"} {
		if _, err := Decode(context.Background(), name, Options{}); err != nil {
			t.Errorf("relative %q: %v", name, err)
		}
	}
}

// f32le encodes samples as ffmpeg's output.
func f32le(x []float32) []byte {
	b := make([]byte, 0, 4*len(x))
	for _, v := range x {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

func TestCollect(t *testing.T) {
	x := make([]float32, 2*chunkSamples+12345)
	for i := range x {
		x[i] = float32(i%1000) / 1000
	}
	raw := f32le(x)
	for _, c := range []struct {
		name      string
		r         io.Reader
		max       int
		want      int
		truncated bool
	}{
		{"whole", bytes.NewReader(raw), -1, len(x), false},
		{"odd reads", iotest.HalfReader(iotest.OneByteReader(bytes.NewReader(raw[:4*5000+3]))), -1, 5000, false},
		{"limit", bytes.NewReader(raw), chunkSamples + 7, chunkSamples + 7, true},
		{"limit is length", bytes.NewReader(raw), len(x), len(x), true},
		{"empty", bytes.NewReader(nil), -1, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, truncated, err := collect(c.r, c.max)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != c.want || truncated != c.truncated {
				t.Fatalf("%d samples, truncated %v; want %d, %v", len(got), truncated, c.want, c.truncated)
			}
			for i := range got {
				if got[i] != x[i] {
					t.Fatalf("sample %d = %v, want %v", i, got[i], x[i])
				}
			}
			if cap(got) > len(got)+len(got)/4+1 {
				t.Errorf("cap %d for %d samples", cap(got), len(got))
			}
		})
	}
	t.Run("read error", func(t *testing.T) {
		boom := errors.New("boom")
		_, _, err := collect(iotest.ErrReader(boom), -1)
		if !errors.Is(err, boom) {
			t.Fatalf("err %v", err)
		}
	})
}

func TestErrorFormat(t *testing.T) {
	inner := errors.New("inner")
	e := &Error{Class: worker.Permanent, Reason: "not audio: x", Err: inner}
	if e.Error() != "audio: permanent: not audio: x: inner" || !errors.Is(e, inner) {
		t.Errorf("%q", e.Error())
	}
	if (&Error{Class: worker.Transient, Reason: "r"}).Error() != "audio: transient: r" {
		t.Error("format without Err")
	}
}

// BenchmarkDecode decodes FLAC speech: the 6 s test clip, and 3 min of it
// repeated (sox). x-realtime is seconds of audio decoded per wall-clock
// second, process start included (it dominates the 6 s clip).
func BenchmarkDecode(b *testing.B) {
	dir := library(b)
	short := filepath.Join(dir, "good", "speech.flac")
	long := filepath.Join(b.TempDir(), "speech-180s.flac")
	if out, err := exec.Command("sox", short, long, "repeat", "29").CombinedOutput(); err != nil {
		b.Fatalf("sox: %v\n%s", err, out)
	}
	for _, c := range []struct{ name, path string }{{"flac-6s", short}, {"flac-180s", long}} {
		b.Run(c.name, func(b *testing.B) {
			var audio float64
			for b.Loop() {
				x, err := Decode(context.Background(), c.path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				audio += float64(len(x)) / SampleRate
			}
			b.ReportMetric(audio/b.Elapsed().Seconds(), "x-realtime")
		})
	}
}

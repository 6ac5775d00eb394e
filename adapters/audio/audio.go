// Package audio decodes any audio file to 16 kHz mono float32 samples
// (docs/design.md §9 step 1) through an ffmpeg subprocess: every format ffmpeg knows,
// and a decoder crash cannot take the worker down.
//
// The command is
//
//	ffmpeg -nostdin -hide_banner -v error -protocol_whitelist file -i file:ABS
//	       -map a:0 -ac 1 -ar 16000 -rematrix_maxval 1 [-t MAX] -f f32le -
//
// "file:" plus an absolute path keeps names such as "a:b.mp3" or "-x.mp3"
// from being read as a protocol or an option, and the whitelist keeps a
// playlist-like input (HLS, concat) from reaching the network.
// -rematrix_maxval 1 makes the downmix the average of the channels, as
// Essentia's MonoLoader does ((L+R)/2); ffmpeg's default stereo→mono downmix
// is 0.707·(L+R), 3 dB louder (and 5.1 → mono up to 2.4× louder), which
// would shift every log-mel feature.
//
// Like a player, Decode keeps what decodes: a damaged frame ffmpeg skips
// (it complains on stderr but exits 0) is not an error, so a truncated
// download yields its first part (or "too short").
//
// Failures are *Error values carrying a worker.Class (docs/design.md §8): the file's
// fault is Permanent, a missing or broken ffmpeg is ServiceDown (dependency
// worker.DepDecoder), a timeout or ffmpeg dying of a signal other than a
// stop's is Transient, and a decode stopped from outside (the context
// canceled, ffmpeg stopped by SIGTERM, SIGINT, SIGHUP or SIGQUIT, or its
// silent exit 255 after one) is interrupted: ServiceDown, never a verdict
// on the file (interrupted.go). ffmpeg's messages are classified with the file's path taken out,
// and a failure that looks like a broken ffmpeg is ServiceDown only when
// ffmpeg also fails the preflight (Available's decode of a known-good file).
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
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/nomarr/nomarr/core/worker"
)

// SampleRate is the rate of the decoded samples (Hz).
const SampleRate = 16000

// Defaults of Options.
const (
	DefaultFFmpeg  = "ffmpeg"
	DefaultTimeout = 5 * time.Minute
	// DefaultMinSeconds: one MusiCNN patch is 187 frames of 512 samples at
	// hop 256, (187-1)·256 + 512 = 48128 samples ≈ 3.0 s at 16 kHz; shorter
	// audio yields no patch at all.
	DefaultMinSeconds = 3.0
)

// Decoders (Options.Decoder).
const (
	// DecoderLibav decodes in this process through libav (libavformat,
	// libavcodec, libswresample) called through cgo: no process per file.
	// Builds without cgo, or with the nolibav tag, do not have it.
	DecoderLibav = "libav"
	// DecoderFFmpeg runs one ffmpeg process per file.
	DecoderFFmpeg = "ffmpeg"
)

// waitDelay bounds how long Decode waits, once ffmpeg is killed, for its
// pipes to close (a grandchild of a wrapper script could hold them).
const waitDelay = time.Second

// stderrLimit bounds the ffmpeg diagnostics kept for the error reason.
const stderrLimit = 8 << 10

// chunkSamples is the size of the blocks Decode collects the output in (1 MiB).
const chunkSamples = 1 << 18

// Options configure Decode and Stream. The zero value uses every default.
type Options struct {
	// Decoder is DecoderLibav or DecoderFFmpeg. Default: DecoderFFmpeg
	// when FFmpeg is set, else DecoderLibav where the build has it
	// (HasLibav), else DecoderFFmpeg.
	Decoder string
	// FFmpeg is the ffmpeg executable of DecoderFFmpeg: a path, or a name
	// looked up in PATH. Default "ffmpeg".
	FFmpeg string
	// Timeout bounds one decode, start to end. Default 5 min; negative:
	// no timeout beyond the context's. Stream's caller may take as long as
	// it likes between blocks: its time counts too.
	Timeout time.Duration
	// MaxSeconds is the most audio decoded. A longer file is not an error:
	// the decode stops at MaxSeconds and yields the first MaxSeconds of
	// audio. 0 or negative: no limit (the default, the whole file).
	MaxSeconds float64
	// MinSeconds is the least audio a file must have; shorter is a Permanent
	// "too short: X s" error. Default 3.0 s (one MusiCNN patch); negative:
	// no minimum (no samples at all is still "empty").
	MinSeconds float64
}

func (o Options) withDefaults() Options {
	if o.Decoder == "" {
		o.Decoder = DecoderFFmpeg
		if o.FFmpeg == "" && HasLibav {
			o.Decoder = DecoderLibav
		}
	}
	if o.FFmpeg == "" {
		o.FFmpeg = DefaultFFmpeg
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MinSeconds == 0 {
		o.MinSeconds = DefaultMinSeconds
	}
	return o
}

// Decode decodes the first audio stream of the file at path to 16 kHz mono
// float32 samples (nominally in [-1, 1]). Errors are *Error. Its memory
// grows with the file (4 bytes per sample); Stream does not.
func Decode(ctx context.Context, path string, opt Options) ([]float32, error) {
	var c collector
	if _, err := decode(ctx, path, opt, true, c.add); err != nil {
		return nil, err
	}
	return c.samples(), nil
}

// Stream decodes like Decode but hands the samples to fn in blocks, in
// order, as they are decoded; a block is valid only during the call. It
// returns the number of samples decoded. An error of fn stops the decode
// and is returned as it is. The checks that need the whole file (empty,
// too short, a failure at the end) come after the last block: a caller
// must not act on the blocks before Stream returned nil. ffmpeg is
// killed (with any process it started) when ctx ends or the timeout
// passes; Stream never returns before it has been reaped.
func Stream(ctx context.Context, path string, opt Options, fn func([]float32) error) (int, error) {
	return decode(ctx, path, opt, true, fn)
}

// decode is Stream; confirm says whether a failure that looks like a broken
// ffmpeg is checked with the preflight before it is called ServiceDown (the
// preflight's own decode must not, or it would recurse).
func decode(ctx context.Context, path string, opt Options, confirm bool, fn func([]float32) error) (int, error) {
	opt = opt.withDefaults()
	abs, err := checkFile(path)
	if err != nil {
		return 0, err
	}
	maxSamples := -1
	if opt.MaxSeconds > 0 {
		maxSamples = int(math.Ceil(opt.MaxSeconds * SampleRate))
	}
	var n int
	switch opt.Decoder {
	case DecoderFFmpeg:
		n, err = run(ctx, opt, abs, maxSamples, confirm, fn)
	case DecoderLibav:
		n, err = runLibav(ctx, opt, abs, maxSamples, fn)
	default:
		return 0, &Error{Class: worker.ServiceDown, Reason: fmt.Sprintf("unknown decoder %q (want %q or %q)", opt.Decoder, DecoderLibav, DecoderFFmpeg)}
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, &Error{Class: worker.Permanent, Reason: "empty"}
	}
	if opt.MinSeconds > 0 && float64(n) < opt.MinSeconds*SampleRate {
		return 0, &Error{Class: worker.Permanent,
			Reason: fmt.Sprintf("too short: %.1f s", float64(n)/SampleRate)}
	}
	return n, nil
}

// collector keeps the blocks of a decode, in chunks of chunkSamples.
type collector struct {
	chunks [][]float32
	cur    []float32
	total  int
}

func (c *collector) add(x []float32) error {
	for len(x) > 0 {
		if len(c.cur) == cap(c.cur) {
			if c.cur != nil {
				c.chunks = append(c.chunks, c.cur)
			}
			c.cur = make([]float32, 0, chunkSamples)
		}
		k := min(len(x), cap(c.cur)-len(c.cur))
		c.cur = append(c.cur, x[:k]...)
		x = x[k:]
		c.total += k
	}
	return nil
}

// samples is everything added, in one slice of little more capacity than
// length.
func (c *collector) samples() []float32 {
	if len(c.chunks) == 0 {
		if cap(c.cur)-len(c.cur) > len(c.cur)/4 { // do not keep 1 MiB for a short file
			return append([]float32(nil), c.cur...)
		}
		return c.cur
	}
	out := make([]float32, 0, c.total)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return append(out, c.cur...)
}

// Available checks that ffmpeg (a path or a name in PATH; "" is "ffmpeg")
// runs and decodes with the options Decode uses, by decoding a
// 0.1 s WAV it writes to a temporary file. It returns nil or a ServiceDown
// *Error. Meant as a preflight (startup, half-open circuit breaker).
func Available(ffmpeg string) error {
	return preflight(context.Background(), ffmpeg)
}

// preflight is Available, bounded by ctx as well.
func preflight(ctx context.Context, ffmpeg string) error {
	tmp, err := os.CreateTemp("", "nomarr-audio-probe-*.wav")
	if err != nil {
		return &Error{Class: worker.ServiceDown, Reason: "decoder preflight: temporary file", Err: err}
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(probeWAV())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return &Error{Class: worker.ServiceDown, Reason: "decoder preflight: temporary file", Err: werr}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if ffmpeg == "" {
		ffmpeg = DefaultFFmpeg
	}
	var c collector
	_, err = decode(ctx, tmp.Name(), Options{Decoder: DecoderFFmpeg, FFmpeg: ffmpeg, MinSeconds: -1}, false, c.add)
	samples := c.samples()
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Class == worker.ServiceDown {
			return e
		}
		return &Error{Class: worker.ServiceDown, Reason: "decoder preflight failed", Err: err}
	}
	if want := SampleRate / 10; len(samples) < want*9/10 || len(samples) > want*11/10 {
		return &Error{Class: worker.ServiceDown,
			Reason: fmt.Sprintf("decoder preflight: 0.1 s of audio decoded to %d samples, want %d", len(samples), want)}
	}
	return nil
}

// probeWAV is 0.1 s of a 440 Hz tone, 8 kHz stereo 16-bit PCM, so the
// preflight exercises resampling and downmixing.
func probeWAV() []byte {
	const rate, n = 8000, 800
	data := make([]byte, 0, 44+n*4)
	le := binary.LittleEndian
	data = append(data, "RIFF"...)
	data = le.AppendUint32(data, uint32(36+n*4))
	data = append(data, "WAVEfmt "...)
	data = le.AppendUint32(data, 16)
	data = le.AppendUint16(data, 1) // PCM
	data = le.AppendUint16(data, 2) // channels
	data = le.AppendUint32(data, rate)
	data = le.AppendUint32(data, rate*4)
	data = le.AppendUint16(data, 4)
	data = le.AppendUint16(data, 16)
	data = append(data, "data"...)
	data = le.AppendUint32(data, n*4)
	for i := range n {
		v := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate))
		data = le.AppendUint16(data, uint16(v))
		data = le.AppendUint16(data, uint16(v))
	}
	return data
}

// checkFile classifies a file ffmpeg could not read before starting it, and
// returns its absolute path.
func checkFile(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &Error{Class: worker.Permanent, Reason: "unreadable", Err: err}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fileError(err)
	}
	if !fi.Mode().IsRegular() { // a FIFO would block the open below forever
		return "", &Error{Class: worker.Permanent, Reason: "unreadable: not a regular file"}
	}
	if fi.Size() == 0 {
		return "", &Error{Class: worker.Permanent, Reason: "empty"}
	}
	f, err := os.Open(abs)
	if err != nil {
		return "", fileError(err)
	}
	f.Close()
	return abs, nil
}

// fileError classifies an error of stat or open on the audio file.
func fileError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return &Error{Class: worker.Permanent, Reason: "missing", Err: err, Missing: true}
	case isTemporary(err):
		// A network file system or the machine is in trouble, not the file.
		return &Error{Class: worker.Transient, Reason: "file temporarily unreadable", Err: err}
	default:
		return &Error{Class: worker.Permanent, Reason: "unreadable", Err: err}
	}
}

// isTemporary tells whether err (of a stat or open of the file) says that
// the machine or the storage is in trouble rather than the file: out of
// resources, interrupted, or an I/O error of a disk or a network file
// system (ENXIO, ENODEV: the device holding it went away).
func isTemporary(err error) bool {
	for _, e := range []error{syscall.EIO, syscall.EAGAIN, syscall.EINTR, syscall.ENOMEM,
		syscall.EMFILE, syscall.ENFILE, syscall.ESTALE, syscall.ETIMEDOUT,
		syscall.EHOSTDOWN, syscall.EHOSTUNREACH, syscall.ENOTCONN,
		syscall.ENXIO, syscall.ENODEV} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// run starts ffmpeg on the file and hands its output to fn; it returns the
// number of samples handed over. confirm: see decode.
func run(parent context.Context, opt Options, abs string, maxSamples int, confirm bool, fn func([]float32) error) (int, error) {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if opt.Timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, opt.Timeout)
	}
	// stop ends ffmpeg early (enough samples) without looking like a
	// cancellation of parent or a timeout.
	ctx, stop := context.WithCancel(ctx)
	defer cancel()
	defer stop()

	input := "file:" + abs
	args := []string{"-nostdin", "-hide_banner", "-v", "error",
		"-protocol_whitelist", "file", "-i", input,
		"-map", "a:0", "-ac", "1", "-ar", strconv.Itoa(SampleRate), "-rematrix_maxval", "1"}
	if maxSamples > 0 {
		args = append(args, "-t", strconv.FormatFloat(float64(maxSamples)/SampleRate, 'f', -1, 64))
	}
	args = append(args, "-f", "f32le", "-")

	cmd := exec.CommandContext(ctx, opt.FFmpeg, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error {
		// The whole process group: a wrapper script's children too.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	cmd.WaitDelay = waitDelay
	stderr := &limitedBuffer{limit: stderrLimit}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, &Error{Class: worker.Transient, Reason: "decoder pipe", Err: err}
	}
	// Pdeathsig fires when the thread that started ffmpeg exits; keep it
	// alive until ffmpeg is reaped (Go issue 27505).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		if e := ctxError(parent, ctx, opt.Timeout); e != nil {
			return 0, e
		}
		return 0, startError(opt.FFmpeg, err)
	}

	n, truncated, readErr, sinkErr := pump(stdout, maxSamples, fn)
	if truncated || readErr != nil || sinkErr != nil {
		stop() // kill ffmpeg: nobody reads its output any more
	}
	waitErr := cmd.Wait()
	// Kill what a wrapper script may have left behind (ffmpeg itself starts
	// no process). While a member lives, the group id cannot be reused.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)

	if sinkErr != nil {
		return 0, sinkErr
	}
	if truncated {
		return n, nil
	}
	if waitErr == nil && readErr == nil {
		if e := classifyCleanExit(stderr.Bytes(), input); e != nil {
			return 0, e // cut short by a failed read
		}
		return n, nil
	}
	if e := ctxError(parent, ctx, opt.Timeout); e != nil {
		return 0, e
	}
	if waitErr != nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				return 0, signalExit(ws.Signal(), waitErr)
			}
			if e := stopStatus(ee.ExitCode(), stderr.Bytes(), input, waitErr); e != nil {
				return 0, e
			}
			checks := exitChecks{fileGone: func() bool {
				_, err := os.Stat(abs)
				return err != nil
			}}
			if confirm {
				checks.decoderWorks = func() error { return preflight(parent, opt.FFmpeg) }
			}
			e := classifyExit(ee.ExitCode(), stderr.Bytes(), input, waitErr, checks)
			if e.Class == worker.ServiceDown && parent.Err() != nil {
				// The preflight was cut short: nothing is known of ffmpeg.
				return 0, ctxError(parent, ctx, opt.Timeout)
			}
			return 0, e
		}
		return 0, &Error{Class: worker.Transient, Reason: "decoder wait", Err: waitErr}
	}
	return 0, &Error{Class: worker.Transient, Reason: "reading decoder output", Err: readErr}
}

// ctxError is the error for a decode whose context ended, or nil.
func ctxError(parent, ctx context.Context, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return interrupted("canceled", err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &Error{Class: worker.Transient,
			Reason: fmt.Sprintf("decode timed out after %v", timeout), Err: ctx.Err()}
	}
	return nil
}

// startError classifies a failure to start ffmpeg.
func startError(ffmpeg string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, exec.ErrDot),
		errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.EISDIR):
		return &Error{Class: worker.ServiceDown, Err: err,
			Reason: fmt.Sprintf("ffmpeg not found or not executable (%q): install ffmpeg "+
				"(scripts/deps.sh, or apt-get install ffmpeg) or set the ffmpeg path", ffmpeg)}
	default: // EAGAIN, ENOMEM, EMFILE: the machine is busy
		return &Error{Class: worker.Transient, Reason: "starting ffmpeg", Err: err}
	}
}

// pump reads ffmpeg's f32le output and hands it to fn in blocks, at most
// maxSamples samples (negative: no limit); truncated reports that it
// stopped at the limit. It stops at the first error of the read (readErr)
// or of fn (sinkErr).
func pump(r io.Reader, maxSamples int, fn func([]float32) error) (total int, truncated bool, readErr, sinkErr error) {
	buf := make([]byte, 64<<10)
	block := make([]float32, 0, len(buf)/4)
	pending := 0 // bytes of an incomplete sample at the start of buf
	for {
		n, rerr := r.Read(buf[pending:])
		n += pending
		whole := n &^ 3
		if maxSamples >= 0 {
			whole = min(whole, 4*(maxSamples-total))
		}
		block = block[:whole/4]
		for i := range block {
			block[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		if len(block) > 0 {
			total += len(block)
			if err := fn(block); err != nil {
				return total, false, nil, err
			}
		}
		if maxSamples >= 0 && total == maxSamples {
			return total, true, nil, nil
		}
		pending = copy(buf, buf[whole:n])
		if rerr == io.EOF {
			return total, false, nil, nil
		}
		if rerr != nil {
			return total, false, rerr, nil
		}
	}
}

// collect reads ffmpeg's f32le output into samples (pump with a collector).
func collect(r io.Reader, maxSamples int) (samples []float32, truncated bool, err error) {
	var c collector
	_, truncated, err, _ = pump(r, maxSamples, c.add)
	return c.samples(), truncated, err
}

// limitedBuffer keeps the first limit bytes written to it and accepts (and
// drops) the rest, so the writer is never blocked or failed.
type limitedBuffer struct {
	limit int
	buf   bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte { return b.buf.Bytes() }

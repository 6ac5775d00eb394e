package tagwrite

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nomarr/nomarr/core/tags"
	"github.com/nomarr/nomarr/internal/killedwriter"
)

// childEnv makes the test binary a child that writes the file it names and
// is killed right after creating the temporary copy (TestKillMidWrite).
const childEnv = "NOMARR_TAGWRITE_CHILD"

func TestMain(m *testing.M) {
	killedwriter.Child(childEnv, func(path string) error {
		testHookAfterCopy = killedwriter.Hold
		return Write(path, map[string]string{"nom_version": "child"})
	})
	os.Exit(m.Run())
}

func needTools(t *testing.T) {
	t.Helper()
	if !haveTagLib {
		t.Skip("built without TagLib (cgo off or notaglib tag)")
	}
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/deps.sh installs it)", tool)
		}
	}
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// Kinds of test files.
var kinds = []string{"mp3", "mp3-id3v23", "flac", "m4a", "ogg", "opus", "oga", "wav", "aiff", "wv", "ape", "wma"}

func kindFormat(kind string) Format {
	return map[string]Format{"mp3": MP3, "mp3-id3v23": MP3, "flac": FLAC, "m4a": MP4, "ogg": Vorbis, "opus": Opus,
		"oga": OggFLAC, "wav": WAV, "aiff": AIFF, "wv": WavPack, "ape": APE, "wma": ASF}[kind]
}

// kindPictures is the number of cover pictures makeFile gives a file of
// kind: ffmpeg writes none into WAV, WavPack and WMA (it stores a WMA's
// picture as a video stream, not as WM/Picture).
func kindPictures(kind string) int {
	switch kind {
	case "wav", "wv", "wma":
		return 0
	}
	return 1
}

// pictureBlock is a FLAC picture block (front cover) of a JPEG, base64, as
// the METADATA_BLOCK_PICTURE comment of Ogg files carries it.
func pictureBlock(t *testing.T, jpeg string) string {
	data, err := os.ReadFile(jpeg)
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	u32 := func(v int) { b = binary.BigEndian.AppendUint32(b, uint32(v)) }
	u32(3)
	u32(len("image/jpeg"))
	b = append(b, "image/jpeg"...)
	u32(0)
	u32(64)
	u32(64)
	u32(24)
	u32(0)
	u32(len(data))
	b = append(b, data...)
	return base64.StdEncoding.EncodeToString(b)
}

// makeFile creates a 2 s tone of kind in dir with title, artist, album and a
// cover picture (attached picture stream; METADATA_BLOCK_PICTURE for Ogg).
func makeFile(t *testing.T, dir, kind string) string {
	t.Helper()
	cover := filepath.Join(dir, "cover.jpg")
	if _, err := os.Stat(cover); err != nil {
		run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc=s=64x64", "-frames:v", "1", cover)
	}
	ext := map[string]string{"mp3": ".mp3", "mp3-id3v23": ".mp3", "flac": ".flac", "m4a": ".m4a", "ogg": ".ogg", "opus": ".opus",
		"oga": ".oga", "wav": ".wav", "aiff": ".aiff", "wv": ".wv", "ape": ".ape", "wma": ".wma"}[kind]
	out := filepath.Join(dir, "track-"+kind+ext)
	if kind == "ape" {
		return makeAPE(t, dir, cover, out)
	}
	args := []string{"-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=2"}
	pic := []string{"-i", cover, "-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic"}
	switch kind {
	case "mp3":
		args = append(append(args, pic...), "-c:a", "libmp3lame", "-b:a", "96k", "-write_id3v1", "1")
	case "mp3-id3v23":
		args = append(append(args, pic...), "-c:a", "libmp3lame", "-b:a", "96k", "-id3v2_version", "3")
	case "flac":
		args = append(append(args, pic...), "-c:a", "flac")
	case "m4a":
		args = append(append(args, pic...), "-c:a", "aac", "-b:a", "64k")
	case "ogg":
		args = append(args, "-c:a", "libvorbis", "-metadata", "METADATA_BLOCK_PICTURE="+pictureBlock(t, cover))
	case "opus":
		args = append(args, "-c:a", "libopus", "-metadata", "METADATA_BLOCK_PICTURE="+pictureBlock(t, cover))
	case "oga":
		args = append(args, "-c:a", "flac", "-f", "ogg", "-metadata", "METADATA_BLOCK_PICTURE="+pictureBlock(t, cover))
	case "wav":
		args = append(args, "-c:a", "pcm_s16le") // tags in a RIFF INFO chunk
	case "aiff":
		args = append(append(args, pic...), "-c:a", "pcm_s16be", "-write_id3v2", "1")
	case "wv":
		args = append(args, "-c:a", "wavpack") // tags in an APEv2 tag
	case "wma":
		args = append(args, "-c:a", "wmav2", "-b:a", "64k")
	}
	args = append(args, "-metadata", "title=Tïtle", "-metadata", "artist=The Artist", "-metadata", "album=An Album", out)
	run(t, "ffmpeg", args...)
	return out
}

type probed struct {
	ours, others map[string]string // tags by ffprobe name
	pictures     int
}

// isOurs tells our tags from the others by the name ffprobe shows.
func isOurs(f Format, name string) bool {
	if family(f) != famVorbis {
		return strings.HasPrefix(name, "nom:")
	}
	return strings.HasPrefix(strings.ToUpper(name), "NOM_")
}

// probeName is the name ffprobe shows for key in a file of format f (ffmpeg
// names an MP4 free-form atom by its name part).
func probeName(f Format, key string) string {
	if f == MP4 {
		return "nom:" + key
	}
	return FileName(f, key)
}

func probe(t *testing.T, path string, f Format) probed {
	t.Helper()
	var p struct {
		Format struct {
			Tags map[string]string `json:"tags"`
		} `json:"format"`
		Streams []struct {
			Index       int               `json:"index"`
			Tags        map[string]string `json:"tags"`
			Disposition map[string]int    `json:"disposition"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(run(t, "ffprobe", "-v", "error", "-of", "json", "-show_format", "-show_streams", path)), &p); err != nil {
		t.Fatal(err)
	}
	out := probed{ours: map[string]string{}, others: map[string]string{}}
	add := func(scope, k, v string) {
		if isOurs(f, k) {
			if old, ok := out.ours[k]; ok && old != v {
				t.Errorf("%s: %s twice: %q and %q", path, k, old, v)
			}
			out.ours[k] = v
		} else {
			if family(f) == famVorbis {
				// Vorbis comment and APE names are case-insensitive, and TagLib
				// saves them upper-case ("title" → "TITLE").
				k = strings.ToUpper(k)
			}
			out.others[scope+k] = v
		}
	}
	for k, v := range p.Format.Tags {
		add("format:", k, v)
	}
	for _, s := range p.Streams {
		for k, v := range s.Tags {
			add(fmt.Sprintf("stream%d:", s.Index), k, v)
		}
		if s.Disposition["attached_pic"] == 1 {
			out.pictures++
		}
	}
	return out
}

func md5Of(t *testing.T, path string, args ...string) string {
	t.Helper()
	a := append([]string{"-v", "error", "-i", path}, args...)
	return strings.TrimSpace(run(t, "ffmpeg", append(a, "-f", "md5", "-")...))
}

type snapshot struct {
	decoded, packets, picture string
	id3v1                     string // the ID3v1 block at the end of an MP3, if any
	probe                     probed
}

func snap(t *testing.T, path string, f Format) snapshot {
	t.Helper()
	s := snapshot{
		decoded: md5Of(t, path, "-map", "0:a"),
		probe:   probe(t, path, f),
	}
	if f == APE {
		// ffmpeg's last APE packet runs to the end of the file, tags
		// included: compare the bytes in front of the tags instead.
		s.packets = apeAudioSum(t, path)
	} else {
		s.packets = md5Of(t, path, "-map", "0:a", "-c", "copy")
	}
	if s.probe.pictures > 0 {
		s.picture = md5Of(t, path, "-map", "0:v", "-c", "copy")
	}
	if b, _ := os.ReadFile(path); f == MP3 && len(b) > 128 && string(b[len(b)-128:len(b)-125]) == "TAG" {
		s.id3v1 = string(b[len(b)-128:])
	}
	return s
}

func noTemps(t *testing.T, dir string) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
	if len(m) > 0 {
		t.Errorf("temporary copies left: %v", m)
	}
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// derived is a realistic full tag set from core/tags.
func derived(t *testing.T) map[string]string {
	t.Helper()
	p := tags.Predictions{Heads: map[string][][]float32{}}
	for i := range 4 {
		row := make([]float32, len(tags.MSDTop50))
		for j := range row {
			row[j] = float32((j*7+i)%50) / 60
		}
		p.MSD = append(p.MSD, row)
	}
	for h, head := range tags.Heads {
		for i := range 4 {
			a := float32((h*13+i*5)%20) / 20
			p.Heads[head] = append(p.Heads[head], []float32{a, 1 - a})
		}
	}
	all, err := tags.Derive(p, "3f9a2c1d", tags.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	all["note"] = "café ☕ naïve; ünïcödé"
	return all
}

// addForeign puts tags into the file that look like ours but are not (they
// must survive every write), and one stale tag of ours under a key of the
// original system (it must be removed).
func addForeign(t *testing.T, path string, f Format) {
	t.Helper()
	var foreign [][2]string
	var fprefix string
	switch family(f) {
	case famID3:
		fprefix, foreign = "other", [][2]string{{"other:x", "keep 1"}, {"nominal", "keep 2"}}
	case famMP4:
		// A name with a ':' exercises the free-form placeholder of the shim.
		fprefix, foreign = "----:com.apple.iTunes:", [][2]string{{"----:com.apple.iTunes:foo:bar", "keep 1"}, {"----:com.apple.iTunes:nominal", "keep 2"}}
	default:
		fprefix, foreign = "NOM", [][2]string{{"NOMINAL", "keep 1"}, {"NOM", "keep 2"}}
	}
	edit := func(prefix string, recs [][2]string) {
		fh, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if err := taglibWrite(fh, f, prefix, recs, nil); err != nil {
			t.Fatal(err)
		}
	}
	edit(fprefix, foreign)
	edit(prefix(f), [][2]string{{FileName(f, "happy_essentia21-beta6-dev_musicnn20200331_happy20220825"), "0.91"}})
}

func TestWriteFormats(t *testing.T) {
	needTools(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := makeFile(t, dir, kind)
			f := kindFormat(kind)
			if got, err := Detect(path); err != nil || got != f {
				t.Fatalf("Detect = %v, %v; want %v", got, err, f)
			}
			pristine := probe(t, path, f)
			addForeign(t, path, f)
			before := snap(t, path, f)
			for k, v := range pristine.others {
				if before.probe.others[k] != v {
					t.Fatalf("adding foreign tags lost %s=%q", k, v)
				}
			}
			if before.probe.pictures != kindPictures(kind) {
				t.Fatalf("fixture has %d pictures, want %d", before.probe.pictures, kindPictures(kind))
			}
			if (kind == "mp3") != (before.id3v1 != "") {
				t.Fatalf("fixture: ID3v1 block %q", before.id3v1)
			}
			if len(before.probe.ours) != 1 && f != WAV {
				t.Fatalf("fixture: ours %v, want the one stale tag", before.probe.ours)
			}
			mutagenBefore := mutagenOthers(f, mutagenTags(t, path))
			for _, want := range []string{"Tïtle", "The Artist", "An Album", "keep 1", "keep 2"} {
				// ffmpeg does not show a WAV's ID3v2 chunk next to its
				// RIFF INFO chunk (see below); mutagen does.
				if !containsValue(before.probe.others, want) && (f != WAV || !containsValue(mutagenBefore, want)) {
					t.Fatalf("fixture lacks %q: %v", want, before.probe.others)
				}
			}

			check := func(want map[string]string) {
				t.Helper()
				after := snap(t, path, f)
				if after.decoded != before.decoded || after.packets != before.packets {
					t.Errorf("audio changed: decoded %s → %s, packets %s → %s", before.decoded, after.decoded, before.packets, after.packets)
				}
				if after.id3v1 != before.id3v1 {
					t.Errorf("ID3v1 block changed: %q → %q", before.id3v1, after.id3v1)
				}
				if after.picture != before.picture || after.probe.pictures != kindPictures(kind) {
					t.Errorf("picture changed: %s → %s (%d pictures)", before.picture, after.picture, after.probe.pictures)
				}
				if !maps.Equal(after.probe.others, before.probe.others) {
					t.Errorf("other tags changed:\nbefore %v\nafter  %v", before.probe.others, after.probe.others)
				}
				wantProbe := map[string]string{}
				for k, v := range want {
					wantProbe[probeName(f, k)] = v
				}
				// ffmpeg reads a WAV's ID3v2 chunk only when the file has
				// no RIFF INFO chunk, and this one has.
				if f != WAV && !maps.Equal(after.probe.ours, wantProbe) {
					t.Errorf("ffprobe shows our tags\n%v\nwant\n%v", after.probe.ours, wantProbe)
				}
				mt := mutagenTags(t, path)
				if got := mutagenOurs(f, mt); !maps.Equal(got, want) {
					t.Errorf("mutagen reads our tags\n%v\nwant\n%v", got, want)
				}
				if got := mutagenOthers(f, mt); !maps.Equal(got, mutagenBefore) {
					t.Errorf("mutagen: other tags changed:\nbefore %q\nafter  %q", mutagenBefore, got)
				}
				got, err := Read(path)
				if err != nil {
					t.Fatal(err)
				}
				if !maps.Equal(got, want) {
					t.Errorf("Read = %v\nwant   %v", got, want)
				}
				noTemps(t, dir)
			}

			a := derived(t)
			if err := Write(path, a); err != nil {
				t.Fatal(err)
			}
			check(a)

			// A second, different set replaces the first: changed values,
			// removed keys, a new key; nothing is duplicated.
			b := map[string]string{}
			for k, v := range a {
				if !strings.HasPrefix(k, "spread_") {
					b[k] = v
				}
			}
			b[tags.KeyVersion] = "0badc0de"
			b[tags.KeyMoodStrict] = "sad"
			b["extra_key"] = "x"
			if err := Write(path, b); err != nil {
				t.Fatal(err)
			}
			check(b)

			// The same set again leaves the file alone.
			st1, _ := os.Stat(path)
			if err := Write(path, b); err != nil {
				t.Fatal(err)
			}
			st2, _ := os.Stat(path)
			if !os.SameFile(st1, st2) || !st1.ModTime().Equal(st2.ModTime()) {
				t.Error("writing the same tags again replaced the file")
			}

			// The minimal set, then nothing: our tags go, the rest stays.
			min, _ := tags.WriteSet(a, tags.ModeMinimal)
			if err := Write(path, min); err != nil {
				t.Fatal(err)
			}
			check(min)
			if err := Write(path, map[string]string{}); err != nil {
				t.Fatal(err)
			}
			check(map[string]string{})
		})
	}
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// TestKillMidWrite kills (SIGKILL) a writer right after it created its
// temporary copy, in every kind of file: the original is intact, and the
// next write removes the stale copy, which no live write holds any more
// (tempcopy).
func TestKillMidWrite(t *testing.T) {
	needTools(t)
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := makeFile(t, dir, kind)
			first := map[string]string{"nom_version": "v1", "mood-strict": "happy"}
			if err := Write(path, first); err != nil {
				t.Fatal(err)
			}
			sum := sha(t, path)

			cmd, tmp := killedwriter.Start(t, childEnv, path)
			killedwriter.Kill(t, cmd)

			if filepath.Dir(tmp) != dir || !strings.HasPrefix(filepath.Base(tmp), TempPrefix) {
				t.Fatalf("temporary copy %s: want %s* in %s", tmp, TempPrefix, dir)
			}
			ti, err := os.Stat(tmp)
			if err != nil {
				t.Fatalf("the killed writer's copy: %v", err)
			}
			oi, _ := os.Stat(path)
			if ti.Size() != oi.Size() || ti.Mode() != oi.Mode() {
				t.Errorf("copy %d bytes %v, original %d bytes %v", ti.Size(), ti.Mode(), oi.Size(), oi.Mode())
			}
			if sha(t, path) != sum {
				t.Fatal("original changed by the killed writer")
			}
			if got, err := Read(path); err != nil || !maps.Equal(got, first) {
				t.Fatalf("original reads %v, %v; want %v", got, err, first)
			}

			// The copy's lock went with the killed writer: the next write
			// in the folder removes it.
			third := map[string]string{"nom_version": "v3"}
			if err := Write(path, third); err != nil {
				t.Fatal(err)
			}
			noTemps(t, dir)
			if got, _ := Read(path); !maps.Equal(got, third) {
				t.Errorf("Read = %v, want %v", got, third)
			}
		})
	}
}

func TestReadOnly(t *testing.T) {
	needTools(t)
	for _, kind := range kinds {
		t.Run("file/"+kind, func(t *testing.T) {
			dir := t.TempDir()
			path := makeFile(t, dir, kind)
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			sum := sha(t, path)
			err := Write(path, map[string]string{"nom_version": "v"})
			if !errors.Is(err, ErrReadOnly) {
				t.Fatalf("Write = %v, want ErrReadOnly", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if sha(t, path) != sum {
				t.Error("read-only file changed")
			}
			if st, _ := os.Stat(path); st.Mode().Perm() != 0o444 {
				t.Errorf("mode %v", st.Mode())
			}
			if err := Writable(path); !errors.Is(err, ErrReadOnly) {
				t.Errorf("Writable = %v, want ErrReadOnly", err)
			}
			noTemps(t, dir)
		})
	}
	t.Run("already holding the tags", func(t *testing.T) {
		dir := t.TempDir()
		path := makeFile(t, dir, "ogg")
		want := map[string]string{"nom_version": "v"}
		if err := Writable(path); err != nil {
			t.Fatalf("Writable before the chmod = %v", err)
		}
		if err := Write(path, want); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		sum := sha(t, path)
		if err := Write(path, want); err != nil {
			t.Fatalf("Write of the tags the read-only file holds = %v, want nil: nothing to write", err)
		}
		if err := Write(path, map[string]string{"nom_version": "w"}); !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Write of other tags = %v, want ErrReadOnly", err)
		}
		if sha(t, path) != sum {
			t.Error("read-only file changed")
		}
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		path := makeFile(t, dir, "flac")
		sum := sha(t, path)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		err := Write(path, map[string]string{"nom_version": "v"})
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Write = %v, want ErrReadOnly", err)
		}
		if sha(t, path) != sum {
			t.Error("file in a read-only directory changed")
		}
		noTemps(t, dir)
	})
}

// mountTmpfs mounts a tmpfs of size bytes (needs root; skips otherwise).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillTo writes a filler file into dir until about free bytes remain.
func fillTo(t *testing.T, dir string, free int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	avail := int64(st.Bavail) * st.Bsize
	if avail < free {
		t.Fatalf("only %d bytes free, want %d", avail, free)
	}
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, avail-free)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if got := int64(st.Bavail) * st.Bsize; got > free || got < free-2*st.Bsize {
		t.Fatalf("%d bytes free after filling, want about %d", got, free)
	}
}

// TestFullDisk fills a small tmpfs so that (a) the copy of the original does
// not fit, (b) the copy fits but TagLib's growing the tag block does not. In
// both cases Write fails with an error that wraps ENOSPC, the original is
// unchanged and no temporary copy is left.
func TestFullDisk(t *testing.T) {
	needTools(t)
	for _, kind := range kinds {
		for _, stage := range []string{"copy", "edit"} {
			t.Run(kind+"/"+stage, func(t *testing.T) {
				src := makeFile(t, t.TempDir(), kind)
				data, err := os.ReadFile(src)
				if err != nil {
					t.Fatal(err)
				}
				dir := mountTmpfs(t, 4<<20)
				path := filepath.Join(dir, filepath.Base(src))
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				first := map[string]string{"nom_version": "v1"}
				if err := Write(path, first); err != nil {
					t.Fatal(err)
				}
				sum := sha(t, path)
				size := int64(len(data))
				big := map[string]string{"nom_version": "v2", "top_tags": strings.Repeat("rock; ", 512<<10/6)}
				if stage == "copy" {
					fillTo(t, dir, size/2)
				} else {
					fillTo(t, dir, size+64<<10)
				}
				err = Write(path, big)
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Write = %v, want ENOSPC", err)
				}
				want := map[string]string{"copy": "copy to", "edit": "edit copy"}[stage]
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q: want it from the %s stage (%q)", err, stage, want)
				}
				if sha(t, path) != sum {
					t.Fatal("original changed")
				}
				if got, err := Read(path); err != nil || !maps.Equal(got, first) {
					t.Fatalf("original reads %v, %v", got, err)
				}
				noTemps(t, dir)
				// With room again, the same write succeeds.
				os.Remove(filepath.Join(dir, "filler"))
				if err := Write(path, big); err != nil {
					t.Fatal(err)
				}
				if got, _ := Read(path); !maps.Equal(got, big) {
					t.Error("big tags do not read back")
				}
			})
		}
	}
}

func TestInvalidTags(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	path := makeFile(t, dir, "ogg")
	sum := sha(t, path)
	for _, bad := range []map[string]string{
		{"": "x"}, {"Mood": "x"}, {"nom:x": "x"}, {"a b": "x"}, {"ключ": "x"},
		{"a-b": "1", "a_b": "2"}, // same Vorbis name NOM_A_B
		{"k": "a\x00b"}, {"k": "\xff\xfe"}, {strings.Repeat("k", 201): "x"},
	} {
		if err := Write(path, bad); !errors.Is(err, ErrInvalidTag) {
			t.Errorf("Write(%q) = %v, want ErrInvalidTag", bad, err)
		}
	}
	if sha(t, path) != sum {
		t.Error("file changed")
	}
}

func TestUnsupported(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	mka := filepath.Join(dir, "a.mka")
	run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=0.2", "-c:a", "flac", mka)
	txt := filepath.Join(dir, "a.mp3")
	os.WriteFile(txt, []byte("not audio at all"), 0o644)
	for _, p := range []string{mka, txt} {
		if err := Write(p, map[string]string{"nom_version": "v"}); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Write(%s) = %v, want ErrUnsupported", p, err)
		}
		if _, err := Read(p); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Read(%s) = %v, want ErrUnsupported", p, err)
		}
	}
	if err := Write(filepath.Join(dir, "missing.flac"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if err := Write(dir, nil); err == nil {
		t.Error("a directory was accepted")
	}
}

// TestTagLibRejectedFileIsUnsupported guards the classification of a file
// that TagLib cannot parse although its first page looks like a format of
// ours (an Ogg file with two interleaved Vorbis streams, which ffmpeg
// decodes): Read and Write fail with an error wrapping ErrUnsupported, so
// that the caller does not retry it, and the file is left as it was.
func TestTagLibRejectedFileIsUnsupported(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "two-streams.ogg")
	run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=duration=2", "-f", "lavfi", "-i",
		"sine=frequency=880:duration=2", "-map", "0", "-map", "1", "-c:a", "libvorbis", p)
	if f, err := Detect(p); f != Vorbis || err != nil {
		t.Fatalf("Detect = %v, %v; want Ogg Vorbis", f, err)
	}
	sum := sha(t, p)
	if _, err := Read(p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "could not open or parse the file as Ogg Vorbis") {
		t.Errorf("Read = %v, want ErrUnsupported from TagLib", err)
	}
	if err := Write(p, map[string]string{"nom_version": "x"}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Write = %v, want ErrUnsupported", err)
	}
	if sha(t, p) != sum {
		t.Error("file changed")
	}
	noTemps(t, dir)
}

// TestInPlaceEditKeepingSizeAndMtimeDetected guards the change check before
// the rename: another program that edits the file in place while Write
// works on its copy, keeping the size (ID3 padding) and setting the
// modification time back ("preserve timestamps"), changes the change time,
// and Write fails with ErrModified instead of replacing the other edit.
func TestInPlaceEditKeepingSizeAndMtimeDetected(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	path := makeFile(t, dir, "mp3")
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	testHookAfterCopy = func(tmp string) {
		// Past the timestamp granularity of the last change before Write.
		time.Sleep(50 * time.Millisecond)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte("The Artist"))
		if i < 0 {
			t.Fatal("no artist in the file")
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("THE ARTIST"), int64(i)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	defer func() { testHookAfterCopy = nil }()
	err := Write(path, map[string]string{"nom_version": "x"})
	if !errors.Is(err, ErrModified) {
		t.Errorf("Write = %v, want ErrModified", err)
	}
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("THE ARTIST")) {
		t.Error("the other program's edit was lost")
	}
	noTemps(t, dir)
}

// TestContentNotName: a FLAC file named .mp3 is written as FLAC.
func TestContentNotName(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	src := makeFile(t, dir, "flac")
	path := filepath.Join(dir, "misnamed.mp3")
	if err := os.Rename(src, path); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"mood-loose": "happy; party", "nom_version": "v"}
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	if f, _ := Detect(path); f != FLAC {
		t.Errorf("Detect = %v", f)
	}
	p := probe(t, path, FLAC)
	if p.ours["NOM_MOOD_LOOSE"] != "happy; party" {
		t.Errorf("ffprobe: %v", p.ours)
	}
	if got, _ := Read(path); !maps.Equal(got, want) {
		t.Errorf("Read = %v", got)
	}
}

func TestSymlinkOwnerMode(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	target := makeFile(t, dir, "m4a")
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown(target, 4242, 4343); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.m4a")
	if err := os.Symlink(filepath.Base(target), link); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"nom_version": "v"}
	if err := Write(link, want); err != nil {
		t.Fatal(err)
	}
	if li, _ := os.Lstat(link); li.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if got, _ := Read(target); !maps.Equal(got, want) {
		t.Errorf("target reads %v", got)
	}
	st, _ := os.Stat(target)
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if s := st.Sys().(*syscall.Stat_t); root && (s.Uid != 4242 || s.Gid != 4343) {
		t.Errorf("owner %d:%d, want 4242:4343", s.Uid, s.Gid)
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ key, vorbis string }{
		{"mood-strict", "NOM_MOOD_STRICT"},
		{"nom_version", "NOM_NOM_VERSION"},
		{"not_happy_musicnn_mood_happy", "NOM_NOT_HAPPY_MUSICNN_MOOD_HAPPY"},
		{"a.b c", "NOM_A_B_C"},
	} {
		if got := VorbisName(c.key); got != c.vorbis {
			t.Errorf("VorbisName(%q) = %q, want %q", c.key, got, c.vorbis)
		}
	}
	if FileName(MP3, "mood-loose") != "nom:mood-loose" || FileName(MP4, "x") != "----:com.apple.iTunes:nom:x" || FileName(Opus, "x") != "NOM_X" {
		t.Error("FileName")
	}
	// Every key of core/tags reads back from its Vorbis name.
	for _, k := range tags.Keys() {
		if got := keyOf(FLAC, VorbisName(k)); got != k {
			t.Errorf("keyOf(%s) = %q, want %q", VorbisName(k), got, k)
		}
		if got := keyOf(MP3, FileName(MP3, k)); got != k {
			t.Errorf("keyOf mp3 %q", got)
		}
		if got := keyOf(MP4, FileName(MP4, k)); got != k {
			t.Errorf("keyOf mp4 %q", got)
		}
	}
	if got := keyOf(Vorbis, "nom_custom_key"); got != "custom_key" {
		t.Errorf("unknown Vorbis key reads %q", got)
	}
}

// TestVorbisHyphen: a key outside core/tags with a '-' reads back from a
// Vorbis comment with '_' (documented), and Write knows it: writing the same
// set again is a no-op, not an error.
func TestVorbisHyphen(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	path := makeFile(t, dir, "opus")
	in := map[string]string{"my-key": "1", "mood-regular": "sad"}
	for range 2 {
		if err := Write(path, in); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"my_key": "1", "mood-regular": "sad"}
	if got, _ := Read(path); !maps.Equal(got, want) {
		t.Errorf("Read = %v, want %v", got, want)
	}
}

// TestLargeMoves grows the tag block by far more than the audio in front of
// which it sits, then shrinks it again, on files larger than the shim's 1 MiB
// move buffer: the audio stays bit-identical each time.
func TestLargeMoves(t *testing.T) {
	needTools(t)
	for _, c := range []struct {
		kind, codec string
		f           Format
	}{{"mp3", "libmp3lame", MP3}, {"flac", "flac", FLAC}, {"ogg", "libvorbis", Vorbis}, {"m4a", "aac", MP4}} {
		t.Run(c.kind, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "noise."+c.kind)
			run(t, "ffmpeg", "-v", "error", "-f", "lavfi", "-i", "anoisesrc=d=60:a=0.5", "-c:a", c.codec, "-b:a", "192k",
				"-metadata", "title=Noise", path)
			if st, _ := os.Stat(path); st.Size() < 1<<20 {
				t.Fatalf("fixture only %d bytes", st.Size())
			}
			before := snap(t, path, c.f)
			for _, set := range []map[string]string{
				{"nom_version": "v1", "top_tags": strings.Repeat("indie rock; ", 300<<10/12)},
				{"nom_version": "v2"},
				{"nom_version": "v3", "top_tags": strings.Repeat("jazz; ", 1500<<10/6)},
				{},
			} {
				if err := Write(path, set); err != nil {
					t.Fatal(err)
				}
				after := snap(t, path, c.f)
				if after.decoded != before.decoded || after.packets != before.packets || !maps.Equal(after.probe.others, before.probe.others) {
					t.Fatalf("after writing %d bytes of tags: audio or other tags changed: %s %s %v → %s %s %v", len(set["top_tags"]),
						before.decoded, before.packets, before.probe.others, after.decoded, after.packets, after.probe.others)
				}
				if got, _ := Read(path); !maps.Equal(got, set) {
					t.Fatalf("Read returns %d tags, want %d", len(got), len(set))
				}
			}
		})
	}
}

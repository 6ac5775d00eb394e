package realproc

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

type instance struct {
	name, addr string
	cmd        *exec.Cmd
	log        syncbuf.Buffer
}

func startServe(t *testing.T, name, lib, data, db string) *instance {
	t.Helper()
	in := &instance{name: name, addr: freeAddr(t)}
	in.cmd = exec.Command(binary, "serve", "--node", name, "--library-root", lib, "--data-dir", data, "--db", "sqlite:"+db,
		"--http-addr", in.addr, "--workers", "2", "--analyzer", "script:"+scenario("pause-resume.yaml"),
		"--frame-interval", "200ms", "--stale-after", "1s", "--hang-after", "3s", "--check-interval", "100ms",
		"--idle-poll-min", "100ms", "--idle-poll-max", "500ms", "--lease-ttl", "3s", "--cleanup-period", "1s")
	in.cmd.Stderr = &in.log
	in.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.cmd.Process.Kill(); _ = in.cmd.Wait() })
	return in
}

type hostInfo struct {
	WorkerEnabled bool `json:"worker_enabled"`
	Workers       []struct {
		Component, Status, Phase string
		PID                      int `json:"pid"`
		FilesProcessed           int `json:"files_processed"`
	} `json:"workers"`
	Library struct{ Total, Tagged, Claimed int } `json:"library"`
}

func (in *instance) info(t *testing.T) (hostInfo, bool) {
	var hi hostInfo
	resp, err := http.Get("http://" + in.addr + "/api/v1/info")
	if err != nil {
		return hi, false
	}
	defer resp.Body.Close()
	return hi, json.NewDecoder(resp.Body).Decode(&hi) == nil
}

func (in *instance) processed(t *testing.T) int {
	hi, _ := in.info(t)
	n := 0
	for _, w := range hi.Workers {
		n += w.FilesProcessed
	}
	return n
}

// Two main processes share one SQLite store: they split the library; pause
// from one pauses both; when one's whole process tree is killed, the other
// finishes its files after the leases expire, and no file is tagged twice.
func TestTwoInstancesShareOneStore(t *testing.T) {
	lib, dir := audioDir(t, 80), t.TempDir()
	db := filepath.Join(dir, "shared.db")
	a := startServe(t, "a", lib, filepath.Join(dir, "a"), db)
	b := startServe(t, "b", lib, filepath.Join(dir, "b"), db)
	eventually.True(t, 20*time.Second, "both instances tagging", func() bool { return a.processed(t) > 0 && b.processed(t) > 0 })
	t.Logf("split so far: a %d, b %d", a.processed(t), b.processed(t))

	// Pause from a pauses b's workers too.
	if resp, err := http.Post("http://"+a.addr+"/api/v1/workers/pause", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("pause via a: %v %v", err, resp)
	}
	eventually.True(t, 5*time.Second, "b's workers paused by a's request", func() bool {
		hi, ok := b.info(t)
		if !ok || hi.WorkerEnabled {
			return false
		}
		for _, w := range hi.Workers {
			if w.Phase != "paused" {
				return false
			}
		}
		return true
	})
	if resp, err := http.Post("http://"+b.addr+"/api/v1/workers/resume", "", nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("resume via b: %v %v", err, resp)
	}
	eventually.True(t, 5*time.Second, "b busy again", func() bool {
		hi, _ := b.info(t)
		for _, w := range hi.Workers {
			if w.Phase == "processing" {
				return true
			}
		}
		return false
	})

	// Kill b's whole process tree: its main process and its workers.
	hi, _ := b.info(t)
	_ = syscall.Kill(b.cmd.Process.Pid, syscall.SIGKILL)
	for _, w := range hi.Workers {
		if w.PID > 0 {
			_ = syscall.Kill(w.PID, syscall.SIGKILL)
		}
	}
	killed := time.Now()
	eventually.True(t, 60*time.Second, "a to finish the whole library, b's files included", func() bool {
		hi, ok := a.info(t)
		return ok && hi.Library.Tagged == hi.Library.Total && hi.Library.Claimed == 0
	})
	t.Logf("a finished %s after b was killed", time.Since(killed).Round(100*time.Millisecond))

	sdb, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var files, twice int
	if err := sdb.QueryRow(`SELECT COUNT(*), COALESCE(SUM(writes > 1), 0) FROM file_tags`).Scan(&files, &twice); err != nil {
		t.Fatal(err)
	}
	if files != 80 || twice != 0 {
		t.Errorf("%d files tagged, %d of them more than once; want 80 and 0", files, twice)
	}
	if t.Failed() {
		t.Logf("instance a log:\n%s", a.log.String())
	}
}

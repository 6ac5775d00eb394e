package realproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomarr/nomarr/internal/eventually"
	"github.com/nomarr/nomarr/internal/syncbuf"
)

// TestScanRetriedAfterStoreOutage: `serve` starts while its store cannot
// be opened (a file where the store's directory goes), so its first
// library scan fails. Once the store is back, the scan is tried again (5 s
// after a first failure), well before the next rescan_interval (1 h by
// default), and the library is tagged.
func TestScanRetriedAfterStoreOutage(t *testing.T) {
	lib, data, addr := audioDir(t, 5), t.TempDir(), freeAddr(t)
	dir := filepath.Join(data, "store")
	if err := os.WriteFile(dir, []byte("x"), 0o444); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "serve", "--analyzer", "noop", "--data-dir", data, "--db", "sqlite:"+filepath.Join(dir, "nomarr.db"),
		"--library-root", lib, "--http-addr", addr, "--workers", "1", "--frame-interval", "200ms", "--check-interval", "100ms",
		"--idle-poll-min", "100ms", "--idle-poll-max", "500ms")
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually.True(t, 10*time.Second, "the scan to fail on the store", func() bool { return strings.Contains(errb.String(), "scan failed") })
	if err := os.Remove(dir); err != nil { // the store comes back
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var info apiInfo
	defer func() {
		if t.Failed() {
			t.Logf("library %+v, store_error %q\n%s", info.Library, info.StoreError, errb.String())
		}
	}()
	eventually.True(t, 20*time.Second, "the 5 files scanned and tagged once the store came back", func() bool {
		info, _ = getInfo(t, addr)
		return info.StoreError == "" && info.Library.Total == 5 && info.Library.Tagged == 5
	})
}

// TestStatusCreatesNoDatabase: `nomarr status` without a daemon, given a
// SQLite store that is not there (a mistyped --db), says so and exits 1;
// looking creates nothing.
func TestStatusCreatesNoDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "typo.db")
	out, err := exec.Command(binary, "status", "--db", "sqlite:"+db, "--http-addr", "127.0.0.1:1").CombinedOutput()
	if _, serr := os.Stat(db); serr == nil {
		t.Errorf("status created %s:\n%s", db, out)
	}
	if err == nil || !strings.Contains(string(out), "no store at "+db) {
		t.Errorf("status on a missing database: %v\n%s", err, out)
	}
}

package tagwrite

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nomarr/nomarr/internal/unprivileged"
)

// ownerDirEnv names, for the rerun as an unprivileged user, the folder
// TestOwnedByAnotherUser prepared as root.
const ownerDirEnv = "NOMARR_TAGWRITE_OWNER_DIR"

// Owners the prepared files are given: a user and a group other than the
// unprivileged rerun's (unprivileged.Nobody, in no other group).
const (
	otherUID = 4242
	otherGID = 4343
)

// ownerCases are the prepared files (each in a folder of its own): owner,
// group, file and folder modes, and whether the unprivileged process must
// be refused with ErrOwner.
var ownerCases = []struct {
	name      string
	uid, gid  int
	mode      os.FileMode
	dirGID    int
	dirMode   os.FileMode
	refused   bool
	wantGroup int // the group the written file keeps
}{
	{"another user, group-writable", otherUID, unprivileged.Nobody, 0o664, 0, 0o777, true, 0},
	{"own file, another group", unprivileged.Nobody, otherGID, 0o666, 0, 0o777, true, 0},
	{"own file, group of a set-group-ID folder", unprivileged.Nobody, otherGID, 0o644, otherGID, 0o777 | os.ModeSetgid, false, otherGID},
	{"own file and group", unprivileged.Nobody, unprivileged.Nobody, 0o644, 0, 0o777, false, unprivileged.Nobody},
}

// TestOwnedByAnotherUser guards that a file the process may write but whose
// owner or group its copy cannot keep (not root; the file belongs to
// another user, or to a group the process is not in) fails at once and
// for good: Writable and Write return an error matching ErrOwner and
// ErrReadOnly (a job then fails it as read-only before its analysis, not
// after it, again and again), the file is left as it is, and a failed
// chown of the copy matches ErrOwner too. A group that a set-group-ID
// folder gives new files is kept without a chown and is not refused. Only
// root can prepare files owned by others: run as root, the test prepares
// them and reruns itself as uid 65534.
func TestOwnedByAnotherUser(t *testing.T) {
	needTools(t)
	if dir := os.Getenv(ownerDirEnv); dir != "" && os.Geteuid() != 0 {
		checkOwners(t, dir)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to prepare files owned by another user: run the tests as root " +
			"(the test then reruns itself as uid 65534 through internal/unprivileged)")
	}
	base, err := os.MkdirTemp("", "nomarr-owner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	src := makeFile(t, t.TempDir(), "mp3")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ownerCases {
		dir := filepath.Join(base, string(rune('a'+i)))
		path := filepath.Join(dir, "x.mp3")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, err := range []error{os.Chown(dir, 0, c.dirGID), os.Chmod(dir, c.dirMode),
			os.Chown(path, c.uid, c.gid), os.Chmod(path, c.mode)} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Setenv(ownerDirEnv, base)
	unprivileged.Rerun(t, "^TestOwnedByAnotherUser$")
}

// checkOwners is TestOwnedByAnotherUser as the unprivileged user, on the
// files prepared in base.
func checkOwners(t *testing.T, base string) {
	want := map[string]string{"nom_version": "v"}
	for i, c := range ownerCases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(base, string(rune('a'+i)))
			path := filepath.Join(dir, "x.mp3")
			if !c.refused {
				if err := Writable(path); err != nil {
					t.Fatalf("Writable = %v", err)
				}
				if err := Write(path, want); err != nil {
					t.Fatalf("Write = %v", err)
				}
				if got, _ := Read(path); !maps.Equal(got, want) {
					t.Errorf("Read = %v", got)
				}
				st, _ := os.Stat(path)
				if s := st.Sys().(*syscall.Stat_t); int(s.Uid) != c.uid || int(s.Gid) != c.wantGroup {
					t.Errorf("owner %d:%d, want %d:%d", s.Uid, s.Gid, c.uid, c.wantGroup)
				}
				return
			}
			before := sha(t, path)
			for name, err := range map[string]error{"Writable": Writable(path), "Write": Write(path, want)} {
				if !errors.Is(err, ErrOwner) || !errors.Is(err, ErrReadOnly) {
					t.Errorf("%s = %v, want ErrOwner (and ErrReadOnly)", name, err)
				}
			}
			if sha(t, path) != before {
				t.Error("the file changed")
			}
			noTemps(t, dir)

			// The chown of the copy, the check aside.
			orig, st, err := openRegular(path)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			tmp, err := os.CreateTemp(dir, TempPrefix+"*")
			if err != nil {
				t.Fatal(err)
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			if err := copyInto(tmp, orig, st); !errors.Is(err, ErrOwner) || !errors.Is(err, syscall.EPERM) {
				t.Errorf("copyInto = %v, want ErrOwner wrapping EPERM", err)
			}
		})
	}
}

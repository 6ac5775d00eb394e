package app

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// homeOf says the name and home directory of the user this process runs
// as, from the user database (os/user: /etc/passwd, or NSS with cgo).
type homeOf func() (name, home string, err error)

// accountHome reads the current user's entry of the user database.
func accountHome() (string, string, error) {
	u, err := user.Current()
	if err != nil {
		return "", "", err
	}
	return u.Username, u.HomeDir, nil
}

// defaultDataDir is data_dir when no source sets it, from the first of:
//
//   - $STATE_DIRECTORY, the directory systemd made for a unit with
//     StateDirectory= (its first, when it names several): the store is
//     kept in it, not in a nomarr folder below it;
//   - $XDG_DATA_HOME/nomarr;
//   - $HOME/.local/share/nomarr;
//   - <home>/.local/share/nomarr, with home the directory the user
//     database gives the user (as a login shell would set HOME), when that
//     directory exists: `env -i nomarr tag` keeps the store where the same
//     command with HOME set would;
//
// a variable that is empty or not an absolute path is passed over (the
// XDG base directory rules). With none of them it is an error that says
// what was tried and names --data-dir: never the working directory,
// which would put a store wherever the command happened to start.
func defaultDataDir(getenv func(string) string, account homeOf) (string, error) {
	if v, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(v) {
		return filepath.Clean(v), nil
	}
	if v := getenv("XDG_DATA_HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, "nomarr"), nil
	}
	if v := getenv("HOME"); filepath.IsAbs(v) {
		return filepath.Join(v, ".local", "share", "nomarr"), nil
	}
	name, home, err := account()
	if err != nil {
		return "", fmt.Errorf("data_dir: HOME is not set and the user database does not say this user's home (%v); "+
			"set --data-dir (or NOMARR_DATA_DIR, or data_dir in the config file) to the folder for the store", err)
	}
	if fi, err := os.Stat(home); err == nil && fi.IsDir() && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "share", "nomarr"), nil
	}
	if home == "" {
		home = "none"
	}
	return "", fmt.Errorf("data_dir: HOME is not set and %s has no home folder (the user database says %s); "+
		"set --data-dir (or NOMARR_DATA_DIR, or data_dir in the config file) to the folder for the store", name, home)
}

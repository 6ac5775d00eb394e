package config

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
)

// Host is what this host offers workers, as CheckWorkers takes it.
type Host struct {
	// CPUs is runtime.GOMAXPROCS(0): the CPUs of the affinity mask,
	// lowered to the cgroup's CPU limit (or the GOMAXPROCS environment
	// variable where set).
	CPUs int
	// MemAvailable is the memory available in bytes (memAvailable); 0 when
	// it cannot be read.
	MemAvailable uint64
}

// HostResources reads this host's CPUs and available memory. With
// ReadFile it is the only I/O of package config; CheckWorkers decides on
// its numbers without reading anything, so the decision is tested with
// any host.
func HostResources() Host {
	return Host{CPUs: runtime.GOMAXPROCS(0), MemAvailable: memAvailable(os.DirFS("/"))}
}

// noLimit: a cgroup v1 limit at or above this is "no limit" (the kernel
// writes 2^63 rounded down to a page).
const noLimit = 1 << 62

// memAvailable is /proc/meminfo's MemAvailable, lowered to what this
// process's cgroup memory limits leave (a container, a systemd MemoryMax),
// read from root (the file system's root). A cgroup leaves its limit less
// its usage that is not reclaimable: usage less inactive file cache. Every
// level of the process's cgroup path counts (a parent's limit binds its
// children), cgroup v2 and v1 alike; where the path is not mounted (a
// container that sees its own cgroup as the root) the root's files are
// read. A limit already used up reads as 1 byte, never as 0, which means
// unknown.
func memAvailable(root fs.FS) uint64 {
	avail := meminfoAvailable(root)
	for _, dir := range cgroupDirs(root) {
		left, ok := cgroupLeft(root, dir)
		if ok && (avail == 0 || left < avail) {
			avail = max(left, 1)
		}
	}
	return avail
}

// meminfoAvailable is MemAvailable of proc/meminfo in bytes, 0 if absent.
func meminfoAvailable(root fs.FS) uint64 {
	data, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) == 3 && f[0] == "MemAvailable:" && f[2] == "kB" {
			if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupDir is a directory of cgroup memory files, with the names of its
// files: v2 and v1 name them differently.
type cgroupDir struct {
	dir, limit, usage, inactive string
}

// cgroupDirs lists the memory cgroup directories of this process, from
// its own cgroup up to the root, for v2 and for v1's memory controller.
func cgroupDirs(root fs.FS) []cgroupDir {
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return nil
	}
	var dirs []cgroupDir
	for line := range strings.Lines(string(data)) {
		id, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		var base cgroupDir
		switch {
		case id == "0" && controllers == "":
			base = cgroupDir{"sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"}
		case hasController(controllers, "memory"):
			base = cgroupDir{"sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}
		default:
			continue
		}
		mounted := base
		mounted.dir = path.Join(base.dir, p)
		if strings.Contains(p, "..") || !exists(root, path.Join(mounted.dir, base.limit)) {
			dirs = append(dirs, base) // the cgroup is not mounted under its path: a container's own root
			continue
		}
		for d := mounted.dir; strings.HasPrefix(d, base.dir); d = path.Dir(d) {
			level := base
			level.dir = d
			dirs = append(dirs, level)
		}
	}
	return dirs
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

func exists(root fs.FS, name string) bool {
	_, err := fs.Stat(root, name)
	return err == nil
}

// cgroupLeft is what the limit of the cgroup in d leaves: the limit less
// usage less inactive file cache. ok is false without a limit.
func cgroupLeft(root fs.FS, d cgroupDir) (left uint64, ok bool) {
	limit, ok := readUint(root, path.Join(d.dir, d.limit))
	if !ok || limit >= noLimit {
		return 0, false
	}
	usage, _ := readUint(root, path.Join(d.dir, d.usage))
	if stat, err := fs.ReadFile(root, path.Join(d.dir, "memory.stat")); err == nil {
		for line := range strings.Lines(string(stat)) {
			if k, v, _ := strings.Cut(strings.TrimSpace(line), " "); k == d.inactive {
				if n, err := strconv.ParseUint(v, 10, 64); err == nil {
					usage -= min(n, usage)
				}
			}
		}
	}
	if usage >= limit {
		return 0, true
	}
	return limit - usage, true
}

// readUint reads a file holding one unsigned number; "max" and anything
// else unreadable is not ok.
func readUint(root fs.FS, name string) (uint64, bool) {
	data, err := fs.ReadFile(root, name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	return n, err == nil
}

package config

import (
	"runtime"
	"testing"
	"testing/fstest"
)

const gib = 1 << 30

// file is a fstest.MapFS entry holding text.
func file(text string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(text)} }

// TestMemAvailable guards how the memory available to workers is read:
// /proc/meminfo's MemAvailable, lowered to what the process's cgroup limit
// leaves (the limit less the usage that is not reclaimable cache), at any
// level of the cgroup tree, in cgroup v2 and v1; 0 when nothing can be
// read, so that CheckWorkers skips the memory bound.
func TestMemAvailable(t *testing.T) {
	meminfo := file("MemTotal:       24684092 kB\nMemFree:        20512532 kB\nMemAvailable:   20971520 kB\n") // 20 GiB
	v2self := file("0::/system.slice/nomarr.service\n")
	for _, c := range []struct {
		name string
		fs   fstest.MapFS
		want uint64
	}{
		{"nothing readable", fstest.MapFS{}, 0},
		{"meminfo without MemAvailable", fstest.MapFS{"proc/meminfo": file("MemTotal: 1000 kB\n")}, 0},
		{"meminfo only", fstest.MapFS{"proc/meminfo": meminfo}, 20 * gib},
		{"v2, no limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": v2self,
			"sys/fs/cgroup/system.slice/nomarr.service/memory.max":     file("max\n"),
			"sys/fs/cgroup/system.slice/nomarr.service/memory.current": file("1073741824\n")}, 20 * gib},
		{"v2, limit less usage less inactive cache", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": v2self,
			"sys/fs/cgroup/system.slice/nomarr.service/memory.max":     file("2147483648\n"),
			"sys/fs/cgroup/system.slice/nomarr.service/memory.current": file("1610612736\n"),
			"sys/fs/cgroup/system.slice/nomarr.service/memory.stat":    file("anon 1\ninactive_file 536870912\nactive_file 5\n")}, 1 * gib},
		{"v2, a parent's limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": v2self,
			"sys/fs/cgroup/system.slice/nomarr.service/memory.max":     file("max\n"),
			"sys/fs/cgroup/system.slice/nomarr.service/memory.current": file("1\n"),
			"sys/fs/cgroup/system.slice/memory.max":                    file("4294967296\n"),
			"sys/fs/cgroup/system.slice/memory.current":                file("1073741824\n")}, 3 * gib},
		{"v2 in a container: the path is not mounted, the root is", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":             file("0::/docker/4651205b1ff5\n"),
			"sys/fs/cgroup/memory.max":     file("3221225472\n"),
			"sys/fs/cgroup/memory.current": file("1073741824\n")}, 2 * gib},
		{"v2, usage over the limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max":     file("1073741824\n"),
			"sys/fs/cgroup/memory.current": file("2147483648\n")}, 1},
		{"v1, no limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("4:memory:/x\n1:cpu,cpuacct:/\n"),
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": file("9223372036854771712\n"),
			"sys/fs/cgroup/memory/x/memory.usage_in_bytes": file("2970939392\n")}, 20 * gib},
		{"v1, a limit", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("4:cpuset,memory:/x\n0::/\n"),
			"sys/fs/cgroup/memory/x/memory.limit_in_bytes": file("8589934592\n"),
			"sys/fs/cgroup/memory/x/memory.usage_in_bytes": file("3221225472\n"),
			"sys/fs/cgroup/memory/x/memory.stat":           file("cache 5\ntotal_inactive_file 1073741824\n")}, 6 * gib},
		{"limit without meminfo", fstest.MapFS{"proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max":     file("1073741824\n"),
			"sys/fs/cgroup/memory.current": file("0\n")}, 1 * gib},
	} {
		if got := memAvailable(c.fs); got != c.want {
			t.Errorf("%s: memAvailable = %d, want %d", c.name, got, c.want)
		}
	}
}

// TestHostResourcesReadsThisHost guards that HostResources finds this
// host's CPUs and memory (the tests run on Linux, with /proc).
func TestHostResourcesReadsThisHost(t *testing.T) {
	h := HostResources()
	if h.CPUs != runtime.GOMAXPROCS(0) || h.MemAvailable == 0 {
		t.Errorf("HostResources() = %+v, want %d CPUs and the memory available", h, runtime.GOMAXPROCS(0))
	}
}

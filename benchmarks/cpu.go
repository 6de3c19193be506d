package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuTimes are CPU times consumed so far: by this process (getrusage,
// user + system) and by the database server's processes that serve it
// (PostgreSQL: the pool's backends, from /proc/<pid>/schedstat), so that
// other load on the machine does not count.
type cpuTimes struct {
	self, server time.Duration
	serverOK     bool // the server's figure could be read
}

func readCPU(be backend) cpuTimes {
	var t cpuTimes
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		t.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if be != nil {
		t.server, t.serverOK = be.serverCPU()
	}
	return t
}

// schedCPU returns the time the processes pids spent on a CPU, from the
// first field of /proc/<pid>/schedstat (nanoseconds), and false when one
// cannot be read (another OS, a server on another machine).
func schedCPU(pids []uint32) (time.Duration, bool) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/schedstat")
		if err != nil {
			return 0, false
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, len(pids) > 0
}

package ackgapvet

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkWholeProgram times the whole-program mode (load, SSA, VTA, the
// checks and the consumer map) on a module: ackgap itself by default, or the
// directory in ACKGAPVET_BENCH_DIR (a field-trial checkout). It reports the
// consumers and findings it saw and the process's peak resident memory
// (VmHWM, MB) so far. Run once so that the dependencies' export data is in
// the build cache, then:
//
//	go test -run '^$' -bench WholeProgram -benchtime 3x ./ackgapvet
//	ACKGAPVET_BENCH_DIR=/path/to/repo go test -run '^$' -bench WholeProgram -benchtime 3x ./ackgapvet
func BenchmarkWholeProgram(b *testing.B) {
	dir := os.Getenv("ACKGAPVET_BENCH_DIR")
	if dir == "" {
		dir = ".."
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var rep *Report
	for b.Loop() {
		var err error
		rep, err = Run(&RunConfig{Dir: dir, Env: env})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rep.Consumers)), "consumers")
	b.ReportMetric(float64(len(rep.Findings)), "findings")
	if mb := peakRSSMB(); mb > 0 {
		b.ReportMetric(mb, "peak-MB")
	}
}

// peakRSSMB reads VmHWM from /proc/self/status (Linux); 0 elsewhere.
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

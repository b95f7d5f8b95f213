package evalrun_test

import (
	"bufio"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/tests/bench/benchkit"
)

// gcTraceLine is a GODEBUG=gctrace=1 line: the cycle and its three phases' wall-clock ms.
var gcTraceLine = regexp.MustCompile(`^gc (\d+) @[\d.]+s .*?: ([\d.]+)\+([\d.]+)\+([\d.]+) ms clock`)

// TestDelaySplit tells what a PoissonStage run's delay tail is made of: it reads the run's
// dump (LENS_EVAL_DELAY_DUMP, written by BenchmarkPoissonStage) and the same run's stderr with
// GODEBUG=gctrace=1 (LENS_EVAL_GCTRACE), places every collection (from its sweep termination
// to its mark termination) on the run's clock, and compares the delay of the sends scheduled
// inside a collection with the others'. Skipped unless both are set:
//
//	GODEBUG=gctrace=1 LENS_EVAL_DELAY_DUMP=/tmp/d.txt go test -run '^$' -bench PoissonStage ... 2>/tmp/gc.txt
//	LENS_EVAL_DELAY_DUMP=/tmp/d.txt LENS_EVAL_GCTRACE=/tmp/gc.txt go test -run DelaySplit -v ./tests/bench/evalrun/
func TestDelaySplit(t *testing.T) {
	dumpPath, tracePath := os.Getenv("LENS_EVAL_DELAY_DUMP"), os.Getenv("LENS_EVAL_GCTRACE")
	if dumpPath == "" || tracePath == "" {
		t.Skip("set LENS_EVAL_DELAY_DUMP and LENS_EVAL_GCTRACE to a PoissonStage run's dump and gctrace")
	}
	type request struct{ scheduled, delayMs float64 }
	var (
		start    int64
		requests []request
		ends     = map[int]int64{} // cycle -> end of its mark termination, Unix ns
	)
	scan(t, dumpPath, func(f []string) {
		switch f[0] {
		case "start":
			start = parseInt(t, f[1])
		case "r":
			s, st := parseFloat(t, f[1]), parseFloat(t, f[2])
			requests = append(requests, request{s, (st - s) * 1000})
		case "gc":
			ends[int(parseInt(t, f[1]))] = parseInt(t, f[2])
		}
	})
	type window struct{ from, to float64 } // seconds on the run's clock
	var windows []window
	var inGCTime float64
	scan(t, tracePath, func(f []string) {
		m := gcTraceLine.FindStringSubmatch(strings.Join(f, " "))
		if m == nil {
			return
		}
		end, ok := ends[int(parseInt(t, m[1]))]
		if !ok {
			return
		}
		length := (parseFloat(t, m[2]) + parseFloat(t, m[3]) + parseFloat(t, m[4])) / 1000
		to := float64(end-start) / 1e9
		if to > 0 {
			windows = append(windows, window{to - length, to})
			inGCTime += min(length, to)
		}
	})
	if len(requests) == 0 {
		t.Fatalf("%s holds no requests", dumpPath)
	}
	inGC := func(at float64) bool {
		for _, w := range windows {
			if at >= w.from && at <= w.to {
				return true
			}
		}
		return false
	}
	var all, inside, outside []float64
	for _, r := range requests {
		all = append(all, r.delayMs)
		if inGC(r.scheduled) {
			inside = append(inside, r.delayMs)
		} else {
			outside = append(outside, r.delayMs)
		}
	}
	for _, v := range [][]float64{all, inside, outside} {
		sort.Float64s(v)
	}
	p99 := benchkit.Percentile(all, 99)
	tail, tailInGC := 0, 0
	for _, r := range requests {
		if r.delayMs >= p99 {
			tail++
			if inGC(r.scheduled) {
				tailInGC++
			}
		}
	}
	runSeconds := requests[len(requests)-1].scheduled
	t.Logf("%d requests, %d collections covering %.2f %% of the run; delay p50 %.3f p90 %.3f p99 %.3f max %.3f ms",
		len(all), len(windows), 100*inGCTime/runSeconds, benchkit.Percentile(all, 50), benchkit.Percentile(all, 90), p99, all[len(all)-1])
	t.Logf("the p99 tail: %d sends, %d of them (%.0f %%) scheduled inside a collection", tail, tailInGC, 100*float64(tailInGC)/float64(max(tail, 1)))
	for _, c := range []struct {
		name string
		v    []float64
	}{{"inside a collection", inside}, {"outside", outside}} {
		if len(c.v) > 0 {
			t.Logf("%-20s %6d sends: delay p50 %.3f p90 %.3f p99 %.3f ms", c.name, len(c.v),
				benchkit.Percentile(c.v, 50), benchkit.Percentile(c.v, 90), benchkit.Percentile(c.v, 99))
		}
	}
}

func scan(t *testing.T, path string, line func(fields []string)) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) > 0 {
			line(fields)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func parseInt(t *testing.T, s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseFloat(t *testing.T, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

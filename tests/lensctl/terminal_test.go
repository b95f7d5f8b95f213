package lensctl_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"

	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/state"
)

// buildLensctl builds the lensctl binary into a temporary directory.
func buildLensctl(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lensctl")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/lensfn/lensfn/deploy/lensctl/cmd/lensctl").CombinedOutput(); err != nil {
		t.Fatalf("go build lensctl: %v\n%s", err, out)
	}
	return bin
}

// screen is a terminal of a fixed width, enough of one to replay what lensctl writes: printable
// characters, carriage return, newline, and the CSI sequences it uses (erase in line; the rest,
// such as colours, are ignored). It counts the times a line ran past the right edge.
type screen struct {
	cols     int
	rows     [][]rune
	row, col int
	wrapped  int
}

var csi = regexp.MustCompile(`^\x1b\[[0-9;?]*[ -/]*[@-~]`)

func (s *screen) write(out string) {
	for len(out) > 0 {
		if m := csi.FindString(out); m != "" {
			if strings.HasSuffix(m, "K") {
				s.line()
				from := s.col
				if m == "\x1b[2K" {
					from = 0
				}
				for i := from; i < s.cols; i++ {
					s.rows[s.row][i] = ' '
				}
			}
			out = out[len(m):]
			continue
		}
		r, size := utf8.DecodeRuneInString(out)
		out = out[size:]
		switch r {
		case '\r':
			s.col = 0
		case '\n':
			s.row++
		case '\x1b', '\a', '\b':
		default:
			if s.col == s.cols { // the line ran past the edge: the terminal wraps it
				s.wrapped++
				s.row, s.col = s.row+1, 0
			}
			s.line()
			s.rows[s.row][s.col] = r
			s.col++
		}
	}
}

// line makes sure the cursor's row exists.
func (s *screen) line() {
	for len(s.rows) <= s.row {
		s.rows = append(s.rows, []rune(strings.Repeat(" ", s.cols)))
	}
}

func (s *screen) lines() []string {
	out := make([]string, len(s.rows))
	for i, r := range s.rows {
		out[i] = strings.TrimRight(string(r), " ")
	}
	return out
}

// barLine is progressbar's line: the percentage, then the bar between rules.
var barLine = regexp.MustCompile(`^\s*\d+% \|[█ ]+\|`)

// TestWatchFitsTheTerminal watches a benchmark run through the built lensctl in pseudo-terminals
// 80, 100 and 160 columns wide: no line is wider than the terminal, each update redraws the one
// progress line, the bar shows and ends full, the phase is named once and nothing is left over
// after the bar; the final tables fit too.
func TestWatchFitsTheTerminal(t *testing.T) {
	bin := buildLensctl(t)
	es := newEvalStack(t)
	for _, cols := range []int{80, 100, 160} {
		id := es.createRun(t)
		env := []string{"LENS_API=" + es.url, "LENS_TOKEN=" + es.token, "HOME=" + t.TempDir(), "TERM=xterm"}
		cmd, tty, raw, copied := startInTerminal(t, bin, env, cols, "eval", "runs", "watch", id)
		time.Sleep(300 * time.Millisecond) // watching the queued run
		// The runner prepares its monitoring (phase and message alike), then benchmarks.
		if _, err := es.runs.Transition(context.Background(), id, []string{evalrun.StatusQueued}, evalrun.StatusRunning, state.Fence{}, func(r *evalrun.Run) error {
			r.Phase, r.ProgressMessage, r.ProgressPercent = evalrun.Ptr("preparing-monitoring"), evalrun.Ptr("preparing-monitoring"), evalrun.Ptr(2.0)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		es.finishRun(t, id, evalrun.StatusSucceeded, 100)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%d columns: %v\n%s", cols, err, raw.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%d columns: the watch did not end", cols)
		}
		<-copied
		tty.Close()

		out := raw.String()
		sc := &screen{cols: cols}
		sc.write(out)
		lines := sc.lines()
		shown := strings.Join(lines, "\n")
		if sc.wrapped > 0 {
			t.Errorf("%d columns: %d lines ran past the edge:\n%s", cols, sc.wrapped, shown)
		}
		var bars []string
		for _, l := range lines {
			if barLine.MatchString(l) {
				bars = append(bars, l)
			}
		}
		// Every update was drawn over the same line: several renders, one line on the screen.
		if renders := strings.Count(out, "\r"); len(bars) != 1 || renders < 4 {
			t.Fatalf("%d columns: %d bar lines on the screen after %d renders:\n%s", cols, len(bars), renders, shown)
		}
		bar := bars[0]
		if !strings.HasPrefix(strings.TrimSpace(bar), "100% |") || strings.Count(bar, "█") < barWidth(cols)-1 || !strings.Contains(bar, "succeeded") {
			t.Errorf("%d columns: the bar does not end full and succeeded: %q", cols, bar)
		}
		// Nothing is left after the bar's elapsed time and description.
		if strings.Count(bar, "]") != 1 || strings.Contains(shown, "s] s]") || !strings.HasSuffix(bar, "succeeded") {
			t.Errorf("%d columns: leftovers on the bar's line: %q", cols, bar)
		}
		plain := csi.ReplaceAllString(out, "")
		for _, twice := range []string{"preparing-monitoring: preparing-monitoring", "preparing-monitoring preparing-monitoring", "matrix-0: matrix-0", "matrix-0 matrix-0"} {
			if strings.Contains(plain, twice) {
				t.Errorf("%d columns: the phase is named twice (%q)", cols, twice)
			}
		}
		if !strings.Contains(plain, "running preparing-monitoring") || !strings.Contains(plain, "running matrix-0: 4 of 8") {
			t.Errorf("%d columns: the updates are not shown:\n%s", cols, plain)
		}
		// The final tables are on the screen, within the width (checked above), numbers rounded.
		if !strings.Contains(shown, "throughput_tps") || !strings.Contains(shown, id[:8]) || regexp.MustCompile(`\d\.\d{5,}`).MatchString(shown) {
			t.Errorf("%d columns: final tables:\n%s", cols, shown)
		}
	}
}

// barWidth is lensctl's bar width on a terminal of cols columns (a fifth, 10 to 40).
func barWidth(cols int) int { return min(max(cols/5, 10), 40) }

// startInTerminal starts the built lensctl in a pseudo-terminal cols wide; what it writes
// collects in the buffer until copied closes (after lensctl exits).
func startInTerminal(t *testing.T, bin string, env []string, cols int, args ...string) (*exec.Cmd, *os.File, *bytes.Buffer, chan struct{}) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: uint16(cols)})
	if err != nil {
		t.Fatal(err)
	}
	raw := &bytes.Buffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(raw, tty) // ends with EIO when lensctl exits
	}()
	return cmd, tty, raw, copied
}

// runInTerminal runs the built lensctl in a pseudo-terminal cols wide and returns the screen.
func runInTerminal(t *testing.T, bin string, env []string, cols int, args ...string) []string {
	t.Helper()
	cmd, tty, raw, copied := startInTerminal(t, bin, env, cols, args...)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("lensctl %v: %v\n%s", args, err, raw.String())
	}
	<-copied
	tty.Close()
	sc := &screen{cols: cols}
	sc.write(raw.String())
	if sc.wrapped > 0 {
		t.Errorf("%d columns: %d lines ran past the edge:\n%s", cols, sc.wrapped, strings.Join(sc.lines(), "\n"))
	}
	return sc.lines()
}

// TestListsKeepIdsWholeInANarrowTerminal lists runs at 80 and 160 columns: at 80 the 36-character
// ids stay whole on one line each (they are what a user copies) because the least needed columns
// are hidden, and the table says which; at 160 every column shows.
func TestListsKeepIdsWholeInANarrowTerminal(t *testing.T) {
	bin := buildLensctl(t)
	es := newEvalStack(t)
	ids := []string{es.createRun(t), es.createRun(t)}
	env := []string{"LENS_API=" + es.url, "LENS_TOKEN=" + es.token, "HOME=" + t.TempDir(), "TERM=xterm"}
	narrow := strings.Join(runInTerminal(t, bin, env, 80, "eval", "runs", "list"), "\n")
	for _, id := range ids {
		if !strings.Contains(narrow, "│ "+id+" │") {
			t.Errorf("80 columns: run %s is not whole on one line:\n%s", id, narrow)
		}
	}
	if !strings.Contains(narrow, "hidden to fit 80 columns") || strings.Contains(narrow, "CREATED") {
		t.Errorf("80 columns: no word of what was hidden:\n%s", narrow)
	}
	wide := strings.Join(runInTerminal(t, bin, env, 160, "eval", "runs", "list"), "\n")
	if !strings.Contains(wide, "CREATED") || !strings.Contains(wide, "WORKLOAD") || strings.Contains(wide, "hidden") {
		t.Errorf("160 columns: columns hidden:\n%s", wide)
	}
}

package lensctl

import (
	"fmt"
	"io"
	"strings"

	"github.com/jedib0t/go-pretty/v6/text"
	"github.com/schollz/progressbar/v3"
)

// progress shows a watch's progress on stderr. On a terminal it is one line redrawn in place:
// percentage, bar, elapsed time, then what is happening, cut to the terminal's width (asked of
// the terminal at every update, so a resized window is followed). Otherwise (a pipe, a file,
// --no-progress) it is a line per update.
type progress struct {
	w     io.Writer
	width func() int // the terminal's columns; 0: not a terminal
	bar   *progressbar.ProgressBar
	last  string // the newest description shown
}

// progressTotal is the bar's scale: tenths of a percent.
const progressTotal = 1000

// elapsedReserve is the room kept for the elapsed time ("59m59s", "100h0m0s").
const elapsedReserve = 8

func (a *app) newProgress() *progress {
	p := &progress{w: a.errOut, width: func() int { return terminalWidth(a.errOut) }}
	if a.noProgress || p.width() == 0 {
		return p
	}
	p.bar = progressbar.NewOptions(progressTotal, progressbar.OptionSetWriter(a.errOut), progressbar.OptionSetWidth(barWidth(p.width())),
		progressbar.OptionShowDescriptionAtLineEnd(), progressbar.OptionSetElapsedTime(true), progressbar.OptionSetPredictTime(false),
		// Each render clears to the end of the line instead of overwriting with spaces, so a
		// shorter line leaves nothing behind.
		progressbar.OptionUseANSICodes(true))
	return p
}

// barWidth is the bar's width on a terminal of the given columns: a fifth, from 10 to 40.
func barWidth(columns int) int { return min(max(columns/5, 10), 40) }

// update shows percent (nil: keep the bar where it is; in lines, print none) and what is
// happening.
func (p *progress) update(percent *float64, what string) { p.show(percent, percent != nil, what) }

// count shows a share of parts finished (a workflow's cases): on the bar, and in lines only
// through what ("1 of 2 cases finished"), which says it already.
func (p *progress) count(percent float64, what string) { p.show(&percent, false, what) }

func (p *progress) show(percent *float64, linePercent bool, what string) {
	if p.bar == nil {
		if linePercent {
			what = percentText(*percent) + " " + what
		}
		if what != p.last {
			fmt.Fprintln(p.w, what)
		}
		p.last = what
		return
	}
	p.last = what
	p.bar.Describe(p.fit(what))
	if percent != nil {
		// Short of the end: a finished progressbar draws nothing more, and end still has to
		// say how it ended.
		_ = p.bar.Set(min(int(max(*percent, 0)*progressTotal/100), progressTotal-1))
	}
}

// log is a log line of the watched thing: printed in lines, left out of the bar.
func (p *progress) log(line string) {
	if p.bar == nil {
		fmt.Fprintln(p.w, line)
	}
}

// end closes the progress with how it ended (what; "" keeps the last description): on a
// terminal the bar is filled when it succeeded, left where it was otherwise, and its line kept.
// Lines need no closing line: the final status was the last update.
func (p *progress) end(filled bool, what string) {
	if p.bar == nil {
		return
	}
	if what != "" {
		p.bar.Describe(p.fit(what))
	}
	if filled {
		_ = p.bar.Finish()
	}
	fmt.Fprintln(p.w)
}

// fit cuts what to the room the bar's line leaves on the terminal. progressbar draws
// "NNN% |bar|  [elapsed] description ": the percentage (5), a space, the bar and its two rules,
// two spaces (around its empty statistics), the elapsed time in brackets, a space, the
// description and a space; one column is left free so the terminal never wraps.
func (p *progress) fit(what string) string {
	columns := p.width()
	if columns <= 0 {
		return what
	}
	room := columns - 1 - (5 + 1 + barWidth(columns) + 2 + 2 + elapsedReserve + 2 + 1 + 1)
	if room <= 1 {
		return ""
	}
	if text.StringWidthWithoutEscSequences(what) <= room {
		return what
	}
	return text.Trim(what, room-1) + "…"
}

// percentText is a percentage for people: 0.0% to 100%.
func percentText(v float64) string {
	if v >= 100 {
		return "100%"
	}
	return fmt.Sprintf("%.1f%%", v)
}

// statusText is a status event in words, each part once: the status, the phase unless the
// message already names it ("running matrix-0: 4 of 8 requests completed", not "running
// matrix-0: matrix-0: ..."), the message and the live summary.
func (ev progressEvent) statusText() string {
	if ev.succeeded() || caseFinished(ev.Status) {
		return ev.Status // what it was doing last is over
	}
	parts := []string{ev.Status}
	msg := strings.TrimSpace(ev.ProgressMessage)
	if ev.Phase != "" && !strings.HasPrefix(msg, ev.Phase) {
		parts = append(parts, ev.Phase)
	}
	s := strings.Join(parts, " ")
	if msg != "" && msg != ev.Status {
		if strings.HasPrefix(msg, ev.Phase) && ev.Phase != "" {
			s += " " + msg
		} else {
			s += ": " + msg
		}
	}
	if live := ev.liveLine(); live != "" {
		s += " | " + live
	}
	return s
}

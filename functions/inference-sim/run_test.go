package inferencesim

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestRunUsage(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), []string{"--help"}, Environment{}, &out); err != nil || !strings.Contains(out.String(), "--time-to-first-token") {
		t.Fatalf("help: %v %q", err, out.String())
	}
	out.Reset()
	err := Run(context.Background(), []string{"--max-num-seqs", "0"}, Environment{}, &out)
	if !errors.Is(err, ErrUsage) || !strings.Contains(out.String(), "--model is required") || !strings.Contains(out.String(), "--max-num-seqs must be >= 1") {
		t.Fatalf("bad command line: %v %q", err, out.String())
	}
}

package tracefixture

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// SharedDirEnv overrides where the shared material lives (default: ../shared beside the
// repository). Pointing it at an empty directory runs the suites as a fresh clone would.
const SharedDirEnv = "LENS_SHARED_DIR"

// Shared finds the real traces and remembers which cases had to go without them.
type Shared struct {
	mu      sync.Mutex
	skipped []string
	reason  string
}

// Traces returns the real traces directory (<shared>/traces) for the calling test, or
// skips it, recording its name, when the directory is missing. repoRoot is the module root.
func (s *Shared) Traces(t testing.TB, repoRoot string) string {
	t.Helper()
	dir, err := tracesDir(repoRoot)
	if err != nil {
		s.mu.Lock()
		s.skipped, s.reason = append(s.skipped, t.Name()), err.Error()
		s.mu.Unlock()
		t.Skipf("real traces not available: %v", err)
	}
	return dir
}

// TracesDir is the real traces directory, or why it is not available: for benchmarks, which
// fall back to generated traces (and say so) instead of skipping.
func TracesDir(repoRoot string) (string, error) { return tracesDir(repoRoot) }

func tracesDir(repoRoot string) (string, error) {
	shared := os.Getenv(SharedDirEnv)
	if shared == "" {
		shared = filepath.Join(repoRoot, "..", "shared")
	}
	dir := filepath.Join(shared, "traces")
	if _, err := os.Stat(filepath.Join(dir, "mooncake", "conversation_trace.jsonl")); err != nil {
		return "", fmt.Errorf("%s has no mooncake/conversation_trace.jsonl (set %s to the shared directory)", dir, SharedDirEnv)
	}
	return dir, nil
}

// Report is the one line naming what was skipped and why, or "" when nothing was. A suite's
// TestMain prints it after the run.
func (s *Shared) Report(suite string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.skipped) == 0 {
		return ""
	}
	names := append([]string(nil), s.skipped...)
	sort.Strings(names)
	return fmt.Sprintf("%s: ran on generated traces only, skipped %d real-trace cases because %s: %s",
		suite, len(names), s.reason, strings.Join(names, ", "))
}

// Main is a suite's TestMain: it runs the tests, then each of after (clean-ups such as
// stacktest.RemoveBuilt), prints Report's line when something was skipped, and exits with the
// tests' status.
func (s *Shared) Main(m *testing.M, suite string, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	if line := s.Report(suite); line != "" {
		fmt.Println(line)
	}
	os.Exit(code)
}

package fn_test

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
)

// storeEnv points a test at the real server CI provides (REDIS_URL), under a key prefix of its
// own so tests running side by side never share keys; without REDIS_URL the runtime starts an
// embedded server.
func storeEnv(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	env["REDIS_URL"] = os.Getenv("REDIS_URL")
	env["LENS_STORE_PREFIX"] = "lens:{test-" + hex.EncodeToString(b[:]) + "}:"
	return env
}

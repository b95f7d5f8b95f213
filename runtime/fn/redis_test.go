package fn_test

import (
	"os"
	"testing"
)

// redisURL is the real server CI provides, or "" for the embedded one the runtime starts itself.
func redisURL(t *testing.T) string {
	t.Helper()
	return os.Getenv("REDIS_URL")
}

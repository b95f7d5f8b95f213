package console_test

import (
	"testing"

	"github.com/lensfn/lensfn/tests/stacktest"
)

// TestMain removes the commands stacktest.Build compiled once the tests are done.
func TestMain(m *testing.M) { stacktest.Main(m) }

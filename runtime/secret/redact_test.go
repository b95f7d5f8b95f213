package secret_test

import (
	"testing"

	"github.com/lensfn/lensfn/runtime/secret"
)

func TestRedact(t *testing.T) {
	cases := []struct{ in, key, want string }{
		{`HTTP 401: invalid key SECRET-XYZ-123`, "SECRET-XYZ-123", `HTTP 401: invalid key [REDACTED]`},
		{`{"error":"got Authorization: Bearer SECRET-XYZ-123"}`, "", `{"error":"got Authorization: Bearer [REDACTED]"}`},
		{`bearer abc.def, next`, "", `bearer [REDACTED], next`},
		{`key abc appears abc`, "abc", `key abc appears abc`}, // too short to redact safely
		{`nothing here`, "SECRET", `nothing here`},
	}
	for _, tc := range cases {
		if got := secret.Redact(tc.in, tc.key); got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

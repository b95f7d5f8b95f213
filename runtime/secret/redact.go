package secret

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret in recorded text.
const Redacted = "[REDACTED]"

// bearer matches an Authorization value wherever an endpoint echoes one back.
var bearer = regexp.MustCompile(`(?i)(bearer\s+)[^\s"'\\,;]+`)

// Redact removes every occurrence of the given secrets (an endpoint's API key) and any
// "Bearer <token>" from text that is about to be recorded: an error body, a log line, an error
// message. Secrets shorter than 4 characters are left alone (they would redact ordinary words).
func Redact(text string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	if strings.Contains(strings.ToLower(text), "bearer") {
		text = bearer.ReplaceAllString(text, "${1}"+Redacted)
	}
	return text
}

package deployer

import (
	"io"
	"os"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/lensfn/lensfn/runtime/secret"
)

// excerptBytes is how much of a child's log ends up in a deployment.failed error.
const excerptBytes = 400

// excerptWindow is how much of the log's end is scrubbed before the excerpt is cut from it: a
// secret cut in half by the excerpt's start would no longer look like one, so the cut comes
// after scrubbing, far from where the window itself starts.
const excerptWindow = 8 << 10

// Credentials a child's log can hold (the router logs requests, a simulator echoes a bad flag).
// Each keeps its name and separator and loses its value, so the excerpt still says what it was.
var credentials = []*regexp.Regexp{
	// An Authorization header, whatever its scheme (Basic, Bearer, a bare key): up to the end
	// of the line or of a quoted value.
	regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)[^\r\n"']+`),
	// key=value, key: value, "key":"value" and --key=value / --key value pairs whose name says
	// secret: api_key, x-api-key, apiKey, access_token, admin-token, client_secret, password.
	regexp.MustCompile(`(?i)(\b[a-z0-9_-]*(?:api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?)[^\s"'&,;]+`),
	regexp.MustCompile(`(?i)(--?[a-z0-9-]*(?:api-?key|token|secret|password)\s+)[^\s"'&,;-][^\s"'&,;]*`),
	// A Lensfn API token (lens_<id>_<hex>), wherever it appears.
	regexp.MustCompile(`\blens_[A-Za-z0-9-]+_[0-9a-f]{32,}`),
}

// scrubCredentials replaces the credentials in a log excerpt with secret.Redacted; Bearer
// tokens anywhere go through secret.Redact, the runtime's redaction of recorded text.
func scrubCredentials(text string) string {
	for _, re := range credentials {
		if re.NumSubexp() == 0 {
			text = re.ReplaceAllLiteralString(text, secret.Redacted)
			continue
		}
		text = re.ReplaceAllString(text, "${1}"+secret.Redacted)
	}
	return secret.Redact(text)
}

// logExcerpt is the end of a child's log, credentials scrubbed, for an error message.
func logExcerpt(path string) string {
	text, ok := readTail(path, excerptWindow)
	if !ok {
		return "no log"
	}
	text = scrubCredentials(text)
	if len(text) > excerptBytes {
		text = text[len(text)-excerptBytes:]
		// Drop what the cut left of a UTF-8 sequence.
		for len(text) > 0 && !utf8.RuneStart(text[0]) {
			text = text[1:]
		}
	}
	return strings.TrimSpace(strings.ToValidUTF8(text, ""))
}

// readTail reads at most n bytes from the end of the file at path, so a large log costs no
// more than a small one.
func readTail(path string, n int64) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false
	}
	off := max(0, st.Size()-n)
	raw, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return "", false
	}
	return string(raw), true
}

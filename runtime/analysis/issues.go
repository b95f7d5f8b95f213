package analysis

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/lensfn/lensfn/runtime/loadgen"
)

// Paging limits of GET /tasks/{id}/response-code-issues (simulation-api spec).
const (
	DefaultIssueLimit = 100
	MaxIssueLimit     = 500
)

// ErrInvalidIssueQuery marks a bad status_code, offset or limit; the API answers it with a 4xx.
var ErrInvalidIssueQuery = errors.New("invalid response-code-issues query")

// StatusCodeFilter selects the records of one HTTP status, or those with none ("unknown").
type StatusCodeFilter struct {
	code    int
	unknown bool
}

// ParseStatusCodeFilter reads the status_code query parameter: an HTTP status (100-599) or
// "unknown" for requests that got no response.
func ParseStatusCodeFilter(value string) (StatusCodeFilter, error) {
	if value == "unknown" {
		return StatusCodeFilter{unknown: true}, nil
	}
	code, err := strconv.Atoi(value)
	if err != nil || code < 100 || code > 599 {
		return StatusCodeFilter{}, fmt.Errorf("%w: status_code must be an HTTP status code (100-599) or \"unknown\", got %q", ErrInvalidIssueQuery, value)
	}
	return StatusCodeFilter{code: code}, nil
}

// StatusCode is the filter's code, nil for "unknown".
func (f StatusCodeFilter) StatusCode() *int {
	if f.unknown {
		return nil
	}
	code := f.code
	return &code
}

// Matches reports whether a record's status belongs to the filter.
func (f StatusCodeFilter) Matches(status *int) bool {
	if status == nil {
		return f.unknown
	}
	return !f.unknown && *status == f.code
}

// IssuePage is the response-code-issues answer without its task_id (the API adds it, e.g. by
// embedding this struct).
type IssuePage struct {
	StatusCode *int    `json:"status_code"` // null for "unknown"
	Issues     []Issue `json:"issues"`
	Total      int64   `json:"total"` // matching records in the whole file
	Offset     int     `json:"offset"`
	Limit      int     `json:"limit"`
}

// Issue is one matching request. RequestNumber is its 1-based position among the records of
// per-request.jsonl (the artifact a user downloads); RequestID is the load engine's id (schedule
// order).
type Issue struct {
	RequestNumber    int64   `json:"request_number"`
	RequestID        int64   `json:"request_id"`
	StatusCode       *int    `json:"status_code"`
	Error            *string `json:"error"`
	StartedAtSeconds float64 `json:"started_at_seconds"`
	LatencyMs        float64 `json:"latency_ms"`
	InputTokens      float64 `json:"input_tokens"`
	OutputTokens     float64 `json:"output_tokens"`
}

// ResponseCodeIssues streams per-request.jsonl and returns the records matching filter, skipping
// offset matches and keeping at most limit (1..MaxIssueLimit), in file order, with the total
// count of matches. Memory holds one page; records are read without their metadata.
func ResponseCodeIssues(r io.Reader, filter StatusCodeFilter, offset, limit int) (IssuePage, error) {
	if offset < 0 {
		return IssuePage{}, fmt.Errorf("%w: offset must be at least 0, got %d", ErrInvalidIssueQuery, offset)
	}
	if limit < 1 || limit > MaxIssueLimit {
		return IssuePage{}, fmt.Errorf("%w: limit must be between 1 and %d, got %d", ErrInvalidIssueQuery, MaxIssueLimit, limit)
	}
	page := IssuePage{StatusCode: filter.StatusCode(), Issues: []Issue{}, Offset: offset, Limit: limit}
	var number int64
	err := ReadRecordsWithoutMetadata(r, func(rec loadgen.Record) error {
		number++
		if !filter.Matches(rec.StatusCode) {
			return nil
		}
		page.Total++
		if page.Total <= int64(offset) || len(page.Issues) >= limit {
			return nil
		}
		page.Issues = append(page.Issues, Issue{
			RequestNumber:    number,
			RequestID:        rec.RequestID,
			StatusCode:       rec.StatusCode,
			Error:            rec.Error,
			StartedAtSeconds: rec.StartedAtSeconds,
			LatencyMs:        rec.LatencyMs,
			InputTokens:      rec.InputTokens,
			OutputTokens:     rec.OutputTokens,
		})
		return nil
	})
	if err != nil {
		return IssuePage{}, err
	}
	return page, nil
}

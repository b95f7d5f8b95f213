package analysis_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/analysis"
)

func TestResponseCodeIssues(t *testing.T) {
	raw, err := os.ReadFile("testdata/small-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		code          string
		offset, limit int
		total         int64
		numbers, ids  []int64
	}{
		// The 500 is the second record (line 3: line 2 is blank) and carries request id 3.
		{"one 500", "500", 0, 100, 1, []int64{2}, []int64{3}},
		{"no status is unknown", "unknown", 0, 100, 1, []int64{5}, []int64{4}},
		{"successes are listable too", "200", 0, 100, 3, []int64{1, 3, 4}, []int64{1, 2, 5}},
		{"offset and limit page the matches", "200", 1, 1, 3, []int64{3}, []int64{2}},
		{"offset past the end gives an empty page", "200", 5, 10, 3, nil, nil},
		{"a code nobody got", "404", 0, 500, 0, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			filter, err := analysis.ParseStatusCodeFilter(tc.code)
			if err != nil {
				t.Fatal(err)
			}
			page, err := analysis.ResponseCodeIssues(strings.NewReader(string(raw)), filter, tc.offset, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if page.Total != tc.total || len(page.Issues) != len(tc.numbers) || page.Offset != tc.offset || page.Limit != tc.limit {
				t.Fatalf("page = %s", mustJSON(t, page))
			}
			for i, issue := range page.Issues {
				if issue.RequestNumber != tc.numbers[i] || issue.RequestID != tc.ids[i] || !filter.Matches(issue.StatusCode) {
					t.Errorf("issue %d = %+v, want number %d id %d", i, issue, tc.numbers[i], tc.ids[i])
				}
			}
		})
	}
}

func TestResponseCodeIssuesShape(t *testing.T) {
	f, _ := os.Open("testdata/small-run.jsonl")
	defer f.Close()
	filter, _ := analysis.ParseStatusCodeFilter("unknown")
	page, err := analysis.ResponseCodeIssues(f, filter, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(mustJSON(t, page), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"issues":[{"error":"timeout after 2s","input_tokens":100,"latency_ms":2000,"output_tokens":0,"request_id":4,"request_number":5,"started_at_seconds":1.5,"status_code":null}],"limit":100,"offset":0,"status_code":null,"total":1}`
	if canonical, _ := json.Marshal(got); string(canonical) != want {
		t.Errorf("page = %s\nwant   %s", canonical, want)
	}
	empty, _ := analysis.ResponseCodeIssues(strings.NewReader(""), filter, 0, 1)
	if raw := mustJSON(t, empty); !strings.Contains(string(raw), `"issues": []`) {
		t.Errorf("an empty page must carry issues: [], got %s", raw)
	}
}

func TestResponseCodeIssuesBadQueries(t *testing.T) {
	for _, code := range []string{"", "abc", "99", "600", "5xx", "Unknown", "200 "} {
		if _, err := analysis.ParseStatusCodeFilter(code); !errors.Is(err, analysis.ErrInvalidIssueQuery) {
			t.Errorf("status_code %q: err = %v", code, err)
		}
	}
	filter, _ := analysis.ParseStatusCodeFilter("500")
	for _, q := range [][2]int{{-1, 10}, {0, 0}, {0, analysis.MaxIssueLimit + 1}} {
		if _, err := analysis.ResponseCodeIssues(strings.NewReader(""), filter, q[0], q[1]); !errors.Is(err, analysis.ErrInvalidIssueQuery) {
			t.Errorf("offset %d limit %d: err = %v", q[0], q[1], err)
		}
	}
	if _, err := analysis.ResponseCodeIssues(strings.NewReader("{\n{"), filter, 0, 10); !errors.Is(err, analysis.ErrBadRecordLine) {
		t.Errorf("corrupt file: err = %v", err)
	}
}

// TestResponseCodeIssuesMatchesNaive: on random files, every code and page equals filtering the
// fully decoded records by hand.
func TestResponseCodeIssuesMatchesNaive(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		records, _, _ := randomRun(rng)
		var file bytes.Buffer
		for _, rec := range records {
			rec.Metadata = map[string]any{"upstream": map[string]any{"status_code": 999}} // a nested decoy
			line, _ := json.Marshal(rec)
			file.Write(line)
			file.WriteString("\n")
			if rng.IntN(10) == 0 {
				file.WriteString("\n")
			}
		}
		for _, code := range []string{"200", "201", "429", "500", "503", "unknown", "404"} {
			filter, _ := analysis.ParseStatusCodeFilter(code)
			offset, limit := rng.IntN(40), 1+rng.IntN(60)
			got, err := analysis.ResponseCodeIssues(bytes.NewReader(file.Bytes()), filter, offset, limit)
			if err != nil {
				t.Fatal(err)
			}
			want := analysis.IssuePage{StatusCode: filter.StatusCode(), Issues: []analysis.Issue{}, Offset: offset, Limit: limit}
			for i, rec := range records {
				if !filter.Matches(rec.StatusCode) {
					continue
				}
				want.Total++
				if want.Total > int64(offset) && len(want.Issues) < limit {
					want.Issues = append(want.Issues, analysis.Issue{RequestNumber: int64(i + 1), RequestID: rec.RequestID, StatusCode: rec.StatusCode,
						Error: rec.Error, StartedAtSeconds: rec.StartedAtSeconds, LatencyMs: rec.LatencyMs, InputTokens: rec.InputTokens, OutputTokens: rec.OutputTokens})
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d code %s offset %d limit %d:\ngot  %s\nwant %s", seed, code, offset, limit, mustJSON(t, got), mustJSON(t, want))
			}
		}
	}
}

func TestResponseCodeIssuesRejectsBadLines(t *testing.T) {
	filter, _ := analysis.ParseStatusCodeFilter("500")
	for name, file := range map[string]string{
		"syntax error on a non-matching line": `{"status_code":200}` + "\n" + `{"status_code":200,` + "\n" + `{"status_code":500}`,
		"status of the wrong type":            `{"status_code":"500"}`,
		"not an object":                       `{"status_code":500}` + "\n" + strconv.Quote("x"),
	} {
		_, err := analysis.ResponseCodeIssues(strings.NewReader(file), filter, 0, 10)
		if !errors.Is(err, analysis.ErrBadRecordLine) {
			t.Errorf("%s: err = %v, want ErrBadRecordLine", name, err)
		}
	}
	// A record shown on the page is decoded in full, so its bad fields are reported.
	_, err := analysis.ResponseCodeIssues(strings.NewReader(`{"status_code":500,"latency_ms":"slow"}`), filter, 0, 10)
	if !errors.Is(err, analysis.ErrBadRecordLine) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad field on a shown record: err = %v", err)
	}
}

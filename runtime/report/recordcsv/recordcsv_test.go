package recordcsv_test

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/loadgen"
	"github.com/lensfn/lensfn/runtime/report/recordcsv"
)

func TestRowsFollowTheHeaderAndNeutraliseFormulas(t *testing.T) {
	var buf bytes.Buffer
	w, err := recordcsv.NewWriter(&buf, "phase", "stage")
	if err != nil {
		t.Fatal(err)
	}
	code, ttft, msg := 503, 12.5, "=cmd|' /C calc'!A0"
	if err := w.Write(loadgen.Record{RequestID: 7, SessionID: "+s1", StatusCode: &code, Error: &msg, TTFTMs: &ttft, LatencyMs: 30}, "-warmup"); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(loadgen.Record{RequestID: 8, Successful: true}, "matrix-0", "1", "ignored"); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != strings.Join(recordcsv.Header, ",")+",phase,stage" {
		t.Fatalf("header %s", got)
	}
	first := map[string]string{}
	for i, name := range rows[0] {
		first[name] = rows[1][i]
	}
	if first["request_id"] != "7" || first["session_id"] != "'+s1" || first["status_code"] != "503" || first["error"] != "'"+msg ||
		first["ttft_ms"] != "12.5" || first["tpot_ms"] != "" || first["phase"] != "'-warmup" || first["stage"] != "" {
		t.Fatalf("first row %v", first)
	}
	if len(rows[2]) != len(rows[0]) || rows[2][len(rows[2])-2] != "matrix-0" || rows[2][3] != "" {
		t.Fatalf("second row %v (no status: empty; extra values beyond the columns dropped)", rows[2])
	}
}

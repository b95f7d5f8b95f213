package lensctl

import (
	"strings"
	"testing"

	"github.com/jedib0t/go-pretty/v6/table"
)

func TestHumanRoundsForPeople(t *testing.T) {
	for v, want := range map[any]string{14.371285274692132: "14.4", 6.706e+04: "67,060", 67060.5: "67,061", 1.125: "1.13",
		0.000123456: "0.000123", 100.0: "100", -8.4: "-8.4", 1234567.0: "1,234,567", nil: "-", 12345: "12,345", -0.0001: "-0.0001",
		0.9: "0.9", 142.22222: "142", "text": "text"} {
		if got := human(v); got != want {
			t.Errorf("human(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFitColumnsWrapsTheWidestFirst(t *testing.T) {
	rows := []table.Row{{"ID", "NAME", "NOTE"}, {"0123456789abcdef", strings.Repeat("word ", 12), "short"}}
	if caps := fitColumns(rows, 200); caps != nil {
		t.Fatalf("a narrow table was capped: %+v", caps)
	}
	caps := fitColumns(rows, 50)
	if len(caps) != 1 || caps[0].Number != 2 || caps[0].WidthMax > 50-1-16-5-9 {
		t.Fatalf("caps %+v", caps)
	}
	// Too narrow for whole words: words break, the first column still whole.
	caps = fitColumns([]table.Row{{"0123456789abcdef", "averyveryverylongword", "anotherverylongword"}}, 40)
	for _, c := range caps {
		if c.Number == 1 {
			t.Fatalf("the first column was wrapped: %+v", caps)
		}
	}
}

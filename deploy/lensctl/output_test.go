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
	if caps, _ := fitColumns(rows, 200, nil); caps != nil {
		t.Fatalf("a narrow table was capped: %+v", caps)
	}
	caps, _ := fitColumns(rows, 50, nil)
	if len(caps) != 1 || caps[0].Number != 2 || caps[0].WidthMax > 50-1-16-5-9 {
		t.Fatalf("caps %+v", caps)
	}
	// Too narrow for whole words: words break, the first column still whole.
	caps, _ = fitColumns([]table.Row{{"0123456789abcdef", "averyveryverylongword", "anotherverylongword"}}, 40, nil)
	for _, c := range caps {
		if c.Number == 1 {
			t.Fatalf("the first column was wrapped: %+v", caps)
		}
	}
}

func TestFitColumnsHidesWhatMayGoBeforeBreakingWords(t *testing.T) {
	rows := []table.Row{{"ID", "STATUS", "MODEL", "CREATED"},
		{"7f0b5883-dab2-8e6f-96de-1904fa9ff481", "succeeded", "fake-model", "2026-12-05 07:58"}}
	// 80 columns hold the id, the status and the model whole once CREATED is hidden; MODEL may
	// go too, but need not.
	caps, hidden := fitColumns(rows, 70, []int{3, 2})
	if len(hidden) != 1 || hidden[0] != 3 || len(caps) != 1 || !caps[0].Hidden || caps[0].Number != 4 {
		t.Fatalf("hidden %v, caps %+v", hidden, caps)
	}
	// Nothing to hide: the widest words break instead.
	if _, hidden := fitColumns(rows, 70, nil); hidden != nil {
		t.Fatalf("hid %v without droppable columns", hidden)
	}
	// Wide enough: nothing hidden.
	if caps, hidden := fitColumns(rows, 100, []int{3, 2}); caps != nil || hidden != nil {
		t.Fatalf("a fitting table: %+v %v", caps, hidden)
	}
}

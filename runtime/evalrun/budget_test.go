package evalrun

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/runtime/problem"
)

// TestInFlightMemoryBudget: isl x concurrency x parallelism, and its relatives (osl, a matrix's
// stages, shared-prefix and workload_yaml rate stages, a multi-turn conversation), are bounded
// by one budget; a request over it is a 422 naming the budget and the stage, and the worst
// request under it (BENCHMARKS.md's) is accepted.
func TestInFlightMemoryBudget(t *testing.T) {
	const target = `"deployment_execution_id":"a"`
	matrix := func(isl, osl, concurrency, parallelism int) string {
		return fmt.Sprintf(`{%s,"parallelism":%d,"matrix":[{"isl":128,"osl":128},{"isl":%d,"osl":%d}],"concurrency_stages":[{"concurrency":1,"num_requests":1},{"concurrency":%d,"num_requests":%d}]}`,
			target, parallelism, isl, osl, concurrency, concurrency)
	}
	yaml := func(load, data string) string {
		raw, _ := json.Marshal("api: {type: completion}\nload: " + load + "\ndata: " + data + "\n")
		return fmt.Sprintf(`{%s,"workload_yaml":%s}`, target, raw)
	}
	sharedPrefix := `{` + target + `,"shared_prefix":{"num_groups":1,"num_prompts_per_group":1,"system_prompt_len":65536,"question_len":65536,"output_len":1,"stages":[{"rate":1,"duration":1},{"rate":400,"duration":1}]}}`
	over := []struct{ name, body, loc string }{
		{"the attack: isl 131072 at concurrency 4096", matrix(131072, 1, 4096, 1), `["body","matrix","1"]`},
		{"osl counts", matrix(1, 32768, 4096, 1), `["body","matrix","1"]`},
		{"parallelism multiplies", matrix(2048, 2048, 1024, 9), `["body","matrix","1"]`},
		{"one more in flight than the worst accepted", matrix(131072, 1, 256, 1), `["body","matrix","1"]`},
		{"shared-prefix rate", sharedPrefix, `["body","shared_prefix","stages","1"]`},
		{"workload_yaml concurrency", yaml("{type: concurrent, stages: [{num_requests: 10, concurrency_level: 4096}]}",
			"{type: random, input_distribution: {min: 10, max: 131072, mean: 1000, std_dev: 10}}"), `["body","workload_yaml","stages","0"]`},
		{"workload_yaml rate", yaml("{type: constant, stages: [{rate: 10000, duration: 1}]}",
			"{type: random, input_distribution: {min: 10, max: 8192, mean: 1000, std_dev: 10}}"), `["body","workload_yaml","stages","0"]`},
	}
	for _, tc := range over {
		t.Run(tc.name, func(t *testing.T) {
			req, _, err := ParseRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			err = ValidateRequest(req)
			if err == nil {
				t.Fatal("accepted")
			}
			body := problem.BodyFor(err, "")
			detail, _ := json.Marshal(body.Detail)
			if body.Status != 422 || !strings.Contains(string(detail), "in-flight memory budget of 1024 MiB") ||
				!strings.Contains(string(detail), tc.loc) || !strings.Contains(string(detail), `"memory_budget"`) {
				t.Fatalf("%d %s", body.Status, detail)
			}
		})
	}
	// Under and at the budget: the longest requests at concurrency 255 (BENCHMARKS.md's worst
	// accepted request), and 4,096 tokens x 1,024 x 8 workers.
	for body, want := range map[string]float64{matrix(131072, 1, 255, 1): 131073 * 255, matrix(2048, 2048, 1024, 8): InFlightTokenBudget} {
		req, _, err := ParseRequest([]byte(body))
		if err == nil {
			err = ValidateRequest(req)
		}
		if err != nil {
			t.Fatalf("under the budget: %v", err)
		}
		if got := InFlightTokens(req.BenchmarkSpec); got != want || got > InFlightTokenBudget {
			t.Fatalf("in flight %v, want %v", got, want)
		}
	}
	for _, name := range NamedWorkloads() {
		req, _, _ := ParseRequest([]byte(`{` + target + `,"workload":"` + name + `","parallelism":32}`))
		if err := ValidateRequest(req); err != nil {
			t.Errorf("shipped workload %s at parallelism 32: %v", name, err)
		}
	}
	// A multi-turn session's last turn resends the conversation: its context, not one
	// question, is what a request holds.
	multi := multiTurnBody(10, 10, 1000, 1000, 1000, `{"rate":500,"duration":40}`)
	req, _, _ := ParseRequest([]byte(multi))
	if err := ValidateRequest(req); err == nil || !strings.Contains(fmt.Sprint(problem.BodyFor(err, "").Detail), "in-flight memory budget") {
		t.Fatalf("multi-turn: %v", err)
	}
}

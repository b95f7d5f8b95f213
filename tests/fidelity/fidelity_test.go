package fidelity

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

// header is the ground truth's columns, as the harness reads them.
const header = "experiment,model_hf,hardware,arch,num_layers,hidden_size,num_heads,num_kv_heads,head_dim,intermediate_size,vocab_size,num_experts,experts_per_token,dtype,tp,max_model_len,max_num_seqs,max_num_batched_tokens,block_size,kv_blocks_total_gpu,resolved_num_groups,resolved_num_prompts_per_group,system_prompt_len,question_len,output_len_max_tokens,stage_index,stage_rate_rps,stage_duration_s,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms,e2e_p99_ms,decode_interval_est_ms,prompt_len_mean,overloaded\n"

// synthetic is ground truth made by the model itself for a model outside the catalogue (a
// 1.1B Llama): the harness must read its architecture from the row, predict each stage and
// score it, with no file from outside the repository.
func synthetic(t *testing.T, measured func(stage int) string) []Experiment {
	t.Helper()
	row := func(stage int, rate string) string {
		return "tiny-run,acme/TinyLlama-1.1B,H100-SXM-80GB,LlamaForCausalLM,22,2048,32,4,64,5632,32000,0,0,bfloat16,1,2048,64,2048,16,0,5,4,50,200,100," +
			itoa(stage) + "," + rate + ",60," + measured(stage) + ",260,false\n"
	}
	exps, err := Parse(strings.NewReader(header + row(1, "30") + row(0, "5")))
	if err != nil {
		t.Fatal(err)
	}
	return exps
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestHarnessScoresAModelOutsideTheCatalogue(t *testing.T) {
	// First predict the rows, then feed the predictions back as the measurements: the MAPE
	// must be about zero (the harness scores what it predicted), and doubling every measured
	// figure must give 50 %.
	exps := synthetic(t, func(int) string { return "1,1,1,1,1,1" })
	rows, err := Score(exps, stepcost.Fitted, Options{Seeds: []uint64{4}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Row.Stage != 0 || rows[0].Row.Arch.Layers != 22 {
		t.Fatalf("rows %+v", rows)
	}
	if !(rows[1].Predicted.DecodeInterval > rows[0].Predicted.DecodeInterval) {
		t.Errorf("30 rps decodes no slower than 5 rps: %+v / %+v", rows[1].Predicted, rows[0].Predicted)
	}
	for i := range exps[0].Rows {
		p := rows[i].Predicted
		exps[0].Rows[i].Measured = Metrics{2 * p.TTFTMean, 2 * p.TTFTP90, 2 * p.E2EMean, 2 * p.E2EP90, 2 * p.E2EP99, 2 * p.DecodeInterval}
	}
	again, err := Score(exps, stepcost.Fitted, Options{Seeds: []uint64{4}})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(again)
	for i, m := range s.MAPE {
		if m < 49.9 || m > 50.1 {
			t.Errorf("%s MAPE %.2f, want 50 against doubled measurements", MetricNames[i], m)
		}
	}
	line := JSONLine(s)
	var parsed map[string]any
	if err := json.Unmarshal([]byte(line), &parsed); err != nil || parsed["rows"].(float64) != 2 || parsed["overload_correct"] != "0/0" {
		t.Errorf("JSON line %s: %v", line, err)
	}
}

func TestHarnessRefusesBrokenGroundTruth(t *testing.T) {
	for name, text := range map[string]string{
		"no stage 0":     header + "x,m,H100-SXM-80GB,L,22,2048,32,4,64,5632,32000,0,0,bfloat16,1,2048,64,2048,16,0,5,4,50,200,100,1,5,60,1,1,1,1,1,1,260,false\n",
		"bad number":     header + "x,m,H100-SXM-80GB,L,22,2048,32,4,64,5632,32000,0,0,bfloat16,1,2048,64,2048,16,0,5,4,50,200,100,0,fast,60,1,1,1,1,1,1,260,false\n",
		"bad arch":       header + "x,m,H100-SXM-80GB,L,22,2048,30,4,64,5632,32000,0,0,bfloat16,1,2048,64,2048,16,0,5,4,50,200,100,0,5,60,1,1,1,1,1,1,260,false\n",
		"missing column": "experiment,stage_index\nx,0\n",
	} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	exps, err := Parse(strings.NewReader(header + "x,m,B200,L,22,2048,32,4,64,5632,32000,0,0,bfloat16,1,2048,64,2048,16,0,5,4,50,200,100,0,5,60,1,1,1,1,1,1,260,false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Score(exps, stepcost.Fitted, Options{Seeds: []uint64{1}}); err == nil || !strings.Contains(err.Error(), "B200") {
		t.Errorf("an unknown GPU: %v", err)
	}
}

// TestShippedRowsStayWithinTheTargets guards the fit: on the shipped measurements (when
// ../shared is beside the repository) E2E mean MAPE stays within 3 % and every overloaded run
// is flagged. make fidelity prints the whole table.
func TestShippedRowsStayWithinTheTargets(t *testing.T) {
	wd, _ := os.Getwd()
	path := GroundTruthPath(wd)
	exps, err := Load(path)
	if os.IsNotExist(err) {
		t.Skipf("no ground truth at %s", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Score(exps, stepcost.Fitted, Options{Seeds: []uint64{1}})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(rows)
	t.Log(JSONLine(s))
	if s.MAPE[2] > 3 || s.OverloadCorrect != s.OverloadRows || s.FalseOverload != 0 {
		t.Errorf("E2E mean MAPE %.2f %% (target 3), overload %d/%d, false overloads %d", s.MAPE[2], s.OverloadCorrect, s.OverloadRows, s.FalseOverload)
	}
}

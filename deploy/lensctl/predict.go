package lensctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/lensfn/lensfn/events"
	"github.com/lensfn/lensfn/runtime/enginemodel"
	"github.com/lensfn/lensfn/runtime/evalrun"
	"github.com/lensfn/lensfn/runtime/predict"
)

// predictCmd runs a benchmark workload through the vLLM engine model in virtual time: the
// benchmark runner's own request schedule, the engine's scheduler, KV cache and step costs,
// and the run's metrics as a benchmark run reports them, in a fraction of a second.
func (a *app) predictCmd() *cobra.Command {
	var spec enginemodel.Spec
	var file, workloadName string
	var seed uint64
	var replicas int
	var timeout, warmup float64
	c := &cobra.Command{Use: "predict (--workload NAME | -f FILE) --model MODEL [engine flags]",
		Short: "Predict a benchmark run on a vLLM deployment with the engine model, without GPUs or a server",
		Long: `Predict runs a benchmark workload through Lensfn's model of vLLM's engine (continuous
batching, the paged KV cache with prefix caching, preemption, step times from the model's
architecture and the GPU) in virtual time, and prints the run's metrics per stage as a
benchmark run would. It needs no API: it runs here.

The workload is a named workload (--workload) or a benchmark block (-f FILE): the JSON of an
evaluation request's benchmark fields with shared_prefix, workload or workload_yaml. The engine
is a catalogue model (or a Hugging Face config.json) on a catalogue GPU (or a JSON file of one).`,
		Example: `  lensctl predict --workload chatbot_synthetic.yaml --model meta-llama/Llama-3.1-8B-Instruct
  lensctl predict -f benchmark.json --model meta-llama/Llama-2-70b-hf --tensor-parallel-size 4 --max-num-seqs 128`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("kernel-warmup-seconds") {
				spec.KernelWarmupSeconds = &warmup
			}
			eng, err := spec.Resolve(true)
			if err != nil {
				return usageError{err}
			}
			started, cpu0 := time.Now(), processCPU()
			run, name, err := a.predictWorkload(file, workloadName, seed, eng, predict.Options{Timeout: timeout, Replicas: replicas})
			if err != nil {
				return err
			}
			took := processCPU() - cpu0
			return a.printPrediction(name, eng, run, time.Since(started), took)
		}}
	f := c.Flags()
	f.StringVarP(&file, "file", "f", "", "benchmark block as JSON (shared_prefix, workload or workload_yaml), - for stdin")
	f.StringVar(&workloadName, "workload", "", "a named workload with rate stages ("+strings.Join(evalrun.NamedWorkloads(), ", ")+")")
	f.StringVar(&spec.Model, "model", "", "model: a catalogue name or the path of a Hugging Face config.json")
	f.StringVar(&spec.Hardware, "hardware", enginemodel.DefaultHardware, "GPU: a catalogue name or the path of a JSON file")
	f.IntVar(&spec.TensorParallelSize, "tensor-parallel-size", 1, "GPUs per replica")
	f.IntVar(&replicas, "replicas", 1, "replicas behind a round-robin router")
	f.IntVar(&spec.MaxNumSeqs, "max-num-seqs", enginemodel.DefaultMaxNumSeqs, "vLLM's max_num_seqs")
	f.IntVar(&spec.MaxNumBatchedTokens, "max-num-batched-tokens", enginemodel.DefaultMaxNumBatchedTokens, "vLLM's max_num_batched_tokens")
	f.IntVar(&spec.BlockSize, "block-size", enginemodel.DefaultBlockSize, "KV block size in tokens")
	f.Float64Var(&spec.GPUMemoryUtilization, "gpu-memory-utilization", enginemodel.DefaultGPUMemoryUtilization, "share of GPU memory for weights and KV cache")
	f.IntVar(&spec.KVBlocks, "kv-cache-blocks", 0, "KV cache size in blocks (default: sized from the GPU's memory)")
	f.IntVar(&spec.MaxModelLen, "max-model-len", 0, "context window (default: the model's)")
	f.BoolVar(&spec.NoPrefixCaching, "no-enable-prefix-caching", false, "turn the prefix cache off")
	f.BoolVar(&spec.NoAsyncScheduling, "no-async-scheduling", false, "turn async scheduling off")
	f.Float64Var(&warmup, "kernel-warmup-seconds", 0, "stall per kernel configuration compiled on first use (a mixture of experts' fused-MoE kernels for step sizes its CUDA graphs did not capture; default: 2 for a mixture of experts, 0 for a dense model)")
	f.Uint64Var(&seed, "seed", 1, "seed of the workload's arrivals and prompts (a benchmark run's seed)")
	f.Float64Var(&timeout, "timeout", 0, "client timeout per request in seconds (0: the workload's, else none)")
	return c
}

// predictWorkload builds the workload from -f or --workload and predicts it.
func (a *app) predictWorkload(file, name string, seed uint64, eng *enginemodel.Resolved, opt predict.Options) (*predict.Run, string, error) {
	if (file == "") == (name == "") {
		return nil, "", usageError{errors.New("give exactly one of --workload NAME and -f FILE")}
	}
	var w evalrun.Workload
	var sp *events.SharedPrefix
	if name != "" {
		var ok bool
		if w, ok = evalrun.NamedWorkload(name); !ok {
			return nil, "", usageError{fmt.Errorf("unknown workload %q: the named workloads are %s", name, strings.Join(evalrun.NamedWorkloads(), ", "))}
		}
	} else {
		raw, err := a.readBody(file)
		if err != nil {
			return nil, "", err
		}
		var b events.BenchmarkSpec
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		if err := dec.Decode(&b); err != nil {
			return nil, "", usageError{fmt.Errorf("%s: %v", file, err)}
		}
		switch {
		case b.SharedPrefix != nil:
			sp = b.SharedPrefix
			name = "shared_prefix"
		case b.WorkloadYAML != nil:
			cfg, err := evalrun.ParseWorkloadYAML(*b.WorkloadYAML)
			if err != nil {
				return nil, "", usageError{fmt.Errorf("%s: workload_yaml: %v", file, err)}
			}
			w, sp = cfg.Workload()
			name = "workload_yaml"
		case b.Workload != nil:
			var ok bool
			if w, ok = evalrun.NamedWorkload(*b.Workload); !ok {
				return nil, "", usageError{fmt.Errorf("unknown workload %q: the named workloads are %s", *b.Workload, strings.Join(evalrun.NamedWorkloads(), ", "))}
			}
			name = *b.Workload
		default:
			return nil, "", usageError{fmt.Errorf("%s names no workload: give shared_prefix, workload or workload_yaml", file)}
		}
	}
	var run *predict.Run
	var err error
	if sp != nil {
		if err := evalrun.ValidateSpec(events.BenchmarkSpec{SharedPrefix: sp}); err != nil {
			return nil, "", usageError{err}
		}
		run, err = predict.SharedPrefix(sp, seed, eng, opt)
	} else {
		run, err = predict.Named(w, seed, eng, opt)
	}
	if err != nil {
		return nil, "", usageError{err}
	}
	return run, name, nil
}

// predictionView is a prediction as -o json|yaml prints it: full precision.
type predictionView struct {
	Workload string               `json:"workload"`
	Engine   predictionEngine     `json:"engine"`
	Stages   []predictionStage    `json:"stages"`
	Total    enginemodel.Summary  `json:"total"`
	Counters enginemodel.Counters `json:"counters"`
	Timing   map[string]float64   `json:"prediction_time"`
}

type predictionEngine struct {
	Model               string  `json:"model"`
	Hardware            string  `json:"hardware"`
	TensorParallelSize  int     `json:"tensor_parallel_size"`
	Replicas            int     `json:"replicas"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	KVCacheBlocks       int     `json:"kv_cache_blocks"`
	BlockSize           int     `json:"block_size"`
	WeightsGBPerGPU     float64 `json:"weights_gb_per_gpu"`
}

type predictionStage struct {
	Rate       float64             `json:"rate"`
	Duration   float64             `json:"duration"`
	Overloaded bool                `json:"overloaded"`
	Metrics    enginemodel.Summary `json:"metrics"`
}

func (a *app) printPrediction(name string, eng *enginemodel.Resolved, run *predict.Run, wall, cpu time.Duration) error {
	v := predictionView{Workload: name, Counters: run.Prediction.Counters, Total: run.Prediction.Summarize(nil),
		Engine: predictionEngine{Model: eng.CostConfig.Model.Name, Hardware: eng.CostConfig.Hardware.Name,
			TensorParallelSize: eng.CostConfig.TensorParallelSize, Replicas: run.Replicas, MaxNumSeqs: eng.Engine.MaxNumSeqs,
			MaxNumBatchedTokens: eng.Engine.MaxNumBatchedTokens, KVCacheBlocks: eng.Engine.KVBlocks, BlockSize: eng.Engine.BlockSize,
			WeightsGBPerGPU: eng.Cost.WeightBytesPerGPU() / 1e9},
		Timing: map[string]float64{"wall_seconds": wall.Seconds(), "cpu_seconds": cpu.Seconds(), "simulated_seconds": run.Prediction.End}}
	for k, st := range run.Stages {
		s := run.Stage(k)
		v.Stages = append(v.Stages, predictionStage{Rate: st.Rate, Duration: st.Duration, Overloaded: predict.Overloaded(s), Metrics: s})
	}
	if a.printer.format != "table" {
		return a.printer.print(v, nil)
	}
	c := v.Counters
	fmt.Fprintf(a.out, "%s on %d x %s (TP %d, %d replica(s)), %d KV blocks of %d tokens, max_num_seqs %d\n",
		v.Engine.Model, v.Engine.TensorParallelSize, v.Engine.Hardware, v.Engine.TensorParallelSize, v.Engine.Replicas,
		v.Engine.KVCacheBlocks, v.Engine.BlockSize, v.Engine.MaxNumSeqs)
	err := a.printer.print(v, func(t table.Writer) {
		t.AppendHeader(table.Row{"STAGE", "RATE", "REQS", "TTFT", "TTFT P90", "E2E", "E2E P99", "TOKEN", "VERDICT"})
		for k, st := range v.Stages {
			m := st.Metrics
			verdict := "ok"
			switch {
			case st.Overloaded:
				verdict = "overloaded"
			case m.Failed > 0:
				verdict = fmt.Sprintf("%d failed", m.Failed)
			}
			t.AppendRow(table.Row{k, fmt.Sprintf("%g/s", st.Rate), m.Requests, ms(m.TTFTMean), ms(m.TTFTP90), ms(m.E2EMean),
				ms(m.E2EP99), ms(m.DecodeIntervalOfMeans), verdict})
		}
	})
	fmt.Fprintf(a.out, "TTFT and E2E are means unless a percentile is named; TOKEN is the decode interval per token.\n"+
		"%d steps, %d preemptions, peak %d running and %d waiting; %.0f%% of prompt tokens from the prefix cache.\n"+
		"Predicted %.0f s of serving in %.2f s of CPU.\n", c.Steps, c.Preemptions, c.MaxRunning, c.MaxWaiting,
		100*float64(c.PrefixHitTokens)/max(float64(c.PrefixQueryTokens), 1), run.Prediction.End, cpu.Seconds())
	return err
}

// ms prints milliseconds for people: three significant digits, seconds past 10 s.
func ms(v float64) string {
	switch {
	case v >= 10_000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// processCPU is this process's user and system CPU time (the prediction's cost).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package workflow

import (
	"encoding/json"

	"github.com/lensfn/lensfn/runtime/deployconfig"
)

// Facts are a case's configuration facts (the keys of lens-evaluation.md §2), null where the
// configuration does not say. A kubernetes-service baseline has its guide's facts: it runs on
// the same pods.
func (w *Workflow) Facts(c *Case) map[string]any {
	facts := map[string]any{"configuration_artifact_id": nil, "model": nil, "guide": nil, "guide_variant": nil,
		"runtime": nil, "accelerator": nil, "image": nil, "replicas": nil, "tensor_parallel_size": nil,
		"decode_replicas": nil, "decode_tensor_parallel_size": nil, "prefill_replicas": nil,
		"prefill_tensor_parallel_size": nil, "benchmark": c.Benchmark}
	source := c
	if c.SharesGuidePods() {
		if g := w.Case(c.DependentGuideCaseID.Get()); g != nil {
			source = g
		}
	}
	facts["configuration_artifact_id"] = nullable(source.ConfigurationArtifactID.Get())
	var bench struct {
		AcceleratorProfile string `json:"accelerator_profile"`
	}
	if Decode(c.Benchmark, &bench) {
		facts["accelerator"] = nullable(bench.AcceleratorProfile) // the hardware the benchmark says it ran on
	}
	var cfg struct {
		ProviderRef string          `json:"provider_ref"`
		Content     json.RawMessage `json:"content"`
	}
	if !Decode(source.DeploymentConfiguration, &cfg) {
		return facts
	}
	facts["guide"] = cfg.ProviderRef
	d, err := deployconfig.Parse(cfg.ProviderRef, cfg.Content)
	if err != nil {
		return facts
	}
	facts["model"] = d.Content.Model.Name
	facts["guide_variant"] = nullable(d.Profile())
	facts["runtime"] = "inference-sim"
	if d.Content.Runtime != nil && d.Content.Runtime.Image != "" {
		facts["runtime"] = "vllm"
		facts["image"] = d.Content.Runtime.Image
	}
	if d.Content.Prefill != nil {
		facts["decode_replicas"] = d.Content.Decode.Replicas
		facts["decode_tensor_parallel_size"] = d.Content.Decode.TensorParallelSize
		facts["prefill_replicas"] = d.Content.Prefill.Replicas
		facts["prefill_tensor_parallel_size"] = d.Content.Prefill.TensorParallelSize
	} else {
		facts["replicas"] = d.Content.Decode.Replicas
		facts["tensor_parallel_size"] = d.Content.Decode.TensorParallelSize
	}
	return facts
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

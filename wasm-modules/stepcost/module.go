package stepcost

import "github.com/lensfn/lensfn/wasm-modules/abi"

// ModuleName is the built-in step-cost module's name (wasm-modules/stepcost/guest, built into
// the modules directory by wasm-modules/build.sh).
const ModuleName = "stepcost"

// Descriptor is what the built-in step-cost module reports through lens_describe: a latency
// calculator with the step_cost capability.
func Descriptor() abi.Descriptor {
	return abi.Descriptor{ABIVersion: abi.Version, Kind: abi.KindLatencyCalculator, Name: ModuleName, Version: "1.1.0",
		Description:  "vLLM engine step cost: a roofline of the batch's compute and memory over the model's architecture and the GPUs, plus fitted overheads",
		Capabilities: map[string]bool{abi.CapabilityStepCost: true}}
}

// BatchOf is the batch lens_step_time's arguments describe.
func BatchOf(a abi.StepTimeArgs) Batch {
	return Batch{PrefillSeqs: int(a.PrefillSeqs), PrefillTokens: int(a.PrefillTokens), PrefillAttention: a.PrefillAttention,
		PrefillContext: int(a.PrefillContext), DecodeSeqs: int(a.DecodeSeqs), DecodeContext: int(a.DecodeContext), SampledSeqs: int(a.SampledSeqs)}
}

// Config is the configuration that builds m again: what a step-cost module is configured
// with to price the steps m prices (the coefficients explicit, so a module whose defaults
// differ still agrees).
func (m *Model) Config() Config {
	c := m.Coef
	return Config{Model: m.Arch, Hardware: m.HW, TensorParallelSize: m.TP, Coefficients: &c}
}

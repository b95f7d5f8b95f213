// Package deployconfig owns the `content` schema of a deployable-configuration.v1 artifact for
// Lensfn's own providers (baseline-vllm, optimized-baseline, precise-prefix-cache-routing,
// pd-disaggregation): parsing, the bounds of every number, the rule that an unknown key is a 422
// problem naming it, and the inference-sim flag table the `simulator` object is checked
// against. inventory-api validates a configuration with it when one is created; the deployer and
// the workflow orchestrator read configurations through it.
//
// It may import runtime/problem, runtime/enginemodel and wasm-modules/stepcost (the engine
// model's catalogues, which check a configuration's engine settings).
package deployconfig

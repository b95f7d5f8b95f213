package stepcostguest

import (
	"errors"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest"
	"github.com/lensfn/lensfn/wasm-modules/stepcost"
)

var model *stepcost.Model

var errNotConfigured = errors.New("called before lens_calc_configure")

// Serve makes the module the step-cost calculator d describes (its descriptor must declare
// abi.CapabilityStepCost).
func Serve(d abi.Descriptor) { guest.SetDescriptor(d) }

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_calc_configure
func configure(ptr, length uint32) uint64 {
	m, err := stepcost.ParseConfig(guest.Bytes(ptr, length))
	if err != nil {
		return guest.Fail(err)
	}
	model = m
	return abi.Pack(0, 0)
}

// failed records err and returns abi.Failed as the i64 the value exports return.
func failed(err error) int64 { return int64(guest.Fail(err)) }

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_step_time
func stepTime(prefillSeqs, prefillTokens int32, prefillAttention float64, prefillContext int64, decodeSeqs int32, decodeContext int64, sampledSeqs int32) int64 {
	if model == nil {
		return failed(errors.New("lens_step_time " + errNotConfigured.Error()))
	}
	b := stepcost.BatchOf(abi.StepTimeArgs{PrefillSeqs: prefillSeqs, PrefillTokens: prefillTokens, PrefillAttention: prefillAttention,
		PrefillContext: prefillContext, DecodeSeqs: decodeSeqs, DecodeContext: decodeContext, SampledSeqs: sampledSeqs})
	if err := b.Validate(); err != nil {
		return failed(err)
	}
	ns, err := stepcost.Nanoseconds(model.StepTime(&b))
	if err != nil {
		return failed(err)
	}
	return ns
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_request_overhead
func requestOverhead() int64 {
	if model == nil {
		return failed(errors.New("lens_request_overhead " + errNotConfigured.Error()))
	}
	ns, err := stepcost.Nanoseconds(model.RequestOverhead())
	if err != nil {
		return failed(err)
	}
	return ns
}

package calcguest

import (
	"errors"
	"time"
	"unsafe"

	"github.com/lensfn/lensfn/wasm-modules/abi"
	"github.com/lensfn/lensfn/wasm-modules/internal/guest"
	"github.com/lensfn/lensfn/wasm-modules/latency"
)

var (
	module    latency.Module
	model     *latency.Model
	durations []time.Duration
)

// Serve makes the module the latency calculator m: its descriptor, and its rule for the
// configuration lens_calc_configure receives.
func Serve(m latency.Module) {
	guest.SetDescriptor(m.Descriptor())
	module = m
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_calc_configure
func configure(ptr, length uint32) uint64 {
	m, err := module.New(guest.Bytes(ptr, length))
	if err != nil {
		return guest.Fail(err)
	}
	model = m
	return abi.Pack(0, 0)
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_calc_schedule
func schedule(prompt, cached, outputTokens, running, maxNumSeqs, flags uint32, rand uint64) uint64 {
	if model == nil {
		return guest.Fail(errors.New("lens_calc_schedule called before lens_calc_configure"))
	}
	var err error
	durations, err = model.Timeline(latency.Input{
		PromptTokens: int(int32(prompt)), CachedPromptTokens: int(int32(cached)), OutputTokens: int(int32(outputTokens)),
		RunningRequests: int(int32(running)), MaxNumSeqs: int(int32(maxNumSeqs)),
		RemotePrefill: flags&abi.ScheduleFlagRemotePrefill != 0, Rand: rand,
	}, durations)
	if err != nil {
		return guest.Fail(err)
	}
	// wasm is little-endian, so the []time.Duration (int64) already has the ABI's byte layout.
	return guest.Packed(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(durations))), 8*len(durations)))
}

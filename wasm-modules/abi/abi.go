package abi

// Version is the ABI version every module exports from ExportABIVersion. The host refuses
// a module whose version differs; any incompatible change to this package or ABI.md bumps it.
const Version uint32 = 2

// Names of the functions a module exports. All modules export the common ones; a trace
// parser adds the parse functions, a latency calculator the calc functions.
const (
	ExportMemory     = "memory"
	ExportInitialize = "_initialize" // reactor start function; run once per instance when present

	ExportABIVersion = "lens_abi_version" // () -> i32
	ExportDescribe   = "lens_describe"    // () -> i64 packed JSON Descriptor
	ExportBuffer     = "lens_buffer"      // (size i32) -> i32 ptr of a guest buffer of >= size bytes
	ExportError      = "lens_error"       // () -> i64 packed UTF-8 message of the last failure

	ExportParseBegin = "lens_parse_begin" // (ptr, len i32) -> i64 packed empty output or Failed
	ExportParseFeed  = "lens_parse_feed"  // (ptr, len i32) -> i64 packed records or Failed
	ExportParseEnd   = "lens_parse_end"   // () -> i64 packed records or Failed

	ExportCalcConfigure = "lens_calc_configure" // (ptr, len i32) -> i64 packed empty output or Failed
	ExportCalcSchedule  = "lens_calc_schedule"  // (prompt, cached, output, running, max_num_seqs, flags i32, rand i64) -> i64 packed durations or Failed

	// A latency calculator with CapabilityStepCost exports these two (and may leave out
	// ExportCalcSchedule). Neither touches memory: the arguments and the result are values.
	ExportStepTime        = "lens_step_time"        // (prefill_seqs, prefill_tokens i32, prefill_attention f64, prefill_context i64, decode_seqs i32, decode_context i64, sampled_seqs i32) -> i64 ns or Failed
	ExportRequestOverhead = "lens_request_overhead" // () -> i64 ns or Failed
)

// Module kinds, as carried in Descriptor.Kind.
const (
	KindTraceParser       = "trace-parser"
	KindLatencyCalculator = "latency-calculator"
)

// Capability names a trace parser declares in Descriptor.Capabilities.
const (
	CapabilityTraceRange  = "supports_trace_range"  // start/end seconds on the normalised axis make sense
	CapabilityScaleFactor = "supports_scale_factor" // arrival times and delays may be divided by a factor
	// CapabilitySelectsTraceRange: the module selects the range itself, because what it keeps
	// depends on its sessions (lens_parse_begin carries the window); the host then only shifts
	// and scales what the module emits.
	CapabilitySelectsTraceRange = "selects_trace_range"
)

// CapabilityStepCost is what a latency calculator declares in Descriptor.Capabilities when it
// prices engine steps for the simulator's engine model: it exports ExportStepTime and
// ExportRequestOverhead, is configured with a step-cost configuration (wasm-modules/stepcost's
// Config) and need not export ExportCalcSchedule.
const CapabilityStepCost = "step_cost"

// Failed is the value an i64-returning export returns instead of a packed ptr/len when it
// failed; the host then reads the message through ExportError. A real packed value never
// equals it because guest pointers stay below 2^31.
const Failed uint64 = ^uint64(0)

// Pack puts a guest pointer in the high 32 bits and a byte length in the low 32 bits.
// Pack(0x10000, 5) == 0x0001_0000_0000_0005.
func Pack(ptr, length uint32) uint64 { return uint64(ptr)<<32 | uint64(length) }

// Unpack reverses Pack.
func Unpack(v uint64) (ptr, length uint32) { return uint32(v >> 32), uint32(v) }

// ScheduleFlagRemotePrefill is bit 0 of lens_calc_schedule's flags argument: the request's
// KV cache comes from a remote prefill instance (P/D disaggregation).
const ScheduleFlagRemotePrefill uint32 = 1

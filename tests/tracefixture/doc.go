// Package tracefixture is test support for the suites and unit tests that replay or parse
// traces (tests/e2e, tests/conformance, the trace-format cores, simulation-api,
// trace-replayer): small deterministic generators for the mooncake_trace
// and weka_public_dataset formats (as documented in the shared trace-formats reference:
// mooncake JSONL rows with millisecond timestamps and one hash id per 512 tokens; WEKA
// trace objects with second offsets, floor(in/block_size) hash ids and subagents with
// relative times), so that the core cases run in a fresh clone; and Shared, which finds the
// real traces (LENS_SHARED_DIR, default ../shared beside the repository) for the cases that
// use them in addition, and reports in one line what was skipped when they are missing.
//
// It may import the standard library only.
package tracefixture

package deployconfig

// FlagKind is the JSON value a simulator flag takes in a configuration's `simulator` object.
type FlagKind string

// Flag kinds.
const (
	FlagInt      FlagKind = "int"      // a JSON integer
	FlagFloat    FlagKind = "float"    // a JSON number
	FlagString   FlagKind = "string"   // a JSON string
	FlagBool     FlagKind = "bool"     // true or false
	FlagDuration FlagKind = "duration" // a string such as "2ms" (the simulator parses it)
	FlagList     FlagKind = "list"     // an array of strings (a multi-value flag)
	FlagJSON     FlagKind = "json"     // a JSON object, passed as its compact text
)

// SimulatorFlags is inference-sim's flag set, by name. The simulator's own test
// (functions/inferencesim, TestFlagTableMatchesDeployconfig) fails when its flag table and this
// list drift apart, so a configuration is checked against the flags the simulator really has.
var SimulatorFlags = map[string]FlagKind{
	"port": FlagInt, "host": FlagString, "model": FlagString, "served-model-name": FlagList, "lora-modules": FlagList,
	"max-loras": FlagInt, "max-cpu-loras": FlagInt, "max-model-len": FlagInt, "max-num-seqs": FlagInt,
	"max-waiting-queue-length": FlagInt, "mode": FlagString, "latency-calculator": FlagString,
	"time-to-first-token": FlagDuration, "time-to-first-token-std-dev": FlagDuration,
	"inter-token-latency": FlagDuration, "inter-token-latency-std-dev": FlagDuration,
	"kv-cache-transfer-latency": FlagDuration, "kv-cache-transfer-latency-std-dev": FlagDuration,
	"prefill-overhead": FlagDuration, "prefill-time-per-token": FlagDuration, "prefill-time-std-dev": FlagDuration,
	"kv-cache-transfer-time-per-token": FlagDuration, "kv-cache-transfer-time-std-dev": FlagDuration,
	"time-factor-under-load": FlagFloat, "seed": FlagInt,
	"max-tool-call-integer-param": FlagInt, "min-tool-call-integer-param": FlagInt,
	"max-tool-call-number-param": FlagFloat, "min-tool-call-number-param": FlagFloat,
	"max-tool-call-array-param-length": FlagInt, "min-tool-call-array-param-length": FlagInt,
	"tool-call-not-required-param-probability": FlagInt, "object-tool-call-not-required-field-probability": FlagInt,
	"tool-call-extra-call-probability": FlagInt, "skip-tool-validation": FlagBool,
	"enable-kvcache": FlagBool, "kv-cache-size": FlagInt, "block-size": FlagInt,
	"tokenizers-cache-dir": FlagString, "tokenizer": FlagString, "hash-seed": FlagString, "zmq-endpoint": FlagString,
	"zmq-max-connect-attempts": FlagInt, "event-batch-size": FlagInt, "use-vllm-map-event-format": FlagBool,
	"global-cache-hit-threshold": FlagFloat, "failure-injection-rate": FlagInt, "failure-types": FlagList,
	"fake-metrics": FlagJSON, "data-parallel-size": FlagInt, "data-parallel-rank": FlagInt,
	"dataset-path": FlagString, "dataset-url": FlagString, "dataset-in-memory": FlagBool,
	"dataset-table-name": FlagString, "ssl-certfile": FlagString, "ssl-keyfile": FlagString,
	"self-signed-certs": FlagBool, "max-request-body-size-mb": FlagInt, "max-inflight-request-mb": FlagInt, "startup-duration": FlagDuration,
	"enable-request-id-headers": FlagBool, "api-key": FlagString, "admin-token": FlagString, "default-embedding-dimensions": FlagInt, "shutdown-timeout": FlagDuration,
	// The engine model (--latency-calculator engine).
	"engine-model": FlagString, "hardware": FlagString, "tensor-parallel-size": FlagInt, "max-num-batched-tokens": FlagInt,
	"gpu-memory-utilization": FlagFloat, "kv-cache-blocks": FlagInt, "no-enable-prefix-caching": FlagBool,
	"no-async-scheduling": FlagBool, "kernel-warmup-seconds": FlagFloat, "step-cost-coefficients": FlagJSON, "step-cost-module": FlagString,
	// klog's flags (the simulator logs through klog, as the reference does).
	"v": FlagInt, "vmodule": FlagString, "logtostderr": FlagBool, "alsologtostderr": FlagBool,
	"log_dir": FlagString, "log_file": FlagString, "log_file_max_size": FlagInt, "log_backtrace_at": FlagString,
	"one_output": FlagBool, "skip_headers": FlagBool, "skip_log_headers": FlagBool, "stderrthreshold": FlagString,
	"add_dir_header": FlagBool,
}

// ReservedSimulatorFlags are set by the deployer (ports, the model, KV-event wiring, decode
// limits) or name files on the host that runs the replica; a configuration may not set them.
var ReservedSimulatorFlags = map[string]string{
	"port":                 "the deployer picks each replica's port",
	"host":                 "the deployer binds each replica where the router reaches it",
	"model":                "set from model.name",
	"served-model-name":    "set from model.name",
	"max-model-len":        "set from decode.max_model_len",
	"max-num-seqs":         "set from decode.max_num_seqs",
	"tensor-parallel-size": "set from decode.tensor_parallel_size",
	"zmq-endpoint":         "the deployer wires KV events to the router",
	"data-parallel-size":   "the deployer runs one process per replica",
	"data-parallel-rank":   "the deployer runs one process per replica",
	"ssl-certfile":         "names a file on the deployer's host",
	"ssl-keyfile":          "names a file on the deployer's host",
	"self-signed-certs":    "the router talks plain HTTP to its replicas",
	"dataset-path":         "names a file on the deployer's host",
	"tokenizers-cache-dir": "names a directory on the deployer's host",
	"tokenizer":            "names a file on the deployer's host",
	"log_dir":              "names a directory on the deployer's host",
	"log_file":             "names a file on the deployer's host",
	"api-key":              "a secret: configuration content is stored and shown in plain text",
	"admin-token":          "a secret: configuration content is stored and shown in plain text",
}

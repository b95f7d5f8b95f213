package stepcost

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Hardware is one GPU's datasheet figures: dense 16-bit tensor throughput, memory bandwidth
// and size, and the per-direction bandwidth between GPUs of one node.
type Hardware struct {
	Name string `json:"name"`
	// TFLOPS is the dense FP16/BF16 tensor-core peak, in 10^12 FLOP/s (no sparsity).
	TFLOPS float64 `json:"tflops"`
	// MemoryBandwidthGBs is the HBM (or GDDR) bandwidth in 10^9 bytes/s.
	MemoryBandwidthGBs float64 `json:"memory_bandwidth_gbs"`
	// MemoryGB is the memory size in 10^9 bytes.
	MemoryGB float64 `json:"memory_gb"`
	// InterconnectGBs is the GPU-to-GPU bandwidth per direction in 10^9 bytes/s (NVLink, or
	// PCIe where a GPU has no NVLink).
	InterconnectGBs float64 `json:"interconnect_gbs"`
}

// Validate refuses figures the cost model cannot use.
func (h *Hardware) Validate() error {
	if h.Name == "" {
		return fmt.Errorf("hardware: name is required")
	}
	for _, f := range []struct {
		v    float64
		what string
	}{{h.TFLOPS, "tflops"}, {h.MemoryBandwidthGBs, "memory_bandwidth_gbs"}, {h.MemoryGB, "memory_gb"}, {h.InterconnectGBs, "interconnect_gbs"}} {
		if !(f.v > 0 && f.v < 1e7) {
			return fmt.Errorf("hardware %s: %s must be a positive number below 1e7, got %v", h.Name, f.what, f.v)
		}
	}
	return nil
}

// GPUs is the catalogue of common GPUs: NVIDIA datasheet figures. Memory is the marketed
// size in GB as the driver reports it (an "80GB" H100 has 81,559 MiB = 85.5e9 bytes).
var GPUs = map[string]Hardware{
	"H100-SXM-80GB":  {Name: "H100-SXM-80GB", TFLOPS: 989.5, MemoryBandwidthGBs: 3350, MemoryGB: 85.52, InterconnectGBs: 450},
	"H200-SXM-141GB": {Name: "H200-SXM-141GB", TFLOPS: 989.5, MemoryBandwidthGBs: 4800, MemoryGB: 150.7, InterconnectGBs: 450},
	"A100-SXM-80GB":  {Name: "A100-SXM-80GB", TFLOPS: 312, MemoryBandwidthGBs: 2039, MemoryGB: 85.9, InterconnectGBs: 300},
	"L40S-48GB":      {Name: "L40S-48GB", TFLOPS: 362.05, MemoryBandwidthGBs: 864, MemoryGB: 48.3, InterconnectGBs: 32},
}

// gpuAliases are other names users give the catalogue's GPUs.
var gpuAliases = map[string]string{
	"h100": "H100-SXM-80GB", "h100-sxm": "H100-SXM-80GB", "h100-80gb": "H100-SXM-80GB", "nvidia-h100-80gb-hbm3": "H100-SXM-80GB",
	"h200": "H200-SXM-141GB", "h200-sxm": "H200-SXM-141GB",
	"a100": "A100-SXM-80GB", "a100-80gb": "A100-SXM-80GB", "a100-sxm": "A100-SXM-80GB", "nvidia-a100-sxm4-80gb": "A100-SXM-80GB",
	"l40s": "L40S-48GB", "nvidia-l40s": "L40S-48GB",
}

// LookupGPU finds a catalogue GPU by name or alias, case-insensitively.
func LookupGPU(name string) (Hardware, bool) {
	if h, ok := GPUs[name]; ok {
		return h, true
	}
	for id, h := range GPUs {
		if strings.EqualFold(id, name) {
			return h, true
		}
	}
	lower := strings.ToLower(name)
	if id, ok := gpuAliases[lower]; ok {
		return GPUs[id], true
	}
	// Profiles often carry the vendor first (nvidia-h100, nvidia-a100-80gb).
	if rest, ok := strings.CutPrefix(lower, "nvidia-"); ok && rest != "" {
		return LookupGPU(rest)
	}
	return Hardware{}, false
}

// GPUNames lists the catalogue's names, sorted.
func GPUNames() []string {
	names := make([]string, 0, len(GPUs))
	for id := range GPUs {
		names = append(names, id)
	}
	slices.Sort(names)
	return names
}

// ParseHardware reads a user's GPU description (Hardware's JSON fields).
func ParseHardware(b []byte) (Hardware, error) {
	var h Hardware
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("hardware file: %v", err)
	}
	return h, h.Validate()
}

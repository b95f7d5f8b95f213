package stepcost

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Fitted are the coefficients fitted on the shipped vLLM v0.15.1 measurements on H100 SXM
// (tests/fidelity, `make fidelity`; BENCHMARKS.md has the fit and its leave-one-model-out
// scores).
var Fitted = Coefficients{
	ComputeEfficiency: 0.410,
	MemoryEfficiency:  0.892,
	StepOverheadUs:    834,
	LayerOverheadUs:   20.4,
	SeqOverheadUs:     4.85,
	AllReduceUs:       21.1,
	RequestOverheadUs: 7370,
}

// Config is a step-cost module's configuration, the JSON of lens_calc_configure for a
// step-cost calculator: the model's architecture and the hardware in full (the host resolves
// catalogue names before it configures a module), the tensor-parallel size and, optionally,
// coefficients (Fitted when absent).
type Config struct {
	Model              Arch          `json:"model"`
	Hardware           Hardware      `json:"hardware"`
	TensorParallelSize int           `json:"tensor_parallel_size"`
	Coefficients       *Coefficients `json:"coefficients,omitempty"`
}

// ParseConfig reads a Config strictly and builds its Model.
func ParseConfig(b []byte) (*Model, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("step-cost configuration: %v", err)
	}
	return c.Build()
}

// Build checks the configuration and builds its Model.
func (c *Config) Build() (*Model, error) {
	coef := Fitted
	if c.Coefficients != nil {
		coef = *c.Coefficients
	}
	return NewModel(c.Model, c.Hardware, c.TensorParallelSize, coef)
}

// JSON encodes the configuration for a module.
func (c *Config) JSON() []byte {
	b, _ := json.Marshal(c) // plain fields: cannot fail
	return b
}

// Package fidelity scores the engine model against real vLLM measurements: each ground-truth
// row's workload (the shared-prefix shape, Poisson arrivals at the stage's rate for its
// duration, output_len_max_tokens tokens per request) goes through the predictor
// (runtime/predict) on the row's own engine (its architecture columns, the catalogue GPU its
// hardware column names, its server settings and KV blocks), and each stage's prediction is
// compared with what vLLM did. It also fits the step-cost coefficients (Fit) and scores a
// model left out of the fit (LeaveOneModelOut). `make fidelity` runs cmd/fidelity.
//
// The ground truth is read from ../shared (or GROUND_TRUTH), never copied into the repository.
//
// Imports: anything (it is under tests/).
package fidelity

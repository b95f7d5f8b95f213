// Command fidelity is `make fidelity`: it scores the engine model against the real vLLM
// measurements (tests/fidelity), fits its coefficients (-fit) and scores each model left out
// of a fit (-lomo). It may import anything (it is under tests/).
package main

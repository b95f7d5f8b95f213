// Package simtask owns the simulation task record shared by the functions of the simulation
// pipeline (simulation-api, trace-replayer, result-analyzer): its JSON document exactly as the
// simulation spec shows it, its place in the state store (kind, statuses, indexed attributes),
// its sealed API key, its artifact folder, and the status transitions each stage makes.
//
// It may import runtime/state, runtime/secret and runtime/recordrepo.
package simtask

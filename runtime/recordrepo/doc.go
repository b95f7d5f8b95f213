// Package recordrepo owns what the pipeline's record repositories (runtime/simtask's tasks,
// runtime/evalrun's benchmark runs) do alike on the state store: one kind of JSON document per
// record, created, loaded, moved between statuses with state.Transition (exactly one of racing
// callers wins; fences keep lost runners out), its API key sealed with the record's id as context,
// its capped log, and its deletion with its artifact folder. The documents, their indexed
// attributes and their status rules stay with the record packages, which pass their codec in.
//
// It may import runtime/state and runtime/secret.
package recordrepo

// Package tracespool keeps a parsed trace's records on disk and reads them back by index, so a
// replay of a million-request trace holds eight bytes per request in memory (the record's file
// offset) instead of the records themselves. The trace replayer writes every record its parser
// module emits into a spool, plans the replay from one pass over it, and loads each request
// again when it is about to be sent.
//
// Records are stored in the parser ABI's binary record encoding (wasm-modules/abi), each behind
// the index of its source file name, which the encoding leaves out.
//
// It imports the standard library and wasm-modules/abi.
package tracespool

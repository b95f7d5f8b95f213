// Package tracespool keeps a parsed trace's records on disk and reads them back by index, so a
// replay of a million-request trace holds none of them in memory: the records go to a data file
// and their offsets to an index file, and a read costs two positioned reads (both served by the
// page cache in practice). The trace replayer writes every record its parser
// module emits into a spool, plans the replay from one pass over it, and loads each request
// again when it is about to be sent.
//
// Records are stored in the parser ABI's binary record encoding (wasm-modules/abi), each behind
// the index of its source file name, which the encoding leaves out.
//
// It imports the standard library and wasm-modules/abi.
package tracespool

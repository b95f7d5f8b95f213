// Package jsoncursor is the strict JSON reader under Lensfn's fast decoding paths: the
// simulator's request decoder, the load engine's SSE chunk decoder and the analyser's record
// reader. Each of those decodes the few shapes that dominate its traffic without reflection or
// allocation and hands anything else to encoding/json, so the primitives here never accept what
// encoding/json would refuse: a method that meets something it does not handle exactly reports
// false and the caller falls back.
//
// A Cursor is a position in one byte slice. Methods that read a value start at the cursor
// (call Skip or Token first where whitespace may come); none of them allocate.
//
// It imports only the standard library.
package jsoncursor

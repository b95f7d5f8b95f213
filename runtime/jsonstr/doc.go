// Package jsonstr owns the one hand-written JSON string encoder of the hot paths: the
// inference simulator's response writer and the load engine's request bodies and record lines
// append strings with it instead of going through encoding/json's reflection. Its output is
// byte for byte what encoding/json writes for the same string (json.Marshal's for AppendHTML,
// a json.Encoder's with SetEscapeHTML(false) for Append): the short escapes \" \\ \b \f \n \r
// \t, \u00XX for the other control bytes, \ufffd for each invalid UTF-8 byte, U+2028 and U+2029
// escaped; the tests fuzz it against encoding/json.
//
// It imports only the standard library, and nothing of ours.
package jsonstr

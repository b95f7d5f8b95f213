// Package tracefmttest holds what every trace-format core's tests share: feeding input to a
// parser in chunks and reading records back as the host sees them. It may import
// wasm-modules/abi and wasm-modules/tracefmt.
package tracefmttest

package guest

import (
	"encoding/json"
	"unsafe"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

var (
	descriptor []byte
	input      []byte
	lastError  []byte
)

// SetDescriptor records the module's descriptor (called once from the guest's init).
func SetDescriptor(d abi.Descriptor) {
	d.ABIVersion = abi.Version
	b, err := json.Marshal(d)
	if err != nil {
		panic(err)
	}
	descriptor = b
}

// Packed returns b's guest address and length packed for the host. b must stay reachable
// (held by a package variable) until the host has read it.
func Packed(b []byte) uint64 {
	if len(b) == 0 {
		return abi.Pack(0, 0)
	}
	return abi.Pack(uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))), uint32(len(b)))
}

// Fail records err as the last error and returns abi.Failed.
func Fail(err error) uint64 {
	lastError = append(lastError[:0], err.Error()...)
	return abi.Failed
}

// Bytes views the guest memory the host wrote at ptr.
func Bytes(ptr, length uint32) []byte {
	if length == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), length)
}

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_abi_version
func abiVersion() uint32 { return abi.Version }

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_describe
func describe() uint64 { return Packed(descriptor) }

//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_error
func lensError() uint64 { return Packed(lastError) }

// lens_buffer keeps one input buffer alive for the instance's life and grows it on demand,
// so steady-state feeding allocates nothing.
//
//lint:ignore U1000 exported to the host by the //go:wasmexport below (staticcheck does not see exports)
//go:wasmexport lens_buffer
func buffer(size uint32) uint32 {
	if uint32(cap(input)) < size {
		input = make([]byte, size)
	}
	input = input[:cap(input)]
	if len(input) == 0 {
		input = make([]byte, 1)
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(input))))
}

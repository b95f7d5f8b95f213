package kvblock

import (
	"bytes"
	"testing"
)

func seq(n int, base uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}

func TestHashChain(t *testing.T) {
	h := NewHasher(4, "seed")
	toks := seq(10, 1)
	a := h.AppendBlockHashes(nil, "m", toks)
	if len(a) != 2 { // partial tail block ignored
		t.Fatalf("%d blocks", len(a))
	}
	b := NewHasher(4, "seed").AppendBlockHashes(nil, "m", toks[:8])
	if a[0] != b[0] || a[1] != b[1] {
		t.Fatal("hashes not deterministic")
	}
	if c := h.AppendBlockHashes(nil, "lora", toks); c[0] == a[0] {
		t.Fatal("models must not share blocks")
	}
	if d := NewHasher(4, "other").AppendBlockHashes(nil, "m", toks); d[0] == a[0] {
		t.Fatal("hash seed ignored")
	}
	changed := append([]uint32(nil), toks...)
	changed[1] = 99
	if e := h.AppendBlockHashes(nil, "m", changed); e[1] == a[1] {
		t.Fatal("a changed first block must change the chained second hash")
	}
	// canonical CBOR heads: 23 -> 0x17, 24 -> 0x18 0x18, 256 -> 0x19 0x01 0x00
	if got := appendCBORHead(nil, 0, 23); !bytes.Equal(got, []byte{0x17}) {
		t.Fatalf("%x", got)
	}
	if got := appendCBORHead(nil, 0, 24); !bytes.Equal(got, []byte{0x18, 0x18}) {
		t.Fatalf("%x", got)
	}
	if got := appendCBORHead(nil, 4, 256); !bytes.Equal(got, []byte{0x99, 0x01, 0x00}) {
		t.Fatalf("%x", got)
	}
}

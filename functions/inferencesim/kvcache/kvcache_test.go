package kvcache

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

type recorder struct{ events []Event }

func (r *recorder) Publish(e Event) { r.events = append(r.events, e) }

func seq(n int, base uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}

func TestCacheHitsEvictionAndEvents(t *testing.T) {
	rec := &recorder{}
	c := New(4, 2, "", rec)
	toks := seq(6, 1)
	h := c.Hashes(nil, "m", toks)
	if cached, err := c.Start(h, toks, 0, ""); err != nil || cached != 0 {
		t.Fatalf("first: %d %v", cached, err)
	}
	if len(rec.events) != 1 || rec.events[0].Kind != BlockStored || len(rec.events[0].Hashes) != 3 || rec.events[0].Parent != 0 ||
		len(rec.events[0].Tokens) != 6 {
		t.Fatalf("events %+v", rec.events)
	}
	if u := c.Usage(); u != 0.75 {
		t.Fatalf("usage %v", u)
	}
	c.Finish(h)
	if u := c.Usage(); u != 0 || c.Len() != 3 {
		t.Fatalf("after finish: usage %v len %d", u, c.Len())
	}
	if cached, _ := c.Start(h, toks, 0, ""); cached != 3 {
		t.Fatalf("second: %d cached blocks", cached)
	}
	c.Finish(h)
	// a different prompt of 3 blocks: needs 2 evictions (capacity 4)
	other := seq(6, 100)
	h2 := c.Hashes(nil, "m", other)
	if _, err := c.Start(h2, other, 1, "l"); err != nil {
		t.Fatal(err)
	}
	last := rec.events[len(rec.events)-1]
	removed := rec.events[len(rec.events)-2]
	if removed.Kind != BlockRemoved || len(removed.Hashes) != 2 || removed.Hashes[0] != h[0] {
		t.Fatalf("LRU eviction: %+v", removed)
	}
	if last.Kind != BlockStored || last.LoRAID != 1 || last.LoRAName != "l" {
		t.Fatalf("stored: %+v", last)
	}
	// everything pinned: a 2-block request cannot fit
	more := seq(4, 500)
	if _, err := c.Start(c.Hashes(nil, "m", more), more, 0, ""); err != ErrCacheFull {
		t.Fatalf("want ErrCacheFull, got %v", err)
	}
}

func TestBatchEncoding(t *testing.T) {
	events := []Event{
		{Kind: BlockStored, Hashes: []uint64{1, 300}, Parent: 0, Tokens: []uint32{7, 8}, BlockSize: 16},
		{Kind: BlockRemoved, Hashes: []uint64{1 << 40}},
		{Kind: AllBlocksCleared},
	}
	got := AppendBatch(nil, 1.5, events, 2, false)
	want := []byte{0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x93,
		0x98, 0xab, 'B', 'l', 'o', 'c', 'k', 'S', 't', 'o', 'r', 'e', 'd', 0x92, 0x01, 0xcd, 0x01, 0x2c, 0x00, 0x92, 0x07, 0x08, 0x10, 0xc0, 0xa3, 'G', 'P', 'U', 0xc0,
		0x93, 0xac, 'B', 'l', 'o', 'c', 'k', 'R', 'e', 'm', 'o', 'v', 'e', 'd', 0x91, 0xcf, 0, 0, 1, 0, 0, 0, 0, 0, 0xa3, 'G', 'P', 'U',
		0x91, 0xb0, 'A', 'l', 'l', 'B', 'l', 'o', 'c', 'k', 's', 'C', 'l', 'e', 'a', 'r', 'e', 'd',
		0x02}
	if !bytes.Equal(got, want) {
		t.Fatalf("batch\n got %x\nwant %x", got, want)
	}
	m := AppendBatch(nil, 0, events[:1], 0, true)
	if !bytes.Contains(m, []byte("\xa4type\xabBlockStored")) || !bytes.Contains(m, []byte("\xb1parent_block_hash\xc0")) {
		t.Fatalf("map format %x", m)
	}
	if Topic("10.0.0.1", 8000, "m") != "kv@10.0.0.1:8000@m" {
		t.Fatal("topic")
	}
}

// TestPublisherOverZMQ: a SUB socket receives [topic, seq, batch].
func TestPublisherOverZMQ(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	endpoint := "tcp://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := zmq4.NewSub(ctx)
	defer sub.Close()
	if err := sub.Listen(endpoint); err != nil {
		t.Fatal(err)
	}
	if err := sub.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		t.Fatal(err)
	}
	pub := NewPublisher(PublisherConfig{Endpoint: endpoint, Topic: "kv@1.2.3.4:8000@m", BatchSize: 1, DPRank: 0})
	defer pub.Close()
	got := make(chan zmq4.Msg, 1)
	go func() {
		msg, err := sub.Recv()
		if err == nil {
			got <- msg
		}
	}()
	// the PUB socket drops messages until the subscription arrives: retry
	deadline := time.After(8 * time.Second)
	for {
		pub.Publish(Event{Kind: AllBlocksCleared})
		select {
		case msg := <-got:
			if len(msg.Frames) != 3 || string(msg.Frames[0]) != "kv@1.2.3.4:8000@m" || len(msg.Frames[1]) != 8 ||
				binary.BigEndian.Uint64(msg.Frames[1]) == 0 || msg.Frames[2][0] != 0x93 {
				t.Fatalf("message %q", msg.Frames)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no event received")
		}
	}
}

package kvcache

import (
	"context"
	"encoding/binary"
	"math"
	"sync"
	"time"

	"github.com/go-zeromq/zmq4"
)

// AppendBatch appends the msgpack encoding of one event batch:
// [timestamp (float64 seconds), [events…], data_parallel_rank]. Events
// are positional arrays, or maps keyed like vLLM's when mapFormat is set.
func AppendBatch(dst []byte, ts float64, events []Event, dpRank int, mapFormat bool) []byte {
	dst = mpArray(dst, 3)
	dst = append(dst, 0xcb)
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(ts))
	dst = mpArray(dst, len(events))
	for i := range events {
		dst = appendEvent(dst, &events[i], mapFormat)
	}
	return mpInt(dst, int64(dpRank))
}

func appendEvent(dst []byte, e *Event, mapFormat bool) []byte {
	lora := func(dst []byte) []byte {
		if e.LoRAName == "" {
			return append(dst, 0xc0)
		}
		return mpInt(dst, int64(e.LoRAID))
	}
	loraName := func(dst []byte) []byte {
		if e.LoRAName == "" {
			return append(dst, 0xc0)
		}
		return mpString(dst, e.LoRAName)
	}
	hashes := func(dst []byte) []byte {
		dst = mpArray(dst, len(e.Hashes))
		for _, h := range e.Hashes {
			dst = mpUint(dst, h)
		}
		return dst
	}
	tokens := func(dst []byte) []byte {
		dst = mpArray(dst, len(e.Tokens))
		for _, t := range e.Tokens {
			dst = mpUint(dst, uint64(t))
		}
		return dst
	}
	switch e.Kind {
	case BlockStored:
		if mapFormat {
			dst = mpMap(dst, 8)
			dst = mpString(mpString(dst, "type"), "BlockStored")
			dst = hashes(mpString(dst, "block_hashes"))
			dst = mpString(dst, "parent_block_hash")
			if e.Parent == 0 {
				dst = append(dst, 0xc0)
			} else {
				dst = mpUint(dst, e.Parent)
			}
			dst = tokens(mpString(dst, "token_ids"))
			dst = mpInt(mpString(dst, "block_size"), int64(e.BlockSize))
			dst = lora(mpString(dst, "lora_id"))
			dst = mpString(mpString(dst, "medium"), "GPU")
			return loraName(mpString(dst, "lora_name"))
		}
		dst = mpArray(dst, 8)
		dst = mpString(dst, "BlockStored")
		dst = hashes(dst)
		dst = mpUint(dst, e.Parent)
		dst = tokens(dst)
		dst = mpInt(dst, int64(e.BlockSize))
		dst = lora(dst)
		dst = mpString(dst, "GPU")
		return loraName(dst)
	case BlockRemoved:
		if mapFormat {
			dst = mpMap(dst, 3)
			dst = mpString(mpString(dst, "type"), "BlockRemoved")
			dst = hashes(mpString(dst, "block_hashes"))
			return mpString(mpString(dst, "medium"), "GPU")
		}
		dst = mpArray(dst, 3)
		dst = mpString(dst, "BlockRemoved")
		dst = hashes(dst)
		return mpString(dst, "GPU")
	}
	if mapFormat {
		dst = mpMap(dst, 1)
		return mpString(mpString(dst, "type"), "AllBlocksCleared")
	}
	dst = mpArray(dst, 1)
	return mpString(dst, "AllBlocksCleared")
}

func mpArray(dst []byte, n int) []byte {
	switch {
	case n < 16:
		return append(dst, 0x90|byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 0xdc), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdd), uint32(n))
}

func mpMap(dst []byte, n int) []byte {
	if n < 16 {
		return append(dst, 0x80|byte(n))
	}
	return binary.BigEndian.AppendUint16(append(dst, 0xde), uint16(n))
}

func mpString(dst []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		dst = append(dst, 0xa0|byte(n))
	case n <= 0xff:
		dst = append(dst, 0xd9, byte(n))
	case n <= 0xffff:
		dst = binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	default:
		dst = binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
	}
	return append(dst, s...)
}

func mpUint(dst []byte, v uint64) []byte {
	switch {
	case v < 128:
		return append(dst, byte(v))
	case v <= 0xff:
		return append(dst, 0xcc, byte(v))
	case v <= 0xffff:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(v))
	case v <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), v)
}

func mpInt(dst []byte, v int64) []byte {
	if v >= 0 {
		return mpUint(dst, uint64(v))
	}
	if v >= -32 {
		return append(dst, byte(v))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(v))
}

// Topic is the ZMQ topic of a simulator's KV events:
// kv@<pod ip>:<port>@<model>.
func Topic(podIP string, port int, model string) string {
	return "kv@" + podIP + ":" + itoa(port) + "@" + model
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// PublisherConfig configures a Publisher.
type PublisherConfig struct {
	Endpoint    string // ZMQ address the PUB socket dials
	Topic       string
	BatchSize   int // flush when this many events are pending
	DPRank      int
	MapFormat   bool
	MaxAttempts int // dial attempts, 0 = retry forever
}

// Publisher batches events and sends them as 3-frame ZMQ messages
// [topic, 8-byte big-endian sequence number, msgpack batch], flushing when
// BatchSize events are pending or a second after the first pending one.
type Publisher struct {
	cfg    PublisherConfig
	sock   zmq4.Socket
	mu     sync.Mutex
	events []Event
	seq    uint64
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	now    func() time.Time
	sendFn func(zmq4.Msg) error
}

// NewPublisher dials the endpoint in the background and starts the
// flusher.
func NewPublisher(cfg PublisherConfig) *Publisher {
	if cfg.BatchSize < 1 {
		cfg.BatchSize = 16
	}
	ctx := context.Background()
	opts := []zmq4.Option{zmq4.WithDialerRetry(time.Second)}
	if cfg.MaxAttempts > 0 {
		opts = append(opts, zmq4.WithDialerMaxRetries(cfg.MaxAttempts))
	} else {
		opts = append(opts, zmq4.WithDialerMaxRetries(-1))
	}
	p := &Publisher{cfg: cfg, sock: zmq4.NewPub(ctx, opts...), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), now: time.Now}
	p.sendFn = p.sock.Send
	go func() { _ = p.sock.Dial(cfg.Endpoint) }()
	go p.loop()
	return p
}

// Publish queues an event.
func (p *Publisher) Publish(e Event) {
	p.mu.Lock()
	p.events = append(p.events, e)
	full := len(p.events) >= p.cfg.BatchSize
	p.mu.Unlock()
	if full {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

func (p *Publisher) loop() {
	defer close(p.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			p.flush()
			return
		case <-p.kick:
		case <-t.C:
		}
		p.flush()
	}
}

func (p *Publisher) flush() {
	for {
		p.mu.Lock()
		if len(p.events) == 0 {
			p.mu.Unlock()
			return
		}
		n := min(len(p.events), p.cfg.BatchSize)
		batch := append([]Event(nil), p.events[:n]...)
		p.events = append(p.events[:0], p.events[n:]...)
		p.seq++
		seq := p.seq
		p.mu.Unlock()
		ts := float64(p.now().UnixNano()) / 1e9
		payload := AppendBatch(nil, ts, batch, p.cfg.DPRank, p.cfg.MapFormat)
		var seqb [8]byte
		binary.BigEndian.PutUint64(seqb[:], seq)
		_ = p.sendFn(zmq4.NewMsgFrom([]byte(p.cfg.Topic), seqb[:], payload))
	}
}

// Close flushes pending events and closes the socket.
func (p *Publisher) Close() error {
	close(p.stop)
	<-p.done
	return p.sock.Close()
}

package inferencerouter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zeromq/zmq4"
)

// kvEvent is one decoded vLLM KV event.
type kvEvent struct {
	kind   string // BlockStored, BlockRemoved, AllBlocksCleared
	hashes []uint64
}

// Bounds on a KV-event message, so a bad publisher cannot exhaust the router.
const (
	maxEventsPerBatch = 1 << 16
	maxHashesPerEvent = 1 << 16
	maxMsgpackDepth   = 8
)

// decodeKVBatch decodes vLLM's msgpack event batch
// [timestamp, [event…], data_parallel_rank], each event a positional array
// ["BlockStored", hashes, parent, tokens, block_size, lora_id, medium,
// lora_name] / ["BlockRemoved", hashes, medium] / ["AllBlocksCleared"] or
// the same keyed as a map with "type" (--use-vllm-map-event-format).
func decodeKVBatch(b []byte) ([]kvEvent, error) {
	d := &mpDecoder{b: b}
	n, err := d.arrayLen()
	if err != nil || n < 2 {
		return nil, fmt.Errorf("event batch: want [ts, events, rank], %v", err)
	}
	if err := d.skip(0); err != nil { // timestamp
		return nil, err
	}
	ne, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if ne > maxEventsPerBatch {
		return nil, fmt.Errorf("event batch: %d events, at most %d", ne, maxEventsPerBatch)
	}
	events := make([]kvEvent, 0, ne)
	for range ne {
		e, err := d.event()
		if err != nil {
			return events, err
		}
		events = append(events, e)
	}
	for range n - 2 { // data_parallel_rank
		if err := d.skip(0); err != nil {
			return events, err
		}
	}
	return events, nil
}

func (d *mpDecoder) event() (kvEvent, error) {
	var e kvEvent
	if d.i >= len(d.b) {
		return e, errors.New("event: truncated")
	}
	c := d.b[d.i]
	if c&0xf0 == 0x80 || c == 0xde || c == 0xdf { // map format
		n, err := d.mapLen()
		if err != nil {
			return e, err
		}
		for range n {
			key, err := d.str()
			if err != nil {
				return e, err
			}
			switch key {
			case "type":
				if e.kind, err = d.str(); err != nil {
					return e, err
				}
			case "block_hashes":
				if e.hashes, err = d.hashes(); err != nil {
					return e, err
				}
			default:
				if err := d.skip(0); err != nil {
					return e, err
				}
			}
		}
		return e, nil
	}
	n, err := d.arrayLen()
	if err != nil || n < 1 {
		return e, fmt.Errorf("event: want an array or map, %v", err)
	}
	if e.kind, err = d.str(); err != nil {
		return e, err
	}
	rest := n - 1
	if e.kind != "AllBlocksCleared" && rest > 0 {
		if e.hashes, err = d.hashes(); err != nil {
			return e, err
		}
		rest--
	}
	for range rest {
		if err := d.skip(0); err != nil {
			return e, err
		}
	}
	return e, nil
}

// mpDecoder reads the msgpack subset vLLM's events use.
type mpDecoder struct {
	b []byte
	i int
}

var errTruncated = errors.New("msgpack: truncated")

func (d *mpDecoder) need(n int) error {
	if len(d.b)-d.i < n {
		return errTruncated
	}
	return nil
}

func (d *mpDecoder) be(n int) (uint64, error) {
	if err := d.need(n); err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range d.b[d.i : d.i+n] {
		v = v<<8 | uint64(c)
	}
	d.i += n
	return v, nil
}

func (d *mpDecoder) arrayLen() (int, error) {
	if err := d.need(1); err != nil {
		return 0, err
	}
	c := d.b[d.i]
	d.i++
	switch {
	case c&0xf0 == 0x90:
		return int(c & 0x0f), nil
	case c == 0xdc:
		v, err := d.be(2)
		return int(v), err
	case c == 0xdd:
		v, err := d.be(4)
		return int(v), err
	}
	return 0, fmt.Errorf("msgpack: want an array, got 0x%02x", c)
}

func (d *mpDecoder) mapLen() (int, error) {
	if err := d.need(1); err != nil {
		return 0, err
	}
	c := d.b[d.i]
	d.i++
	switch {
	case c&0xf0 == 0x80:
		return int(c & 0x0f), nil
	case c == 0xde:
		v, err := d.be(2)
		return int(v), err
	case c == 0xdf:
		v, err := d.be(4)
		return int(v), err
	}
	return 0, fmt.Errorf("msgpack: want a map, got 0x%02x", c)
}

func (d *mpDecoder) str() (string, error) {
	if err := d.need(1); err != nil {
		return "", err
	}
	c := d.b[d.i]
	d.i++
	var n uint64
	var err error
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, err = d.be(1)
	case c == 0xda:
		n, err = d.be(2)
	case c == 0xdb:
		n, err = d.be(4)
	default:
		return "", fmt.Errorf("msgpack: want a string, got 0x%02x", c)
	}
	if err != nil {
		return "", err
	}
	if err := d.need(int(n)); err != nil {
		return "", err
	}
	s := string(d.b[d.i : d.i+int(n)])
	d.i += int(n)
	return s, nil
}

// uint reads an integer as vLLM writes block hashes (unsigned, or signed
// when Python's hash was negative: kept as its two's complement bits).
func (d *mpDecoder) uint() (uint64, error) {
	if err := d.need(1); err != nil {
		return 0, err
	}
	c := d.b[d.i]
	d.i++
	switch {
	case c < 0x80:
		return uint64(c), nil
	case c >= 0xe0:
		return uint64(int64(int8(c))), nil
	case c == 0xcc:
		return d.be(1)
	case c == 0xcd:
		return d.be(2)
	case c == 0xce:
		return d.be(4)
	case c == 0xcf, c == 0xd3:
		return d.be(8)
	case c == 0xd0:
		v, err := d.be(1)
		return uint64(int64(int8(v))), err
	case c == 0xd1:
		v, err := d.be(2)
		return uint64(int64(int16(v))), err
	case c == 0xd2:
		v, err := d.be(4)
		return uint64(int64(int32(v))), err
	}
	return 0, fmt.Errorf("msgpack: want an integer, got 0x%02x", c)
}

func (d *mpDecoder) hashes() ([]uint64, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if n > maxHashesPerEvent {
		return nil, fmt.Errorf("event: %d block hashes, at most %d", n, maxHashesPerEvent)
	}
	out := make([]uint64, 0, n)
	for range n {
		h, err := d.uint()
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// skip steps over one value.
func (d *mpDecoder) skip(depth int) error {
	if depth > maxMsgpackDepth {
		return errors.New("msgpack: nested too deep")
	}
	if err := d.need(1); err != nil {
		return err
	}
	c := d.b[d.i]
	switch {
	case c < 0x80 || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		d.i++
		return nil
	case c&0xe0 == 0xa0 || c == 0xd9 || c == 0xda || c == 0xdb:
		_, err := d.str()
		return err
	case c&0xf0 == 0x90 || c == 0xdc || c == 0xdd:
		n, err := d.arrayLen()
		for ; err == nil && n > 0; n-- {
			err = d.skip(depth + 1)
		}
		return err
	case c&0xf0 == 0x80 || c == 0xde || c == 0xdf:
		n, err := d.mapLen()
		for ; err == nil && n > 0; n-- {
			if err = d.skip(depth + 1); err == nil {
				err = d.skip(depth + 1)
			}
		}
		return err
	}
	d.i++
	size := map[byte]int{0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8, 0xca: 4, 0xcb: 8}[c]
	if size == 0 {
		var n uint64
		var err error
		switch c {
		case 0xc4:
			n, err = d.be(1)
		case 0xc5:
			n, err = d.be(2)
		case 0xc6:
			n, err = d.be(4)
		default:
			return fmt.Errorf("msgpack: unsupported type 0x%02x", c)
		}
		if err != nil {
			return err
		}
		size = int(n)
	}
	if err := d.need(size); err != nil {
		return err
	}
	d.i += size
	return nil
}

// topicHostPort returns host:port and model of a kv@<host:port>@<model> topic.
func topicHostPort(topic string) (hostPort, model string, ok bool) {
	rest, found := strings.CutPrefix(topic, "kv@")
	if !found {
		return "", "", false
	}
	hostPort, model, ok = strings.Cut(rest, "@")
	return hostPort, model, ok && hostPort != ""
}

// subscribeKVEvents binds a SUB socket at endpoint and hands every message
// [topic, seq, batch] to handle until ctx ends. It returns once the
// socket listens (or failed to).
func subscribeKVEvents(ctx context.Context, endpoint string, handle func(topic string, batch []byte)) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	sock := zmq4.NewSub(ctx)
	if err := sock.Listen(endpoint); err != nil {
		cancel()
		sock.Close()
		return nil, fmt.Errorf("zmq listen %s: %w", endpoint, err)
	}
	if err := sock.SetOption(zmq4.OptionSubscribe, "kv@"); err != nil {
		cancel()
		sock.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := sock.Recv()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				time.Sleep(10 * time.Millisecond) // a broken peer must not spin the loop
				continue
			}
			if len(msg.Frames) < 3 {
				continue
			}
			handle(string(msg.Frames[0]), msg.Frames[2])
		}
	}()
	return func() { cancel(); sock.Close(); <-done }, nil
}

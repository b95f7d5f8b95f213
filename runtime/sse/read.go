package sse

import (
	"bufio"
	"io"
	"strings"
)

// Message is one event as a client receives it.
type Message struct {
	ID, Type string
	Data     string
}

// MaxLineBytes bounds one line a reader accepts.
const MaxLineBytes = 1 << 20

// Read parses an event stream, calling fn for each event (comments and retry lines are skipped)
// until the stream ends or fn returns an error, which Read returns.
func Read(r io.Reader, fn func(Message) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var m Message
	var data []string
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if seen {
				m.Data = strings.Join(data, "\n")
				if err := fn(m); err != nil {
					return err
				}
			}
			m, data, seen = Message{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.ID, seen = value, true
		case "event":
			m.Type, seen = value, true
		case "data":
			data, seen = append(data, value), true
		}
	}
	return sc.Err()
}

package tracespool

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"

	"github.com/lensfn/lensfn/wasm-modules/abi"
)

// Writer appends records to a new spool file.
type Writer struct {
	f       *os.File
	w       *bufio.Writer
	buf     []byte
	offsets []int64
	size    int64
	sources []string
	source  map[string]uint32
	err     error
}

// Create starts a spool in a new file in dir (the system's temporary folder when dir is empty),
// so spools of concurrent runs never share a file.
func Create(dir string) (*Writer, error) {
	f, err := os.CreateTemp(dir, "schedule-*.spool")
	if err != nil {
		return nil, fmt.Errorf("tracespool: %w", err)
	}
	return &Writer{f: f, w: bufio.NewWriterSize(f, 256<<10), source: map[string]uint32{}}, nil
}

// Append stores r (its Source included) as the next record.
func (w *Writer) Append(r *abi.TraceRequest) error {
	if w.err != nil {
		return w.err
	}
	idx, ok := w.source[r.Source]
	if !ok {
		if len(w.sources) == math.MaxUint32 {
			return errors.New("tracespool: too many source files")
		}
		idx = uint32(len(w.sources))
		w.sources = append(w.sources, r.Source)
		w.source[r.Source] = idx
	}
	w.buf = binary.LittleEndian.AppendUint32(w.buf[:0], idx)
	w.buf = abi.AppendRecord(w.buf, r)
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("tracespool: %w", err)
		return w.err
	}
	w.offsets = append(w.offsets, w.size)
	w.size += int64(len(w.buf))
	return nil
}

// Len is the number of records appended so far.
func (w *Writer) Len() int { return len(w.offsets) }

// Finish flushes the file and returns the spool for reading. The Writer is done either way.
func (w *Writer) Finish() (*Spool, error) {
	err := w.err
	if err == nil {
		err = w.w.Flush()
	}
	if err != nil {
		w.Abort()
		return nil, fmt.Errorf("tracespool: %w", err)
	}
	s := &Spool{f: w.f, offsets: append(w.offsets, w.size), sources: w.sources}
	*w = Writer{err: errors.New("tracespool: writer finished")}
	return s, nil
}

// Abort closes and removes the file of an unfinished spool.
func (w *Writer) Abort() {
	if w.f != nil {
		name := w.f.Name()
		w.f.Close()
		os.Remove(name)
		w.f = nil
	}
}

// Spool reads stored records by index. Its methods may be called from several goroutines.
type Spool struct {
	f       *os.File
	offsets []int64 // len = records + 1
	sources []string
	bufs    sync.Pool
}

// Len is the number of records.
func (s *Spool) Len() int { return len(s.offsets) - 1 }

// Read decodes record i (0-based) into r. Nothing in r aliases the spool's buffers.
func (s *Spool) Read(i int, r *abi.TraceRequest) error {
	if i < 0 || i >= s.Len() {
		return fmt.Errorf("tracespool: record %d out of range [0, %d)", i, s.Len())
	}
	n := int(s.offsets[i+1] - s.offsets[i])
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:n]
	if _, err := s.f.ReadAt(buf, s.offsets[i]); err != nil {
		return fmt.Errorf("tracespool: record %d: %w", i, err)
	}
	if n < 4 {
		return fmt.Errorf("tracespool: record %d: %w", i, abi.ErrTruncated)
	}
	src := binary.LittleEndian.Uint32(buf)
	if int(src) >= len(s.sources) {
		return fmt.Errorf("tracespool: record %d: source %d unknown", i, src)
	}
	rest, err := abi.DecodeRecord(buf[4:], r)
	if err != nil {
		return fmt.Errorf("tracespool: record %d: %w", i, err)
	}
	if len(rest) != 0 {
		return fmt.Errorf("tracespool: record %d: %d bytes after the record", i, len(rest))
	}
	r.Source = s.sources[src]
	return nil
}

// Close closes and removes the spool's file.
func (s *Spool) Close() error {
	name := s.f.Name()
	err := s.f.Close()
	if rmErr := os.Remove(name); err == nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = rmErr
	}
	return err
}

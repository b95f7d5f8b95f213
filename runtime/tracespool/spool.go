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

// Writer appends records to a new spool: a data file of records and an index file of their
// offsets, both written sequentially.
type Writer struct {
	data, index       *os.File
	dataBuf, indexBuf *bufio.Writer
	buf               []byte
	n                 int
	size              int64
	sources           []string
	source            map[string]uint32
	err               error
}

// Create starts a spool in new files in dir (the system's temporary folder when dir is empty),
// so spools of concurrent runs never share a file.
func Create(dir string) (*Writer, error) {
	data, err := os.CreateTemp(dir, "schedule-*.spool")
	if err != nil {
		return nil, fmt.Errorf("tracespool: %w", err)
	}
	index, err := os.OpenFile(data.Name()+".index", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		data.Close()
		os.Remove(data.Name())
		return nil, fmt.Errorf("tracespool: %w", err)
	}
	w := &Writer{data: data, index: index, dataBuf: bufio.NewWriterSize(data, 256<<10),
		indexBuf: bufio.NewWriterSize(index, 64<<10), source: map[string]uint32{}}
	w.writeOffset(0) // the index holds every record's start and the end of the last one
	return w, nil
}

func (w *Writer) writeOffset(off int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(off))
	if _, err := w.indexBuf.Write(b[:]); err != nil && w.err == nil {
		w.err = fmt.Errorf("tracespool: %w", err)
	}
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
	if _, err := w.dataBuf.Write(w.buf); err != nil {
		w.err = fmt.Errorf("tracespool: %w", err)
		return w.err
	}
	w.n++
	w.size += int64(len(w.buf))
	w.writeOffset(w.size)
	return w.err
}

// Len is the number of records appended so far.
func (w *Writer) Len() int { return w.n }

// Finish flushes the files and returns the spool for reading. The Writer is done either way.
func (w *Writer) Finish() (*Spool, error) {
	err := w.err
	if err == nil {
		err = w.dataBuf.Flush()
	}
	if err == nil {
		err = w.indexBuf.Flush()
	}
	if err != nil {
		w.Abort()
		return nil, fmt.Errorf("tracespool: %w", err)
	}
	s := &Spool{data: w.data, index: w.index, n: w.n, sources: w.sources}
	*w = Writer{err: errors.New("tracespool: writer finished")}
	return s, nil
}

// Abort closes and removes the files of an unfinished spool.
func (w *Writer) Abort() {
	if w.data != nil {
		removeFiles(w.data, w.index)
		w.data, w.index = nil, nil
	}
}

func removeFiles(files ...*os.File) error {
	var first error
	for _, f := range files {
		name := f.Name()
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	return first
}

// Spool reads stored records by index: one read of the index file for the record's place, one
// of the data file for the record. Its methods may be called from several goroutines.
type Spool struct {
	data, index *os.File
	n           int
	sources     []string
	bufs        sync.Pool
}

// Len is the number of records.
func (s *Spool) Len() int { return s.n }

// Read decodes record i (0-based) into r. Nothing in r aliases the spool's buffers.
func (s *Spool) Read(i int, r *abi.TraceRequest) error {
	if i < 0 || i >= s.n {
		return fmt.Errorf("tracespool: record %d out of range [0, %d)", i, s.n)
	}
	var place [16]byte
	if _, err := s.index.ReadAt(place[:], int64(i)*8); err != nil {
		return fmt.Errorf("tracespool: record %d: index: %w", i, err)
	}
	start, end := int64(binary.LittleEndian.Uint64(place[:])), int64(binary.LittleEndian.Uint64(place[8:]))
	if end < start+4 || end-start > math.MaxInt32 {
		return fmt.Errorf("tracespool: record %d: index entry [%d, %d) is damaged", i, start, end)
	}
	n := int(end - start)
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer s.bufs.Put(bp)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:n]
	if _, err := s.data.ReadAt(buf, start); err != nil {
		return fmt.Errorf("tracespool: record %d: %w", i, err)
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

// Close closes and removes the spool's files.
func (s *Spool) Close() error { return removeFiles(s.data, s.index) }

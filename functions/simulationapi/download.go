package simulationapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lensfn/lensfn/runtime/problem"
	"github.com/lensfn/lensfn/runtime/state"
)

// DownloadResult is the response of POST /trace-datasets/download.
type DownloadResult struct {
	ArtifactURI  string `json:"artifact_uri"`
	Path         string `json:"path"`
	TraceFormat  string `json:"trace_format"`
	SHA256       string `json:"sha256"`
	MetadataPath string `json:"metadata_path"`
	SizeBytes    int64  `json:"size_bytes"`
	// Transferred says whether this call fetched (or generated) the file; false when a present
	// file whose metadata carries the pinned digest was reused.
	Transferred bool `json:"transferred"`
	// Source is where the file came from: "upstream", "mirror", "generated" (the built-in
	// sample), or "reused" (already present and verified).
	Source string `json:"source"`
}

// datasetMetadata is <file>.metadata.json, written beside a downloaded dataset.
type datasetMetadata struct {
	Dataset          string    `json:"dataset"`
	TraceFormat      string    `json:"trace_format"`
	Scenario         string    `json:"scenario"`
	SourceURL        string    `json:"source_url"`
	FetchedFrom      string    `json:"fetched_from"`
	SHA256           string    `json:"sha256"`
	SizeBytes        int64     `json:"size_bytes"`
	Files            int       `json:"files"`
	Filter           string    `json:"filter,omitempty"`
	DownloadedAt     time.Time `json:"downloaded_at"`
	License          string    `json:"license"`
	SourceRepository string    `json:"source_repository"`
	Description      string    `json:"description"`
}

// Downloader fetches registered datasets into the data dir. Concurrent downloads of one dataset
// in this process share one transfer; across replicas a store lease lets only one run.
type Downloader struct {
	Root     string // <data dir>/datasets
	Mirror   string // LENS_DATASET_MIRROR: fetch <mirror>/<file> instead of upstream
	Client   *http.Client
	Store    state.Leases
	Owner    string
	MaxBytes int64
	// OnFetched is told once per transfer that completed (not per coalesced caller).
	OnFetched func(ctx context.Context, d Dataset, res DownloadResult)
	flights   singleflight.Group
}

// Path is where a dataset lives once downloaded.
func (dl *Downloader) Path(d Dataset) string { return filepath.Join(dl.Root, d.Filename) }

func (dl *Downloader) metadataPath(d Dataset) string { return dl.Path(d) + ".metadata.json" }

// Downloaded reports whether the dataset is present, with its size (directories: total bytes).
func (dl *Downloader) Downloaded(d Dataset) (bool, int64) {
	info, err := os.Stat(dl.Path(d))
	if err != nil {
		return false, 0
	}
	if !info.IsDir() {
		return true, info.Size()
	}
	var total int64
	entries, _ := os.ReadDir(dl.Path(d))
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			total += fi.Size()
		}
	}
	return true, total
}

// Download fetches d unless it is already present and verified (force re-fetches). Concurrent
// calls for one dataset share one transfer.
func (dl *Downloader) Download(ctx context.Context, d Dataset, force bool) (DownloadResult, error) {
	if !force {
		if res, ok := dl.existing(d); ok {
			return res, nil
		}
	}
	if d.Generate != nil {
		return dl.Materialise(d)
	}
	v, err, _ := dl.flights.Do(d.Name, func() (any, error) {
		// The transfer outlives a caller that gives up: the others coalesced on it still wait.
		ctx := context.WithoutCancel(ctx)
		res, fetched, err := dl.downloadLocked(ctx, d, force)
		if err == nil && fetched && dl.OnFetched != nil {
			dl.OnFetched(ctx, d, res)
		}
		return res, err
	})
	if err != nil {
		return DownloadResult{}, err
	}
	return v.(DownloadResult), nil
}

func (dl *Downloader) existing(d Dataset) (DownloadResult, bool) {
	raw, err := os.ReadFile(dl.metadataPath(d))
	if err != nil {
		return DownloadResult{}, false
	}
	var m datasetMetadata
	if json.Unmarshal(raw, &m) != nil || m.SHA256 != d.SHA256() {
		return DownloadResult{}, false
	}
	ok, size := dl.Downloaded(d)
	if !ok {
		return DownloadResult{}, false
	}
	return dl.result(d, size, "reused"), true
}

func (dl *Downloader) result(d Dataset, size int64, source string) DownloadResult {
	return DownloadResult{ArtifactURI: "artifact://dataset/" + d.Name + "/" + d.Filename, Path: dl.Path(d),
		TraceFormat: d.TraceFormat, SHA256: d.SHA256(), MetadataPath: dl.metadataPath(d), SizeBytes: size,
		Transferred: source != "reused", Source: source}
}

func (dl *Downloader) downloadLocked(ctx context.Context, d Dataset, force bool) (DownloadResult, bool, error) {
	lease, err := dl.Store.AcquireLease(ctx, "dataset-download:"+d.Name, dl.Owner, 30*time.Minute)
	if errors.Is(err, state.ErrLeaseHeld) {
		return DownloadResult{}, false, problem.New(problem.CodeConflict,
			"dataset %q is being downloaded by another instance; try again when it finishes", d.Name)
	}
	if err != nil {
		return DownloadResult{}, false, err
	}
	defer func() { _ = dl.Store.ReleaseLease(context.WithoutCancel(ctx), lease) }()
	if !force { // another instance may have finished while this one waited for the lease
		if res, ok := dl.existing(d); ok {
			return res, false, nil
		}
	}
	if err := os.MkdirAll(dl.Root, 0o755); err != nil {
		return DownloadResult{}, false, err
	}
	var size int64
	if len(d.Files) == 1 {
		size, err = dl.fetchSingle(ctx, d)
	} else {
		size, err = dl.fetchBundle(ctx, d)
	}
	if err != nil {
		return DownloadResult{}, false, err
	}
	meta := datasetMetadata{Dataset: d.Name, TraceFormat: d.TraceFormat, Scenario: d.Scenario, SourceURL: d.URL(),
		FetchedFrom: dl.sourceDescription(), SHA256: d.SHA256(), SizeBytes: size, Files: len(d.Files),
		DownloadedAt: time.Now().UTC(), License: d.License, SourceRepository: d.SourceRepository, Description: d.Description}
	if d.Filter != nil {
		meta.Filter = fmt.Sprintf("%s == %q", d.Filter.Column, d.Filter.Value)
	}
	raw, _ := json.MarshalIndent(meta, "", "  ")
	if err := writeFileAtomic(dl.metadataPath(d), append(raw, '\n')); err != nil {
		return DownloadResult{}, false, err
	}
	return dl.result(d, size, dl.sourceDescription()), true, nil
}

// Materialise writes a generated dataset and its metadata into the data dir. Every instance
// writes the same bytes (the generator is deterministic) with atomic renames, so replicas need
// no lease, and nothing is fetched.
func (dl *Downloader) Materialise(d Dataset) (DownloadResult, error) {
	raw := d.Generate()
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != d.SHA256() {
		return DownloadResult{}, fmt.Errorf("generated dataset %s does not match its digest", d.Name)
	}
	if err := os.MkdirAll(dl.Root, 0o755); err != nil {
		return DownloadResult{}, err
	}
	if err := writeFileAtomic(dl.Path(d), raw); err != nil {
		return DownloadResult{}, err
	}
	meta := datasetMetadata{Dataset: d.Name, TraceFormat: d.TraceFormat, Scenario: d.Scenario, FetchedFrom: "generated",
		SHA256: d.SHA256(), SizeBytes: int64(len(raw)), Files: 1, DownloadedAt: time.Now().UTC(), License: d.License,
		Description: d.Description}
	rawMeta, _ := json.MarshalIndent(meta, "", "  ")
	if err := writeFileAtomic(dl.metadataPath(d), append(rawMeta, '\n')); err != nil {
		return DownloadResult{}, err
	}
	return dl.result(d, int64(len(raw)), "generated"), nil
}

// MaterialiseGenerated writes every generated dataset that is not in place yet.
func (dl *Downloader) MaterialiseGenerated(all []Dataset) error {
	var errs []error
	for _, d := range all {
		if d.Generate == nil {
			continue
		}
		if _, ok := dl.existing(d); ok {
			continue
		}
		if _, err := dl.Materialise(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (dl *Downloader) sourceDescription() string {
	if dl.Mirror != "" {
		return "mirror"
	}
	return "upstream"
}

func (dl *Downloader) urlOf(d Dataset, f DatasetFile) string {
	if dl.Mirror == "" {
		return f.URL
	}
	base := strings.TrimRight(dl.Mirror, "/")
	if len(d.Files) > 1 {
		return base + "/" + d.Filename + "/" + f.Name
	}
	return base + "/" + f.Name
}

func (dl *Downloader) fetchSingle(ctx context.Context, d Dataset) (int64, error) {
	f := d.Files[0]
	tmp := filepath.Join(dl.Root, "."+d.Filename+"."+randomSuffix()+".part")
	defer os.Remove(tmp)
	size, err := dl.fetchVerified(ctx, dl.urlOf(d, f), tmp, f.SHA256)
	if err != nil {
		return 0, err
	}
	if d.Filter != nil {
		filtered := tmp + ".filtered"
		defer os.Remove(filtered)
		if size, err = filterCSV(tmp, filtered, *d.Filter); err != nil {
			return 0, problem.Wrap(problem.CodeBadRequest, err, fmt.Sprintf("dataset %q could not be filtered: %v", d.Name, err))
		}
		tmp = filtered
	}
	return size, os.Rename(tmp, dl.Path(d))
}

func (dl *Downloader) fetchBundle(ctx context.Context, d Dataset) (int64, error) {
	tmpDir := filepath.Join(dl.Root, "."+d.Filename+"."+randomSuffix()+".part")
	if err := os.Mkdir(tmpDir, 0o755); err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmpDir)
	var total int64
	for _, f := range d.Files {
		n, err := dl.fetchVerified(ctx, dl.urlOf(d, f), filepath.Join(tmpDir, f.Name), f.SHA256)
		if err != nil {
			return 0, err
		}
		total += n
	}
	old := dl.Path(d) + "." + randomSuffix() + ".old"
	if err := os.Rename(dl.Path(d), old); err == nil {
		defer os.RemoveAll(old)
	}
	return total, os.Rename(tmpDir, dl.Path(d))
}

// fetchVerified streams url into dst while hashing it; a digest other than want deletes dst.
func (dl *Downloader) fetchVerified(ctx context.Context, rawURL, dst, want string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	url := rawURL // as messages show it: without credentials a mirror URL may carry
	if req != nil && req.URL.User != nil {
		shown := *req.URL
		shown.User = nil
		url = shown.String()
	}
	if err != nil {
		return 0, problem.Wrap(problem.CodeBadRequest, err, fmt.Sprintf("bad download URL %q", url))
	}
	req.Header.Set("User-Agent", "lensfn-trace-downloader/1")
	resp, err := dl.Client.Do(req)
	if err != nil {
		return 0, upstreamError(err, fmt.Sprintf("download of %s failed: %s", url, transportCause(err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, problem.New(problem.CodeUpstream, "download of %s failed: the %s answered HTTP %d", url, dl.sourceName(), resp.StatusCode)
	}
	if resp.ContentLength > dl.MaxBytes {
		return 0, problem.New(problem.CodeUpstream, "download of %s is %d bytes, over the %d byte limit", url, resp.ContentLength, dl.MaxBytes)
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	hash := sha256.New()
	head := &prefixKeeper{limit: 64}
	n, copyErr := io.Copy(io.MultiWriter(out, hash, head), io.LimitReader(resp.Body, dl.MaxBytes+1))
	closeErr := out.Close()
	fail := func(err error) (int64, error) {
		os.Remove(dst)
		return 0, err
	}
	switch {
	case copyErr != nil:
		return fail(upstreamError(copyErr, fmt.Sprintf("download of %s was interrupted: %s", url, transportCause(copyErr))))
	case closeErr != nil:
		return fail(closeErr)
	case n > dl.MaxBytes:
		return fail(problem.New(problem.CodeUpstream, "download of %s exceeds the %d byte limit", url, dl.MaxBytes))
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != want {
		if bytes.HasPrefix(head.buf, []byte("version https://git-lfs")) {
			return fail(problem.New(problem.CodeUpstream, "download of %s returned a Git LFS pointer instead of the data", url))
		}
		return fail(problem.New(problem.CodeUpstream, "sha256 mismatch for %s: expected %s, got %s; the %s served other bytes and the file was deleted", url, want, got, dl.sourceName()))
	}
	return n, nil
}

// sourceName names where downloads come from, for error messages.
func (dl *Downloader) sourceName() string {
	if dl.Mirror != "" {
		return "mirror (LENS_DATASET_MIRROR)"
	}
	return "upstream server"
}

// upstreamError is a failure to get the bytes from the source: 504 when it did not answer in
// time, else 502. Neither is the client's fault.
func upstreamError(err error, detail string) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return problem.Wrap(problem.CodeGatewayTimeout, err, detail)
	}
	return problem.Wrap(problem.CodeUpstream, err, detail)
}

// transportCause says in words why a connection failed, naming the host it could not resolve
// or reach.
func transportCause(err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host %s could not be resolved (%s); without internet access set LENS_DATASET_MIRROR", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("could not connect to %v: %v", opErr.Addr, opErr.Err)
	}
	return err.Error()
}

// prefixKeeper remembers the first bytes written, to explain a digest mismatch.
type prefixKeeper struct {
	buf   []byte
	limit int
}

func (p *prefixKeeper) Write(b []byte) (int, error) {
	if room := p.limit - len(p.buf); room > 0 {
		p.buf = append(p.buf, b[:min(room, len(b))]...)
	}
	return len(b), nil
}

// filterCSV keeps the header and the rows whose column equals the value.
func filterCSV(src, dst string, f CSVFilter) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	r := csv.NewReader(bufio.NewReaderSize(in, 1<<16))
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return 0, fmt.Errorf("reading the CSV header: %w", err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	col := -1
	for i, h := range header {
		if h == f.Column {
			col = i
		}
	}
	if col < 0 {
		return 0, fmt.Errorf("the CSV has no %q column", f.Column)
	}
	out, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	w := csv.NewWriter(bw)
	_ = w.Write(header)
	kept := 0
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.Close()
			return 0, err
		}
		if col < len(rec) && rec[col] == f.Value {
			_ = w.Write(rec)
			kept++
		}
	}
	w.Flush()
	if err := errors.Join(w.Error(), bw.Flush()); err != nil {
		out.Close()
		return 0, err
	}
	if kept == 0 {
		out.Close()
		return 0, fmt.Errorf("no row has %s = %q", f.Column, f.Value)
	}
	info, err := out.Stat()
	if err != nil {
		out.Close()
		return 0, err
	}
	return info.Size(), out.Close()
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + "." + randomSuffix() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func manifestDigest(files []DatasetFile) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Name)
	}
	return hex.EncodeToString(h.Sum(nil))
}

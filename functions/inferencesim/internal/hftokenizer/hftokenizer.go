package hftokenizer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
)

// FileName is the Hugging Face tokenizer file.
const FileName = "tokenizer.json"

// maxFileBytes bounds the file read: real tokenizer.json files are a few MiB (Llama 3's is
// about 9 MiB).
const maxFileBytes = 64 << 20

// Tokenizer is a loaded tokenizer.json. Encoding is safe for concurrent use (the library's
// BPE cache is locked).
type Tokenizer struct {
	tk   *tokenizer.Tokenizer
	Path string // the file it was loaded from
}

var _ textgen.Tokenizer = (*Tokenizer)(nil)

// Load reads path, a tokenizer.json or a directory holding one.
func Load(path string) (*Tokenizer, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, FileName)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w (a local tokenizer.json or its directory; nothing is downloaded)", err)
	}
	if fi.Size() > maxFileBytes {
		return nil, fmt.Errorf("tokenizer: %s is %d bytes, more than the %d a tokenizer.json may have", path, fi.Size(), maxFileBytes)
	}
	tk, err := pretrained.FromFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s is not a Hugging Face tokenizer.json this simulator can use: %v", path, err)
	}
	t := &Tokenizer{tk: tk, Path: path}
	if _, err := t.encode("probe"); err != nil {
		return nil, fmt.Errorf("tokenizer: %s does not encode text: %v", path, err)
	}
	return t, nil
}

// FindInCache looks for model's tokenizer.json under a tokenizers cache directory, in the two
// layouts a download leaves: <dir>/<model>/tokenizer.json and the Hugging Face hub's
// <dir>/models--<org>--<name>/snapshots/<revision>/tokenizer.json (the newest snapshot). It
// returns "" when there is none.
func FindInCache(dir, model string) (string, error) {
	if model == "" || strings.Contains(model, "..") {
		return "", nil
	}
	direct := filepath.Join(dir, filepath.FromSlash(model), FileName)
	if _, err := os.Stat(direct); err == nil {
		return direct, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	snapshots, _ := filepath.Glob(filepath.Join(dir, "models--"+strings.ReplaceAll(model, "/", "--"), "snapshots", "*", FileName))
	newest, newestTime := "", int64(0)
	for _, s := range snapshots {
		if fi, err := os.Stat(s); err == nil && fi.ModTime().UnixNano() >= newestTime {
			newest, newestTime = s, fi.ModTime().UnixNano()
		}
	}
	return newest, nil
}

func (t *Tokenizer) encode(s string) (*tokenizer.Encoding, error) {
	// Special tokens as vLLM adds them to a completion prompt (e.g. a BOS).
	return t.tk.EncodeSingle(s, true)
}

// AppendIDs appends the ids of s's tokens; text the tokenizer cannot encode counts as none.
func (t *Tokenizer) AppendIDs(dst []uint32, s string) []uint32 {
	en, err := t.encode(s)
	if err != nil {
		return dst
	}
	for _, id := range en.Ids {
		dst = append(dst, uint32(id))
	}
	return dst
}

// Count returns the number of tokens of s.
func (t *Tokenizer) Count(s string) int {
	en, err := t.encode(s)
	if err != nil {
		return 0
	}
	return len(en.Ids)
}

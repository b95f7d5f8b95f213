package inferencesim

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"sync"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // pure-Go SQLite (WASM on wazero)

	"github.com/lensfn/lensfn/functions/inference-sim/internal/config"
	"github.com/lensfn/lensfn/functions/inference-sim/internal/engine/textgen"
)

// dataset serves responses from a SQLite corpus (llm-d's converted
// ShareGPT layout): table (id INTEGER, prompt_hash BLOB, gen_tokens JSON,
// n_gen_tokens INTEGER), prompt_hash = SHA-256 of the prompt's token ids as
// little-endian uint32. gen_tokens holds the response's token strings, as
// a JSON array or as {"strings":[…]}.
type dataset struct {
	db     *sql.DB
	table  string
	log    *slog.Logger
	mu     sync.Mutex
	byHash *sql.Stmt
	any    *sql.Stmt
	exact  *sql.Stmt
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func openDataset(cfg *config.Config, log *slog.Logger) (*dataset, error) {
	if !tableName.MatchString(cfg.DatasetTableName) {
		return nil, fmt.Errorf("--dataset-table-name %q is not a valid table name", cfg.DatasetTableName)
	}
	if _, err := os.Stat(cfg.DatasetPath); errors.Is(err, os.ErrNotExist) {
		if cfg.DatasetURL == "" {
			return nil, fmt.Errorf("dataset %s does not exist and no --dataset-url is set", cfg.DatasetPath)
		}
		if err := download(cfg.DatasetURL, cfg.DatasetPath); err != nil {
			return nil, fmt.Errorf("dataset download: %w", err)
		}
	}
	dsn := "file:" + cfg.DatasetPath + "?mode=ro"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	if cfg.DatasetInMemory {
		mem, err := sql.Open("sqlite3", "file:inference-sim-dataset?mode=memory&cache=shared")
		if err != nil {
			db.Close()
			return nil, err
		}
		mem.SetMaxOpenConns(1)
		if _, err := mem.Exec("ATTACH DATABASE ? AS src", cfg.DatasetPath); err == nil {
			_, err = mem.Exec(fmt.Sprintf("CREATE TABLE %[1]s AS SELECT * FROM src.%[1]s", cfg.DatasetTableName))
			if err == nil {
				db.Close()
				db = mem
			} else {
				mem.Close()
			}
		} else {
			mem.Close()
		}
	}
	d := &dataset{db: db, table: cfg.DatasetTableName, log: log}
	t := cfg.DatasetTableName
	prep := func(q string) (*sql.Stmt, error) { return db.Prepare(fmt.Sprintf(q, t)) }
	if d.byHash, err = prep("SELECT gen_tokens FROM %s WHERE prompt_hash = ?"); err != nil {
		// A file locked or in another format: fall back to preset sentences.
		log.Warn("dataset unusable, using preset responses", "path", cfg.DatasetPath, "err", err)
		db.Close()
		return nil, nil
	}
	if d.any, err = prep("SELECT gen_tokens FROM %s WHERE n_gen_tokens <= ? ORDER BY RANDOM() LIMIT 1"); err != nil {
		db.Close()
		return nil, err
	}
	if d.exact, err = prep("SELECT gen_tokens FROM %s WHERE n_gen_tokens = ? ORDER BY RANDOM() LIMIT 1"); err != nil {
		db.Close()
		return nil, err
	}
	return d, nil
}

func download(url, path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (d *dataset) Close() error {
	if d == nil {
		return nil
	}
	return d.db.Close()
}

func decodeGenTokens(raw []byte) ([]string, error) {
	var toks []string
	if err := json.Unmarshal(raw, &toks); err == nil {
		return toks, nil
	}
	var obj struct {
		Strings []string `json:"strings"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	return obj.Strings, nil
}

// promptHash is SHA-256 over the little-endian uint32 token ids.
func promptHash(ids []uint32) []byte {
	h := sha256.New()
	var b [4]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint32(b[:], id)
		h.Write(b[:])
	}
	return h.Sum(nil)
}

// appendResponse appends a response for the flattened prompt: a stored
// answer to the same prompt if any (trimmed to maxTokens), else a random
// one that fits; with ignore_eos it is padded with preset tokens.
func (d *dataset) appendResponse(dst []string, r *textgen.RNG, flatPrompt []byte, maxTokens int, ignoreEOS, maxSet bool) ([]string, string) {
	start := len(dst)
	ids := textgen.AppendTokenIDs(nil, string(flatPrompt))
	var toks []string
	rows, err := d.byHash.Query(promptHash(ids))
	if err == nil {
		var all [][]byte
		for rows.Next() {
			var raw []byte
			if rows.Scan(&raw) == nil {
				all = append(all, raw)
			}
		}
		rows.Close()
		if len(all) > 0 {
			toks, _ = decodeGenTokens(all[r.Intn(len(all))])
		}
	}
	if toks == nil {
		var raw []byte
		if ignoreEOS {
			err = d.exact.QueryRow(maxTokens).Scan(&raw)
		}
		if raw == nil {
			err = d.any.QueryRow(maxTokens).Scan(&raw)
		}
		if err == nil {
			toks, _ = decodeGenTokens(raw)
		}
	}
	if len(toks) > maxTokens {
		toks = toks[:maxTokens]
	}
	dst = append(dst, toks...)
	if len(toks) == 0 || ignoreEOS {
		missing := maxTokens - len(toks)
		if len(toks) == 0 && !ignoreEOS {
			missing = textgen.ResponseLengthHistogram(r, 1, maxTokens)
		}
		dst = textgen.AppendPresetTokens(dst, r, missing)
	}
	if len(dst)-start >= maxTokens && (maxSet || ignoreEOS) {
		return dst, finishLength
	}
	return dst, finishStop
}

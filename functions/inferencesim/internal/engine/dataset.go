package engine

import (
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine/textgen"
)

// Dataset serves responses from a SQLite corpus (llm-d's converted ShareGPT layout): table
// (id INTEGER, prompt_hash BLOB, gen_tokens JSON, n_gen_tokens INTEGER), prompt_hash =
// SHA-256 of the prompt's token ids as little-endian uint32 (PromptHash). gen_tokens holds
// the response's token strings, as a JSON array or as {"strings":[…]}. The database is
// opened by the caller (the root package owns the driver and the download).
type Dataset struct {
	db     *sql.DB
	byHash *sql.Stmt
	any    *sql.Stmt
	exact  *sql.Stmt
}

// ErrDatasetUnusable is NewDataset's error for a database whose table cannot be read (a
// file locked or in another format): the simulator falls back to preset responses.
var ErrDatasetUnusable = errors.New("dataset unusable")

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckTableName refuses a --dataset-table-name that is not a plain SQL identifier (it is
// put into the queries).
func CheckTableName(table string) error {
	if !tableName.MatchString(table) {
		return fmt.Errorf("--dataset-table-name %q is not a valid table name", table)
	}
	return nil
}

// NewDataset prepares the queries on table of db; it owns db from then on, also on an error
// (it closes it).
func NewDataset(db *sql.DB, table string) (*Dataset, error) {
	if err := CheckTableName(table); err != nil {
		db.Close()
		return nil, err
	}
	d := &Dataset{db: db}
	prep := func(q string) (*sql.Stmt, error) { return db.Prepare(fmt.Sprintf(q, table)) }
	var err error
	if d.byHash, err = prep("SELECT gen_tokens FROM %s WHERE prompt_hash = ?"); err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %v", ErrDatasetUnusable, err)
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

// Close closes the database.
func (d *Dataset) Close() error {
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

// PromptHash is SHA-256 over the little-endian uint32 token ids.
func PromptHash(ids []uint32) []byte {
	h := sha256.New()
	var b [4]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint32(b[:], id)
		h.Write(b[:])
	}
	return h.Sum(nil)
}

// AppendResponse appends a response for the prompt whose PromptHash is promptHash: a stored
// answer to the same prompt if any (trimmed to maxTokens), else a random one that fits; with
// ignore_eos it is padded with preset tokens. It returns the finish reason.
func (d *Dataset) AppendResponse(dst []string, r *textgen.RNG, promptHash []byte, maxTokens int, ignoreEOS, maxSet bool) ([]string, string) {
	start := len(dst)
	var toks []string
	rows, err := d.byHash.Query(promptHash)
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
		return dst, FinishLength
	}
	return dst, FinishStop
}

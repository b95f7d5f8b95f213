package inferencesim

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	_ "github.com/ncruces/go-sqlite3/driver" // pure-Go SQLite: SQLite's WASM build run by wazero
	_ "github.com/ncruces/go-sqlite3/embed"  // that WASM build (v0.32: v0.33+ translate it to Go instead, 55 CPU s more to compile)

	"github.com/lensfn/lensfn/functions/inferencesim/internal/config"
	"github.com/lensfn/lensfn/functions/inferencesim/internal/engine"
)

// openDataset opens --dataset-path (downloading --dataset-url first when the file is
// missing), read-only or copied into memory with --dataset-in-memory, for the engine's
// Dataset, which serves the responses. A file that is not a usable corpus falls back to
// preset responses (nil, nil).
func openDataset(cfg *config.Config, log *slog.Logger) (*engine.Dataset, error) {
	if err := engine.CheckTableName(cfg.DatasetTableName); err != nil {
		return nil, err
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
	d, err := engine.NewDataset(db, cfg.DatasetTableName)
	if errors.Is(err, engine.ErrDatasetUnusable) {
		// A file locked or in another format: fall back to preset sentences.
		log.Log(context.Background(), levelWarn, "dataset unusable, using preset responses", "path", cfg.DatasetPath, "err", err)
		return nil, nil
	}
	return d, err
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

package lensctl

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/jedib0t/go-pretty/v6/table"
	"gopkg.in/yaml.v3"
)

// printer writes a command's result as a table (default), JSON or YAML.
type printer struct {
	format string
	out    io.Writer
}

func (p printer) validate() error {
	switch p.format {
	case "table", "json", "yaml":
		return nil
	}
	return usageError{fmt.Errorf("--output must be table, json or yaml, not %q", p.format)}
}

// print writes v as JSON or YAML, or calls tableFn for the table format.
func (p printer) print(v any, tableFn func(t table.Writer)) error {
	switch p.format {
	case "json":
		enc := json.NewEncoder(p.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		// Through JSON, so YAML keys are the API's field names.
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return err
		}
		enc := yaml.NewEncoder(p.out)
		enc.SetIndent(2)
		if err := enc.Encode(generic); err != nil {
			return err
		}
		return enc.Close()
	}
	t := table.NewWriter()
	t.SetOutputMirror(p.out)
	t.SetStyle(table.StyleLight)
	tableFn(t)
	t.Render()
	return nil
}

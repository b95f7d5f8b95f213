package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lensfn/lensfn/events"
)

func main() {
	dir := "schemas"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	for _, d := range events.Catalogue {
		out, err := events.Schema(d)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := os.WriteFile(filepath.Join(dir, events.SchemaFile(d.Type)), out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

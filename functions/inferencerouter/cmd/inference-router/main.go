package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/lensfn/lensfn/functions/inferencerouter"
)

func main() {
	if err := inferencerouter.Run(context.Background(), os.Args[1:], os.Getenv, os.Stderr); err != nil {
		if !errors.Is(err, inferencerouter.ErrUsage) {
			fmt.Fprintln(os.Stderr, "inference-router:", err)
		}
		os.Exit(2)
	}
}

package main

import (
	"os"

	"github.com/lensfn/lensfn/tests/fidelity"
)

func main() { os.Exit(fidelity.Main(os.Args[1:], os.Stdout, os.Stderr)) }

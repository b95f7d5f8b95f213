package main

import (
	"os"

	"github.com/lensfn/lensfn/deploy/lensctl"
)

func main() { os.Exit(lensctl.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)) }

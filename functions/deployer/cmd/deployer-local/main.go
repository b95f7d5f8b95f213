package main

import (
	"github.com/lensfn/lensfn/functions/deployer"
	"github.com/lensfn/lensfn/runtime/fn"
)

func main() { fn.Main(deployer.Name, deployer.Builder(deployer.LocalProvider)) }

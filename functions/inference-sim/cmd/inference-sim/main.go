package main

import inferencesim "github.com/lensfn/lensfn/functions/inference-sim"

func main() { inferencesim.Main() }

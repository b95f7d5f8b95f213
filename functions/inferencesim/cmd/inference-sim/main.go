package main

import inferencesim "github.com/lensfn/lensfn/functions/inferencesim"

func main() { inferencesim.Main() }

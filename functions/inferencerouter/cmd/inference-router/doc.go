// Command inference-router runs the inference router: flags and
// environment as functions/inferencerouter's README section lists them.
// It imports only its function, functions/inferencerouter.
package main

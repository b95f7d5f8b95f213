// Command inference-router runs the inference router: flags and
// environment as functions/inference-router's README section lists them.
// It imports only its function.
package main

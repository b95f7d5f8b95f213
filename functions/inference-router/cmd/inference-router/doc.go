// Command inference-router runs the inference router: flags and
// environment as functions/inference-router's README section lists them.
// It imports only its function, functions/inference-router.
package main

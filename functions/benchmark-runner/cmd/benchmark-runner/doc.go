// Command benchmark-runner runs queued benchmark runs as a Knative function (see functions/benchmark-runner).
package main

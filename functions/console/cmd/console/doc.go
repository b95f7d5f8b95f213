// Command console serves the web console as a Knative function (see functions/console).
//
// It imports functions/console and runtime/fn only.
package main

// Command simulation-api serves /api/simulation as a Knative function (see functions/simulation-api).
package main

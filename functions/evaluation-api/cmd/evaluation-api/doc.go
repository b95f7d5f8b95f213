// Command evaluation-api serves /api/v1/evaluate as a Knative function (see functions/evaluation-api).
package main

// Command inventory-api serves the inventory routes as a Knative function (see functions/inventory-api).
//
// It imports functions/inventory-api and runtime/fn only.
package main

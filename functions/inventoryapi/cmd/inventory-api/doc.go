// Command inventory-api serves the inventory routes as a Knative function (see functions/inventoryapi).
//
// It imports functions/inventoryapi and runtime/fn only.
package main

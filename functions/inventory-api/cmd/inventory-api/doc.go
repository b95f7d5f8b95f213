// Command inventory-api serves the inventory routes as a Knative function (see functions/inventory-api).
package main

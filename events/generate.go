package events

//go:generate go run ./internal/genschema schemas

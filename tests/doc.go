// Package tests holds corpsim's end-to-end tests: whole sessions through the
// real NATS server and the real Pebble log, determinism, the command line.
package tests

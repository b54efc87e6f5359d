// Package tests holds corpsim's end-to-end tests: whole sessions through the
// real NATS server and the real Pebble log, determinism, the command line;
// and the guards that pin the engine's output: golden logs of the shipped
// worlds (golden_test.go, testdata/golden) and the purity check of the
// deterministic core (purity_test.go).
package tests

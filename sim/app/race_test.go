//go:build race

package app_test

// raceDetector: the race detector slows the bus path (JSON, NATS) tenfold.
const raceDetector = true

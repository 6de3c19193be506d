//go:build race

package kafkabroker_test

// raceEnabled says whether the tests run with the race detector.
const raceEnabled = true

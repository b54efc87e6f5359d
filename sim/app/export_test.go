package app

// ReplayEngine is replayEngine, for the tests of package app_test.
var ReplayEngine = replayEngine

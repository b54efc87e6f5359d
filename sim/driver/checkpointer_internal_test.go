package driver

import "testing"

// By default a checkpoint is due once the log has grown by snapshotRatio
// times the last snapshot; when that snapshot kept what the agents
// remember, also once the turns asked since would cost a recall as much
// as another checkpoint (recalledTurnBytes a turn), never sooner than
// DefaultCheckpointEvery events after it. A configured interval ignores
// both.
func TestCheckpointsFollowTheTurnsToRecall(t *testing.T) {
	const snap = 1 << 20
	turns := snap / recalledTurnBytes
	var c checkpointer
	c.taken(1000, snap, false)
	c.asked(turns)
	c.logged(snap)
	if c.due(5000) {
		t.Fatal("due after a snapshot that kept no memory, the log grown by less than its ratio")
	}
	c.logged((snapshotRatio - 1) * snap)
	if !c.due(5000) {
		t.Fatal("not due once the log grew by the snapshot ratio")
	}

	c.taken(5000, snap, true)
	c.asked(turns - 1)
	if c.due(9000) {
		t.Fatal("due a turn short of a snapshot's worth")
	}
	c.asked(1)
	if !c.due(9000) {
		t.Fatal("not due with a snapshot's worth of turns to recall")
	}
	if c.due(5000 + DefaultCheckpointEvery - 1) {
		t.Fatal("due fewer than DefaultCheckpointEvery events after the last")
	}

	every := checkpointer{every: 100, remember: true, turns: 10 * turns}
	if every.due(99) || !every.due(100) {
		t.Fatal("a configured interval is not the multiples of it")
	}
}

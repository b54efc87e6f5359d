package org

// ProjectDone is how many of project id's tasks are done (0 for an unknown
// project), kept as events are applied: a caller asking whether a project
// is complete need not look at its tasks one by one.
func (s *State) ProjectDone(id string) int { return s.doneIn[id] }

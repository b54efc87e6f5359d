package workers

// waiting reports whether callers wait for the call after the one running.
func (g *Group) waiting() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.next != nil
}

package httpgw

// EndedHeld is how many ended sessions' records the gateway holds in its
// list of ended sessions (Config.RetainBytes), forgotten or not.
func EndedHeld(g *Gateway) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.ended)
}

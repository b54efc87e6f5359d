package nemogym

// Sweep drops the idle sessions now, as the sweeper does every so often.
func (s *Server) Sweep() int { return s.sweep() }

package hubserver

// OpenStreams returns how many event streams are open (for the tests of
// package hubserver_test).
func (s *Server) OpenStreams() int {
	s.streamsMu.Lock()
	defer s.streamsMu.Unlock()
	return len(s.live)
}

package explorer

// WaitPrefetch waits until no background index runs.
func (s *Server) WaitPrefetch() { s.pfWG.Wait() }

// Indexed reports whether key's index is cached (any version).
func (s *Server) Indexed(key string) bool {
	s.trajs.mu.Lock()
	defer s.trajs.mu.Unlock()
	return s.trajs.items[key] != nil
}

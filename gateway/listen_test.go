package gateway

// streams counts the sessions holding a listening stream.
func (f *mcpFront) streams() int {
	n := 0
	for _, s := range f.sessions.all() {
		s.mu.Lock()
		if s.stream != nil {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

package service

// SetKeyLimits lowers the key limits of s for a test (0 keeps a default).
func SetKeyLimits(s *Service, perHour, live int) {
	s.keyLimit.mu.Lock()
	defer s.keyLimit.mu.Unlock()
	s.keyLimit.perHour, s.keyLimit.live = perHour, live
}

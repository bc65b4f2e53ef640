package haproxy

// Binary is the resolved haproxy executable, for `haproxy -c` on candidates.
func (s *Supervisor) Binary() string { return s.binary }

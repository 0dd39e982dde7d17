package live

// SessionTokens reveals a session's tokens to the tests, which look for
// them where they must not be (files, output, errors).
func SessionTokens(s *Session) (access, refresh string) { return s.access.reveal(), s.refresh.reveal() }

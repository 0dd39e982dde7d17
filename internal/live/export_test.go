package live

// SessionTokens reveals a session's tokens to the tests, which look for
// them where they must not be (files, output, errors).
func SessionTokens(s *Session) (access, refresh string) { return s.access.reveal(), s.refresh.reveal() }

// RPCRateClass and RPCOfTool open the RPC → limit class map to the tests
// that hold it to the SQL and to the catalog's tiers.
var RPCRateClass = rpcRateClass

// RPCOfTool is rpcOfTool.
func RPCOfTool(tool, class string) string { return rpcOfTool(tool, class) }

package live

// RPCRateClass and RPCOfTool open the RPC → limit class map to the tests
// that hold it to the SQL and to the catalog's tiers.
var RPCRateClass = rpcRateClass

// RPCOfTool is rpcOfTool.
func RPCOfTool(tool, class string) string { return rpcOfTool(tool, class) }

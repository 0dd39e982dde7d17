// Package approval decides whether an action proposal may execute: its
// canonical hash (RFC 8785 JCS → sha256:), the checks a human grant must
// pass, the automation-policy evaluator, and the human approval service the
// approval terminal calls. It decides; the store records and re-checks
// under its write lock. No MCP tool reaches the service: the agent may ask,
// only a human surface or a seller's bounded policy authorises.
package approval

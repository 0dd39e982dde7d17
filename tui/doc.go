// Package tui is `trovesnap approve`: the seller's approval terminal, the
// human surface of the approval road (DESIGN "Approval"). A person at a
// keyboard reviews the proposals agents made and issues, denies or revokes
// the grants that let them execute; no MCP tool can do any of this.
//
// The shape follows charmbracelet/crush: one root Model owns the data and
// the screen stack; screens turn key presses into Actions and never do I/O;
// the root turns Actions into tea.Cmds, the only place the Backend is
// called. That keeps every screen testable by feeding keys and asserting
// the Action, and keeps the store's single-writer rule (all writes go
// through the Backend, which waits on a busy database) out of the view code.
//
// The package sees the store only through Backend, so it runs on the
// embedded store today and on a live backend later.
package tui

package live

import "context"

// RoleReport is what the public key's own role (anon) may touch
// (mcp_role_check runs as the caller). For a correct project the function
// list holds only the mcp_* RPCs and every flag is false.
type RoleReport struct {
	Role            string   `json:"role"`
	Superuser       bool     `json:"superuser"`
	BypassRLS       bool     `json:"bypass_rls"`
	SchemaUsage     bool     `json:"schema_usage"`
	TablePrivileges []string `json:"table_privileges"`
	Functions       []string `json:"functions"`
}

// TableAccess reports whether the role can reach any table directly.
func (r RoleReport) TableAccess() bool {
	return r.Superuser || r.BypassRLS || r.SchemaUsage || len(r.TablePrivileges) > 0
}

// RemoteSchemaVersion is the newest migration applied to the project.
func (b *Backend) RemoteSchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := b.call(ctx, "mcp_schema_version", map[string]any{}, &v)
	return v, err
}

// RoleCheck asks the database what the public key's role may touch.
func (b *Backend) RoleCheck(ctx context.Context) (RoleReport, error) {
	var r RoleReport
	err := b.call(ctx, "mcp_role_check", map[string]any{}, &r)
	return r, err
}

package store

import (
	"strings"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// quotaError recognises a refusal of the quota triggers
// (migrations/*_cursor_secret_quota.sql) in a driver error and turns it into the
// domain's quota error; nil when err is something else. The triggers run
// inside the write's transaction, which the caller then rolls back whole.
func quotaError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "trovesnap_quota:open_candidates"):
		return domain.QuotaExceeded(domain.QuotaOpenCandidates)
	case strings.Contains(msg, "trovesnap_quota:candidate_bytes"):
		return domain.QuotaExceeded(domain.QuotaCandidateBytes)
	}
	return nil
}

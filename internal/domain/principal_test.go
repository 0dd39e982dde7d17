package domain_test

import (
	"testing"

	"github.com/triunalabs/trovesnap/internal/domain"
)

// TestPrincipal_MaySeeProposal is the §4.3 rule on proposals: an unscoped
// member sees every proposal; a sale-scoped one only a proposal whose every
// sale is assigned to it, and never one that names no sale.
func TestPrincipal_MaySeeProposal(t *testing.T) {
	scoped := domain.Principal{SaleScoped: true, AssignedSaleIDs: []string{"sale_223"}}
	unscoped := domain.Principal{}
	// A scope that lists sales but is not in force limits nothing.
	unscopedWithSales := domain.Principal{AssignedSaleIDs: []string{"sale_223"}}
	// A scoped membership assigned no sale sees no proposal at all.
	scopedNone := domain.Principal{SaleScoped: true}
	cases := []struct {
		name  string
		sales []string
		want  map[string]bool // by principal
	}{
		{"no sale", nil, map[string]bool{"scoped": false, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"empty sales", []string{}, map[string]bool{"scoped": false, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"one assigned", []string{"sale_223"}, map[string]bool{"scoped": true, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"one unassigned", []string{"sale_221"}, map[string]bool{"scoped": false, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"two sales mixed", []string{"sale_223", "sale_221"}, map[string]bool{"scoped": false, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"two sales mixed, other order", []string{"sale_221", "sale_223"}, map[string]bool{"scoped": false, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
		{"the assigned sale twice", []string{"sale_223", "sale_223"}, map[string]bool{"scoped": true, "unscoped": true, "unscoped with sales": true, "scoped to none": false}},
	}
	principals := map[string]domain.Principal{"scoped": scoped, "unscoped": unscoped,
		"unscoped with sales": unscopedWithSales, "scoped to none": scopedNone}
	for _, c := range cases {
		for who, p := range principals {
			if got := p.MaySeeProposal(domain.Proposal{ID: "proposal_1", SaleIDs: c.sales}); got != c.want[who] {
				t.Errorf("%s: %s member (%v) sees it = %v, want %v", c.name, who, p.AssignedSaleIDs, got, c.want[who])
			}
		}
	}
}

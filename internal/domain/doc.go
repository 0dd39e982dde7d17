// Package domain holds what every backend and every surface of trovesnap must
// agree on, declared once:
//
//   - the entities (tenant, sale, item, candidate, import run, proposal,
//     grant, policy, client, principal, plugin event …) and their id
//     prefixes, clocks and id generators;
//   - the Backend interface (with ReadBackend and IngestionBackend) that the
//     embedded store and the live Supabase backend both implement, its page
//     sizes and its cursors;
//   - the sentinel errors the gate maps to the P7 error taxonomy;
//   - the domain rules the store executes and the catalog, gate, approval
//     service and terminal read: the role permission matrix, the item
//     lifecycle, proposal building, ingestion and listing checks, imported
//     text cleaning, marketplace query checks and limits;
//   - the RFC 8785 canonical JSON and the audit hash chain built on it.
//
// It imports nothing of ours: every other package may depend on it, and it
// must stay free of storage, transport and policy decisions.
package domain

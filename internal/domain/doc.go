// Package domain holds trovesnap's entities, the Backend interface that the
// embedded store and the live Supabase backend both implement, and the
// sentinel errors the gate maps to the P7 error taxonomy.
//
// It imports nothing of ours: every other package may depend on it, and it
// must stay free of storage, transport and policy decisions.
package domain

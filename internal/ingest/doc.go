// Package ingest holds the pure checks of the ingestion door (spec §13, §28,
// §29): CSV parsing, column mapping and row normalisation, and the checks an
// uploaded photo must pass before anything is stored.
//
// It reads bytes and returns values or *domain.InputError; it performs no I/O
// and imports only internal/domain and the standard library, so the catalog
// can run it before the one Backend call of a handler and fuzz tests can run
// it on anything. Every text it returns has been normalised with
// domain.CleanText/CleanLine: imported content is data, never instructions.
package ingest

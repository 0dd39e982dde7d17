-- Sale day (issue 16): a checkout scan is recorded by the controlled action
-- record_checkout_scan, in the transaction that executes its proposal, so
-- each row names the scan (hold, sold_pending_pickup, picked_up) and the
-- proposal it executed. Rows written before carry '' for both. No column
-- holds an amount or a payment: a scan is an item-status operation.
ALTER TABLE checkout_scans ADD COLUMN scan TEXT NOT NULL DEFAULT ''
    CHECK (scan IN ('', 'hold', 'sold_pending_pickup', 'picked_up'));
ALTER TABLE checkout_scans ADD COLUMN proposal_id TEXT NOT NULL DEFAULT '';

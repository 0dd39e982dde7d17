-- 0007_outbox: live mode's local outbox. The plugin_events of calls that
-- wrote nothing (reads, blocks, failures, replays) are queued here and
-- delivered to Supabase (mcp_append_event) by a flusher with retries and
-- exponential backoff, so calls keep answering while Supabase is out and no
-- event is lost. Delivery is idempotent by event id on both ends.
--
-- state: pending (to deliver, from next_attempt_at), sent (delivered; kept
-- a day for `sync status`), rejected (Supabase refused it as invalid: kept,
-- never retried, shown by `sync status`). lease_until lets several server
-- processes sharing this file flush without sending one event twice at once.
CREATE TABLE event_outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id        TEXT NOT NULL UNIQUE CHECK (event_id <> ''),
    body            TEXT NOT NULL CHECK (json_valid(body)),
    state           TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'rejected')),
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    enqueued_at     TEXT NOT NULL,
    next_attempt_at TEXT NOT NULL,
    lease_until     TEXT,
    last_error      TEXT NOT NULL DEFAULT '',
    sent_at         TEXT
) STRICT;
CREATE INDEX event_outbox_due ON event_outbox (state, next_attempt_at, seq);

-- Refused calls count against their own per-client budget (issue 13,
-- finding 6): a column of the limits, 0 meaning the default (120/min).

ALTER TABLE mcp_limits ADD COLUMN rejected_calls_per_minute INTEGER NOT NULL DEFAULT 0
    CHECK (rejected_calls_per_minute >= 0);

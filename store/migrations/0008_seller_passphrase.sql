-- 0008_seller_passphrase: the seller's approval passphrase of this store
-- (one per database file, so one per data directory by default). Every CLI
-- command that grants or widens authority asks for it. Stored only as an
-- argon2id hash with its own random salt and the parameters it was made
-- with, so parameters can change for new hashes without breaking old ones.
--
-- owner_user_id is the seller who set it (mock mode): those commands act as
-- that user. In live mode it is '' and the signed-in user acts.
--
-- failed_count / window_start / locked_until rate-limit wrong attempts
-- across processes: an attempt is counted before the slow hash runs and
-- forgiven when it was right, so parallel guessing gains nothing.
--
-- `fixtures reset` keeps this row (seed.go's keepOnReset): a reset must
-- never clear the passphrase and let anyone set a new one.
CREATE TABLE seller_passphrase (
    id              INTEGER PRIMARY KEY CHECK (id = 1),
    owner_user_id   TEXT NOT NULL,
    algorithm       TEXT NOT NULL CHECK (algorithm = 'argon2id'),
    time_cost       INTEGER NOT NULL CHECK (time_cost >= 1),
    memory_kib      INTEGER NOT NULL CHECK (memory_kib >= 8192),
    threads         INTEGER NOT NULL CHECK (threads BETWEEN 1 AND 255),
    salt            BLOB NOT NULL CHECK (length(salt) >= 16),
    hash            BLOB NOT NULL CHECK (length(hash) >= 32),
    set_at          TEXT NOT NULL,
    failed_count    INTEGER NOT NULL DEFAULT 0 CHECK (failed_count >= 0),
    window_start    TEXT,
    locked_until    TEXT
) STRICT;

-- postgresql-schema.sql - the default source table of filterbuild's PostgreSQL source
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -f config/postgresql-schema.sql 'postgresql://...'
-- Needs PostgreSQL 13 or later (xid8, pg_current_xact_id).
--
-- To revoke, an application only inserts a row:
--     INSERT INTO revcheck_revocations (scope, id) VALUES ('api', 'tok-123');
-- Deleting the row is an un-revocation (a certificate hold released). A row
-- whose expires_at passed more than --expiry-grace (10 minutes) ago is left
-- out of every build, and `filterbuild follow` publishes its removal in a
-- delta then: an expired token needs no revocation any more once no verifier
-- accepts it (they allow a leeway past exp). Updating expires_at to a later time keeps the id
-- revoked. A removal is published only when no other row in force names
-- the same key (another spelling of a serial: '0A', '0a', '00:0A').
--
-- `filterbuild build --source` reads revcheck_revocations (or the --query
-- given) in one REPEATABLE READ transaction. `filterbuild follow` also reads
-- revcheck_changes, which the trigger below fills: one row per change, with
-- the id of the writing transaction (xid). The follower's cursor is a
-- transaction horizon, not a sequence number: it reads the changes of the
-- transactions below the oldest one still running, so a transaction that
-- commits late is never skipped (a sequence number alone would skip it).
-- The notification on channel revcheck_changes only wakes the follower up.

SET client_min_messages TO warning;

CREATE TABLE IF NOT EXISTS revcheck_revocations (
    scope       text        NOT NULL DEFAULT 'default',
    id          text        NOT NULL,
    revoked_at  timestamptz NOT NULL DEFAULT now(),
    reason      text,
    expires_at  timestamptz,
    PRIMARY KEY (scope, id)
);
-- What a row may hold, checked at INSERT and UPDATE so that the writer
-- gets the error: filterbuild can represent the row and a check can name
-- it. A scope is 1-255 printable ASCII characters without spaces, an
-- X.509 one "x509:" and 64 lowercase hex digits; an id is 1-1024 bytes,
-- in an X.509 scope a hex serial ('0A', '0x0a', '0a:1b', '-01'); times
-- lie in 1970..9999 (no infinity: a revocation that never expires has
-- expires_at NULL); a reason is at most 63 printable ASCII characters.
-- Added NOT VALID, so that the script also upgrades a table created
-- before them: rows already there are not checked (`filterbuild` leaves
-- out, and reports, those no check can name; docs/OPERATIONS.md says how
-- to find them and then VALIDATE CONSTRAINT).
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('revcheck_revocations_scope_ok',
         $c$scope ~ '^[!-~]{1,255}$' AND (scope NOT LIKE 'x509:%'
            OR scope ~ '^x509:[0-9a-f]{64}$')$c$),
        ('revcheck_revocations_id_ok',
         $c$octet_length(id) BETWEEN 1 AND 1024 AND (scope NOT LIKE 'x509:%'
            OR id ~ '^-?(0[xX])?[0-9A-Fa-f]+(:([0-9A-Fa-f]{2})+)*$')$c$),
        ('revcheck_revocations_revoked_at_ok',
         $c$revoked_at >= '1970-01-01 00:00:00+00'
            AND revoked_at <= '9999-12-31 23:59:59+00'$c$),
        ('revcheck_revocations_expires_at_ok',
         $c$expires_at IS NULL OR (expires_at >= '1970-01-01 00:00:00+00'
            AND expires_at <= '9999-12-31 23:59:59+00')$c$),
        ('revcheck_revocations_reason_ok',
         $c$reason IS NULL OR reason ~ '^[ -~]{0,63}$'$c$)
    ) AS v(name, expr)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_constraint
                       WHERE conrelid = 'revcheck_revocations'::regclass
                         AND conname = c.name) THEN
            EXECUTE format('ALTER TABLE revcheck_revocations ADD CONSTRAINT %I CHECK (%s) NOT VALID',
                           c.name, c.expr);
        END IF;
    END LOOP;
END
$$;

-- The issued set of exact scopes: every id issued in a scope (a CA's
-- serials, an identity provider's token ids). `filterbuild build --source`
-- and each re-base of `filterbuild follow` read it in the same snapshot as
-- revcheck_revocations; a scope with rows here and revocations covered is
-- answered exactly, complete up to the read's transaction start (now()).
-- Insert a row before the id is handed out (before the certificate's
-- notBefore, the token's iat): an id issued at or before a read's cutoff
-- but committed after it is outside that base's issued set, and a check
-- that proves it issued by the cutoff could be answered revoked from the
-- filter alone (never not_revoked: a revocation always wins). The role
-- filterbuild reads with needs SELECT on it; without, no scope is exact.
CREATE TABLE IF NOT EXISTS revcheck_issued (
    scope       text        NOT NULL DEFAULT 'default',
    id          text        NOT NULL,
    issued_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, id)
);
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('revcheck_issued_scope_ok',
         $c$scope ~ '^[!-~]{1,255}$' AND (scope NOT LIKE 'x509:%'
            OR scope ~ '^x509:[0-9a-f]{64}$')$c$),
        ('revcheck_issued_id_ok',
         $c$octet_length(id) BETWEEN 1 AND 1024 AND (scope NOT LIKE 'x509:%'
            OR id ~ '^-?(0[xX])?[0-9A-Fa-f]+(:([0-9A-Fa-f]{2})+)*$')$c$),
        ('revcheck_issued_issued_at_ok',
         $c$issued_at >= '1970-01-01 00:00:00+00'
            AND issued_at <= '9999-12-31 23:59:59+00'$c$)
    ) AS v(name, expr)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_constraint
                       WHERE conrelid = 'revcheck_issued'::regclass
                         AND conname = c.name) THEN
            EXECUTE format('ALTER TABLE revcheck_issued ADD CONSTRAINT %I CHECK (%s) NOT VALID',
                           c.name, c.expr);
        END IF;
    END LOOP;
END
$$;

-- The follower looks for rows that expired since its last round by this.
CREATE INDEX IF NOT EXISTS revcheck_revocations_expires
    ON revcheck_revocations (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE IF NOT EXISTS revcheck_changes (
    seq         bigserial   PRIMARY KEY,
    xid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    op          char(1)     NOT NULL CHECK (op IN ('A', 'R')),  -- added, removed
    scope       text        NOT NULL,
    id          text        NOT NULL,
    revoked_at  timestamptz,
    reason      text,
    expires_at  timestamptz,
    changed_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS revcheck_changes_xid ON revcheck_changes (xid);

-- SET search_path FROM CURRENT: the function finds revcheck_changes in the
-- schema this script created it in, whatever the session's search_path. A
-- logical replication apply worker runs with an empty one: without this
-- setting its first replicated row fails ("relation revcheck_changes does
-- not exist") and replication stops.
CREATE OR REPLACE FUNCTION revcheck_changes_log() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    -- An update is the removal of the old key and the addition of the new.
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO revcheck_changes (op, scope, id, revoked_at, reason, expires_at)
        VALUES ('R', OLD.scope, OLD.id, OLD.revoked_at, OLD.reason, OLD.expires_at);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO revcheck_changes (op, scope, id, revoked_at, reason, expires_at)
        VALUES ('A', NEW.scope, NEW.id, NEW.revoked_at, NEW.reason, NEW.expires_at);
    END IF;
    PERFORM pg_notify('revcheck_changes', '');
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS revcheck_changes_trg ON revcheck_revocations;
CREATE TRIGGER revcheck_changes_trg
    AFTER INSERT OR UPDATE OR DELETE ON revcheck_revocations
    FOR EACH ROW EXECUTE FUNCTION revcheck_changes_log();
-- ALWAYS: a trigger in the default mode (ORIGIN) does not fire in a session
-- with session_replication_role = replica: a logical replication apply
-- worker (this database subscribing to revcheck_revocations), a bulk load
-- that sets it to skip triggers and foreign keys, any superuser who sets it.
-- Their rows would reach no delta while `filterbuild follow` kept every
-- node fresh, and answer not_revoked until the next re-base. An ALWAYS
-- trigger fires in every session. `filterbuild follow` warns at start
-- about a trigger left in the default mode, and refuses one on a table a
-- subscription of this database replicates into.
ALTER TABLE revcheck_revocations ENABLE ALWAYS TRIGGER revcheck_changes_trg;

-- `filterbuild follow` reads this table only (it refuses --query): to
-- follow revocations kept in a table of your own, feed this one from it
-- with a trigger, after copying what is there with INSERT ... SELECT
-- (docs/OPERATIONS.md, "Feeding the table from your own").

-- On a logical replication subscriber, subscribe to revcheck_revocations
-- (or the tables that feed it), never to revcheck_changes: this
-- server's ALWAYS trigger logs every row the apply worker writes, with this
-- server's transaction ids, which the follower's cursor is made of. Rows
-- replicated into revcheck_changes carry the publisher's ids (and its seq
-- numbers, which collide with this server's): `filterbuild follow` refuses
-- a revcheck_changes that a subscription replicates into.

-- The follower never deletes from revcheck_changes. Rows of transactions
-- below the horizon every follower has published (the "cursor" field of
-- `filterbuild follow`'s state file) may be deleted by the operator:
--     DELETE FROM revcheck_changes WHERE xid < '<cursor>'::xid8;

//! The hub's PostgreSQL schema, as versioned migrations (docs/FLEET.md, "The hub").
//!
//! Everything lives in schema `fleet`:
//! - `robots`: one row per robot id: the login allowed to sync it, the database
//!   file (instance) that claimed it, its last change number on the hub;
//! - `changes`: every version a robot pushed, keyed by (writer, seq) and unique on
//!   (writer, global id, version), so a batch sent twice adds nothing; hash
//!   partitioned by writer. Robots may only insert rows they wrote (row-level
//!   security) and may neither update nor delete any;
//! - `memories`: the current state of each memory (last writer wins by version,
//!   then writer id; a forget is final), kept by a trigger on `changes`; hash
//!   partitioned by global id; a GIN full-text index for fleet-wide search from SQL;
//!   the (writer, seq) index serves pulls;
//! - `sessions`: sessions the robots ended.
//!
//! Robot logins are members of the group role `fleet_robot`; the functions they
//! call run as the schema owner and check who calls.

/// Migrations: entry `i` brings the hub from version `i` to `i + 1`.
pub const MIGRATIONS: &[&str] = &[V1, V2];

const V1: &str = r#"
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'fleet_robot') THEN
        CREATE ROLE fleet_robot NOLOGIN;
    END IF;
END $$;
GRANT USAGE ON SCHEMA fleet TO fleet_robot;

CREATE TABLE fleet.robots (
    robot_id      text COLLATE "C" PRIMARY KEY CHECK (robot_id ~ '^[A-Za-z0-9._-]{1,64}$'),
    login         name UNIQUE,
    instance      uuid,
    last_seq      bigint NOT NULL DEFAULT 0,
    registered_at timestamptz NOT NULL DEFAULT now(),
    claimed_at    timestamptz,
    last_push_at  timestamptz
);

CREATE TABLE fleet.changes (
    writer              text COLLATE "C" NOT NULL,
    seq                 bigint NOT NULL,
    global_id           uuid NOT NULL,
    version             bigint NOT NULL CHECK (version > 0),
    origin              text COLLATE "C" NOT NULL,
    deleted             boolean NOT NULL,
    status              text NOT NULL CHECK (status IN ('active', 'superseded')),
    superseded_by       uuid,
    collection          text NOT NULL,
    kind                text NOT NULL CHECK (kind IN ('fact', 'perception')),
    category            text NOT NULL,
    confidence          double precision NOT NULL,
    content             text NOT NULL,
    context             jsonb NOT NULL,
    tags                text[] NOT NULL,
    perception_type     text,
    perception_data     bytea,
    perception_metadata text,
    created_at          text NOT NULL,
    pushed_at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (writer, seq),
    UNIQUE (writer, global_id, version)
) PARTITION BY HASH (writer);

-- The current state of each memory: the columns of a change (LIKE keeps the two
-- in step), without its push time, with its last update and its words.
CREATE TABLE fleet.memories (
    LIKE fleet.changes,
    updated_at          timestamptz NOT NULL DEFAULT now(),
    search              tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
    PRIMARY KEY (global_id)
) PARTITION BY HASH (global_id);
ALTER TABLE fleet.memories DROP COLUMN pushed_at;
CREATE INDEX memories_by_writer ON fleet.memories (writer, seq);
CREATE INDEX memories_search ON fleet.memories USING gin (search);
CREATE INDEX memories_by_origin ON fleet.memories (origin);

CREATE TABLE fleet.sessions (
    robot_id    text COLLATE "C" NOT NULL,
    session_id  text NOT NULL,
    seq         bigint NOT NULL,
    collection  text NOT NULL,
    ended_at    text NOT NULL,
    outcome     double precision,
    memories    bigint NOT NULL,
    PRIMARY KEY (robot_id, session_id)
);

DO $$ BEGIN
    FOR i IN 0..7 LOOP
        EXECUTE format('CREATE TABLE fleet.changes_p%s PARTITION OF fleet.changes FOR VALUES WITH (MODULUS 8, REMAINDER %s)', i, i);
    END LOOP;
    FOR i IN 0..15 LOOP
        EXECUTE format('CREATE TABLE fleet.memories_p%s PARTITION OF fleet.memories FOR VALUES WITH (MODULUS 16, REMAINDER %s)', i, i);
    END LOOP;
END $$;

-- The robot id of the calling login (NULL for the hub owner and other non-robot logins).
CREATE FUNCTION fleet.my_robot() RETURNS text LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$ SELECT robot_id FROM fleet.robots WHERE login = session_user $$;

CREATE FUNCTION fleet.is_robot_login() RETURNS boolean LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$ SELECT EXISTS (SELECT 1 FROM pg_auth_members
                  WHERE roleid = 'fleet_robot'::regrole AND member = (SELECT oid FROM pg_roles WHERE rolname = session_user)) $$;

-- Claims robot id p_robot for the database file p_instance; returns the robot's last
-- change number on the hub. Refuses a login that may not sync this robot, and a
-- second database claiming an id already claimed (error code RM001).
CREATE FUNCTION fleet.claim(p_robot text, p_instance uuid) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$
DECLARE r fleet.robots;
BEGIN
    SELECT * INTO r FROM fleet.robots WHERE robot_id = p_robot FOR UPDATE;
    IF NOT FOUND THEN
        IF fleet.is_robot_login() THEN
            RAISE EXCEPTION 'robot % is not registered on this hub (robotmem hub add-robot)', p_robot USING ERRCODE = 'RM002';
        END IF;
        INSERT INTO fleet.robots (robot_id) VALUES (p_robot) RETURNING * INTO r;
    END IF;
    IF r.login IS DISTINCT FROM session_user AND (r.login IS NOT NULL OR fleet.is_robot_login()) THEN
        RAISE EXCEPTION 'login % may not sync robot %', session_user, p_robot USING ERRCODE = 'RM002';
    END IF;
    IF r.instance IS NULL THEN
        UPDATE fleet.robots SET instance = p_instance, claimed_at = now() WHERE robot_id = p_robot;
    ELSIF r.instance <> p_instance THEN
        RAISE EXCEPTION 'robot id % is already claimed by another database (instance %; this one is %)',
            p_robot, r.instance, p_instance USING ERRCODE = 'RM001';
    END IF;
    RETURN r.last_seq;
END
$$;

-- Starts a push of robot p_robot in the caller's transaction: locks its row, so one
-- robot's pushes commit one after the other (readers keep one mark per writer).
CREATE FUNCTION fleet.begin_push(p_robot text) RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$
DECLARE last bigint;
BEGIN
    IF fleet.is_robot_login() AND fleet.my_robot() IS DISTINCT FROM p_robot THEN
        RAISE EXCEPTION 'login % may not push for robot %', session_user, p_robot USING ERRCODE = 'RM002';
    END IF;
    SELECT last_seq INTO last FROM fleet.robots WHERE robot_id = p_robot FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'robot % is not registered on this hub', p_robot USING ERRCODE = 'RM002';
    END IF;
    RETURN last;
END
$$;

CREATE FUNCTION fleet.end_push(p_robot text, p_upto bigint) RETURNS void LANGUAGE sql SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$ UPDATE fleet.robots SET last_seq = greatest(last_seq, p_upto), last_push_at = now()
   WHERE robot_id = p_robot AND (NOT fleet.is_robot_login() OR fleet.my_robot() = p_robot) $$;

-- Keeps fleet.memories: the last writer wins (version, then writer id); a forget is final.
-- A robot creates memories only in its own name: a change to a memory the hub does
-- not know must come from its origin (check_violation: the robot skips it).
CREATE FUNCTION fleet.apply_change() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$
BEGIN
    IF NEW.origin <> NEW.writer AND NOT EXISTS (SELECT 1 FROM fleet.memories WHERE global_id = NEW.global_id) THEN
        RAISE EXCEPTION 'robot % may not create memory % in the name of robot %', NEW.writer, NEW.global_id, NEW.origin
            USING ERRCODE = '23514';
    END IF;
    INSERT INTO fleet.memories AS m (global_id, origin, writer, version, seq, deleted, status, superseded_by,
        collection, kind, category, confidence, content, context, tags, perception_type, perception_data,
        perception_metadata, created_at)
    VALUES (NEW.global_id, NEW.origin, NEW.writer, NEW.version, NEW.seq, NEW.deleted, NEW.status,
        NEW.superseded_by, NEW.collection, NEW.kind, NEW.category, NEW.confidence, NEW.content, NEW.context,
        NEW.tags, NEW.perception_type, NEW.perception_data, NEW.perception_metadata, NEW.created_at)
    ON CONFLICT (global_id) DO UPDATE SET
        writer = EXCLUDED.writer, version = EXCLUDED.version, seq = EXCLUDED.seq, deleted = EXCLUDED.deleted,
        status = EXCLUDED.status, superseded_by = EXCLUDED.superseded_by, collection = EXCLUDED.collection,
        kind = EXCLUDED.kind, category = EXCLUDED.category, confidence = EXCLUDED.confidence,
        content = EXCLUDED.content, context = EXCLUDED.context, tags = EXCLUDED.tags,
        perception_type = EXCLUDED.perception_type, perception_data = EXCLUDED.perception_data,
        perception_metadata = EXCLUDED.perception_metadata, updated_at = now()
    WHERE NOT m.deleted
      AND (EXCLUDED.deleted OR (EXCLUDED.version, EXCLUDED.writer) > (m.version, m.writer));
    RETURN NULL;
END
$$;
CREATE TRIGGER changes_apply AFTER INSERT ON fleet.changes FOR EACH ROW EXECUTE FUNCTION fleet.apply_change();

ALTER TABLE fleet.changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY robots_insert_their_own ON fleet.changes FOR INSERT TO fleet_robot WITH CHECK (writer = fleet.my_robot());
CREATE POLICY robots_read ON fleet.changes FOR SELECT TO fleet_robot USING (true);
ALTER TABLE fleet.sessions ENABLE ROW LEVEL SECURITY;
CREATE POLICY robots_insert_their_own ON fleet.sessions FOR INSERT TO fleet_robot WITH CHECK (robot_id = fleet.my_robot());
CREATE POLICY robots_read ON fleet.sessions FOR SELECT TO fleet_robot USING (true);

REVOKE ALL ON ALL TABLES IN SCHEMA fleet FROM PUBLIC;
GRANT SELECT, INSERT ON fleet.changes, fleet.sessions TO fleet_robot;
GRANT SELECT ON fleet.memories, fleet.schema_migrations TO fleet_robot;
GRANT SELECT (robot_id, last_seq, registered_at, claimed_at, last_push_at) ON fleet.robots TO fleet_robot;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fleet FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fleet TO fleet_robot;
"#;

/// Version 2 (robotmem 0.5): a memory's expiry travels with it (`expires_at`, the
/// robots' stored-time text; NULL: never), on changes and current states, and the
/// trigger keeps it like the other columns.
const V2: &str = r#"
ALTER TABLE fleet.changes ADD COLUMN expires_at text;
ALTER TABLE fleet.memories ADD COLUMN expires_at text;
CREATE OR REPLACE FUNCTION fleet.apply_change() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, fleet AS
$$
BEGIN
    IF NEW.origin <> NEW.writer AND NOT EXISTS (SELECT 1 FROM fleet.memories WHERE global_id = NEW.global_id) THEN
        RAISE EXCEPTION 'robot % may not create memory % in the name of robot %', NEW.writer, NEW.global_id, NEW.origin
            USING ERRCODE = '23514';
    END IF;
    INSERT INTO fleet.memories AS m (global_id, origin, writer, version, seq, deleted, status, superseded_by,
        collection, kind, category, confidence, content, context, tags, perception_type, perception_data,
        perception_metadata, created_at, expires_at)
    VALUES (NEW.global_id, NEW.origin, NEW.writer, NEW.version, NEW.seq, NEW.deleted, NEW.status,
        NEW.superseded_by, NEW.collection, NEW.kind, NEW.category, NEW.confidence, NEW.content, NEW.context,
        NEW.tags, NEW.perception_type, NEW.perception_data, NEW.perception_metadata, NEW.created_at, NEW.expires_at)
    ON CONFLICT (global_id) DO UPDATE SET
        writer = EXCLUDED.writer, version = EXCLUDED.version, seq = EXCLUDED.seq, deleted = EXCLUDED.deleted,
        status = EXCLUDED.status, superseded_by = EXCLUDED.superseded_by, collection = EXCLUDED.collection,
        kind = EXCLUDED.kind, category = EXCLUDED.category, confidence = EXCLUDED.confidence,
        content = EXCLUDED.content, context = EXCLUDED.context, tags = EXCLUDED.tags,
        perception_type = EXCLUDED.perception_type, perception_data = EXCLUDED.perception_data,
        perception_metadata = EXCLUDED.perception_metadata, expires_at = EXCLUDED.expires_at, updated_at = now()
    WHERE NOT m.deleted
      AND (EXCLUDED.deleted OR (EXCLUDED.version, EXCLUDED.writer) > (m.version, m.writer));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION fleet.apply_change() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fleet.apply_change() TO fleet_robot;
"#;

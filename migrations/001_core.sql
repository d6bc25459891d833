-- Recall's data model (DESIGN.md, Model).
--
-- workspace_id leads every primary key, unique key, foreign key and index: it is the tenant
-- and the future Citus distribution key, so every table can be distributed and colocated by
-- workspace without rewriting a query. Ids come from one global sequence, so an id alone is
-- unambiguous, but every lookup still names its workspace.

create sequence recall_ids as bigint;

create table workspaces (
    id bigint primary key default nextval('recall_ids'),
    key text not null unique check (key <> ''),
    name text not null,
    -- Counter for messages.global_seq; bumped under the row lock when a message is written.
    last_global_seq bigint not null default 0,
    created_at timestamptz not null default now()
);

-- A connector namespace (`type:name`). Audiences only ever compare within one.
create table namespaces (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    name text not null check (name ~ '^[a-z0-9_.-]+:[^[:space:]]+$'),
    primary key (workspace_id, id),
    unique (workspace_id, name)
);

-- Members (people) and agents (each owned by one member). Display names are not identity.
create table actors (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    key text not null check (key <> ''),
    kind text not null check (kind in ('member', 'agent')),
    name text not null,
    owner_id bigint,
    -- Constant 'member' whenever there is an owner: with the foreign key below it makes
    -- "an agent owned by an agent" unrepresentable.
    owner_kind text generated always as (case when owner_id is null then null else 'member' end) stored,
    primary key (workspace_id, id),
    unique (workspace_id, key),
    unique (workspace_id, id, kind),
    check ((kind = 'agent') = (owner_id is not null)),
    foreign key (workspace_id, owner_id, owner_kind) references actors (workspace_id, id, kind)
);
-- The namespace a person searches from: a person is the destination members(ns, [person]).
alter table workspaces add column default_namespace_id bigint;
alter table workspaces add foreign key (id, default_namespace_id)
    references namespaces (workspace_id, id) deferrable initially deferred;

create index actors_owner on actors (workspace_id, owner_id) where owner_id is not null;

-- Audiences are stored once and referenced: every message of a channel shares one row.
--   public                      origin of a truly public space
--   workspace(ns)               origin (and destination) of a public channel
--   members(ns, readers)        origin of private channels, DMs, shared channels; destination
--                               of private channels, DMs and of a person searching
--   external(ns, readers)       destination only: an externally shared channel, or a truly
--                               public space with no readers
-- readers are member actor ids, sorted and distinct, so equal audiences are one row.
create table audiences (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    kind text not null check (kind in ('public', 'workspace', 'members', 'external')),
    namespace_id bigint,
    readers bigint[] not null default '{}',
    primary key (workspace_id, id),
    foreign key (workspace_id, namespace_id) references namespaces (workspace_id, id),
    check ((kind = 'public') = (namespace_id is null)),
    check (kind in ('members', 'external') or cardinality(readers) = 0),
    check (kind <> 'members' or cardinality(readers) > 0)
);
create unique index audiences_identity
    on audiences (workspace_id, kind, coalesce(namespace_id, 0), readers);

create table scopes (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    key text not null check (key <> ''),
    kind text not null check (kind in ('channel', 'dm', 'thread')),
    visibility text check (visibility in ('public', 'private', 'shared', 'open')),
    name text,
    namespace_id bigint not null,
    parent_id bigint,
    root_message_id bigint,
    -- Fixed when the scope is created (DESIGN.md, Audiences): the audience its messages are
    -- written with, and the audience its readers form when text is shown there.
    origin_audience_id bigint not null,
    destination_audience_id bigint not null,
    last_seq integer not null default 0,
    primary key (workspace_id, id),
    unique (workspace_id, key),
    foreign key (workspace_id, namespace_id) references namespaces (workspace_id, id),
    foreign key (workspace_id, parent_id) references scopes (workspace_id, id),
    foreign key (workspace_id, origin_audience_id) references audiences (workspace_id, id),
    foreign key (workspace_id, destination_audience_id) references audiences (workspace_id, id),
    check ((kind = 'channel') = (visibility is not null)),
    check ((kind = 'thread') = (parent_id is not null)),
    check (kind = 'thread' or root_message_id is null)
);
create index scopes_parent on scopes (workspace_id, parent_id) where parent_id is not null;

-- Membership of channels and DMs. Threads have none of their own: their parent's applies.
create table scope_members (
    workspace_id bigint not null,
    scope_id bigint not null,
    actor_id bigint not null,
    primary key (workspace_id, scope_id, actor_id),
    foreign key (workspace_id, scope_id) references scopes (workspace_id, id) on delete cascade,
    foreign key (workspace_id, actor_id) references actors (workspace_id, id) on delete cascade
);
create index scope_members_actor on scope_members (workspace_id, actor_id, scope_id);

create table memories (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    key text not null check (key <> ''),
    audience_id bigint not null,
    primary key (workspace_id, id),
    unique (workspace_id, key),
    foreign key (workspace_id, audience_id) references audiences (workspace_id, id)
);

-- The append-only canonical transcript.
create table messages (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    key text not null check (key <> ''),
    scope_id bigint not null,
    seq integer not null check (seq > 0),
    global_seq bigint not null check (global_seq > 0),
    author_id bigint not null,
    body text not null,
    created_at timestamptz not null,
    audience_id bigint not null,
    -- Source evidence exists for this row. Unknown provenance fails closed: false hides it.
    evidence boolean not null default true,
    -- Set when the message has provenance edges; lets eligibility skip the lineage walk for
    -- the (many) messages that were not built from anything. Provenance is written with the
    -- message and never changes, so this cannot go stale.
    has_provenance boolean not null default false,
    primary key (workspace_id, id),
    unique (workspace_id, key),
    unique (workspace_id, scope_id, seq),
    unique (workspace_id, global_seq),
    foreign key (workspace_id, scope_id) references scopes (workspace_id, id),
    foreign key (workspace_id, author_id) references actors (workspace_id, id),
    foreign key (workspace_id, audience_id) references audiences (workspace_id, id)
);
create index messages_author on messages (workspace_id, author_id, global_seq desc);

alter table scopes add foreign key (workspace_id, root_message_id)
    references messages (workspace_id, id) deferrable initially deferred;

-- Provenance: what an agent reply was built from.
create table message_sources (
    workspace_id bigint not null,
    message_id bigint not null,
    source_message_id bigint not null,
    primary key (workspace_id, message_id, source_message_id),
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade,
    foreign key (workspace_id, source_message_id) references messages (workspace_id, id)
);

create table message_memory_sources (
    workspace_id bigint not null,
    message_id bigint not null,
    memory_id bigint not null,
    primary key (workspace_id, message_id, memory_id),
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade,
    foreign key (workspace_id, memory_id) references memories (workspace_id, id)
);

-- Bearer tokens. Only the SHA-256 of a token is stored: tokens are 256-bit random values,
-- so a fast hash is enough and a leaked table reveals no usable credential.
create table tokens (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    token_hash bytea not null unique,
    kind text not null check (kind in ('member', 'agent', 'turn')),
    actor_id bigint not null,
    turn_id bigint,
    created_at timestamptz not null default now(),
    revoked_at timestamptz,
    primary key (workspace_id, id),
    foreign key (workspace_id, actor_id) references actors (workspace_id, id) on delete cascade,
    check ((kind = 'turn') = (turn_id is not null))
);

-- A turn binds an agent's searches to a perspective, a destination and a requester.
create table turns (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    agent_id bigint not null,
    scope_id bigint not null,
    requester_id bigint not null,
    trigger_message_id bigint,
    window_size integer not null check (window_size between 0 and 100),
    destination_audience_id bigint not null,
    created_at timestamptz not null default now(),
    primary key (workspace_id, id),
    foreign key (workspace_id, agent_id) references actors (workspace_id, id),
    foreign key (workspace_id, scope_id) references scopes (workspace_id, id),
    foreign key (workspace_id, requester_id) references actors (workspace_id, id),
    foreign key (workspace_id, trigger_message_id) references messages (workspace_id, id),
    foreign key (workspace_id, destination_audience_id) references audiences (workspace_id, id)
);
alter table tokens add foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade;

-- The messages the turn's context already holds (the loaded window): excluded from search.
create table turn_window (
    workspace_id bigint not null,
    turn_id bigint not null,
    message_id bigint not null,
    primary key (workspace_id, turn_id, message_id),
    foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade,
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade
);

-- The provenance ledger: every message a turn's searches showed (hits and neighbors).
create table turn_evidence (
    workspace_id bigint not null,
    turn_id bigint not null,
    message_id bigint not null,
    added_at timestamptz not null default now(),
    primary key (workspace_id, turn_id, message_id),
    foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade,
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade
);

-- One row per search, written in the search's own transaction. Never the query text.
create table search_audit (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    surface text not null check (surface in ('message_search', 'history_search')),
    actor_id bigint not null,
    turn_id bigint,
    -- HMAC-SHA256 of the normalized query under a subkey of RECALL_MASTER_KEY; '' without one.
    query_digest text not null,
    filters jsonb not null,
    destination jsonb not null,
    selected jsonb not null,
    exclusions jsonb not null,
    created_at timestamptz not null default now(),
    primary key (workspace_id, id),
    foreign key (workspace_id, actor_id) references actors (workspace_id, id) on delete cascade,
    foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade
);
create index search_audit_turn on search_audit (workspace_id, turn_id) where turn_id is not null;

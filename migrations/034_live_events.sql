-- Live push (docs/live.md): each workspace's log of what changed, in commit order, for the
-- GraphQL subscriptions (messageSearchUpdates, scopeMessages). A row names a message and what
-- happened to it ('post', 'edit', 'delete') or, with no message, that who may read what changed
-- ('access': membership, visibility, deactivation, a revoked identity link). Ids only: no text
-- is copied here, and subscribers decide every event with the eligibility predicates in SQL at
-- the moment it is sent.
--
-- Positions are per workspace and contiguous: each writer takes the next ones by updating its
-- workspace's row of live_positions, whose row lock it holds until it commits, so positions
-- become visible in order and a subscriber reading "after N" never skips a later-committing
-- lower position. Both tables are distributed by workspace_id on Citus (app/migrate.py).
create table live_positions (
    workspace_id bigint primary key references workspaces (id) on delete cascade,
    position bigint not null default 0
);

create table live_events (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    position bigint not null,
    message_id bigint,
    kind text not null check (kind in ('post', 'edit', 'delete', 'access')),
    at timestamptz not null default now(),
    primary key (workspace_id, position),
    check ((kind = 'access') = (message_id is null))
);

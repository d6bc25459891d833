-- Linked identities (docs/identity.md): one person may be a member in several connector
-- namespaces of a workspace (Slack and the web app), and a verified link between two of
-- those members opens exactly one path of eligibility (app/data/eligibility.py).
--
-- Every key includes workspace_id and every foreign key names it, as everywhere else
-- (docs/scale.md): on Citus these tables are distributed by workspace and colocated.

-- A member belongs to one namespace: the one its person searches from (its destination is
-- members(that namespace, [member])). Agents have none: they may be members of scopes in any.
-- Existing members are in their workspace's namespace, as they always were.
alter table actors add column namespace_id bigint;
update actors a set namespace_id = w.default_namespace_id
from workspaces w
where w.id = a.workspace_id and a.kind = 'member' and a.namespace_id is null;
alter table actors add constraint actors_namespace_fkey
    foreign key (workspace_id, namespace_id) references namespaces (workspace_id, id);
alter table actors add constraint actors_namespace_check
    check ((kind = 'member') = (namespace_id is not null));
-- What a link's foreign keys point at: a member together with its namespace.
create unique index actors_member_namespace on actors (workspace_id, id, namespace_id);

-- A code one identity starts a link with (startIdentityLink) and the other confirms
-- (confirmIdentityLink). Stored only as a SHA-256 digest, like tokens. Single use, short
-- lived; starting a new one cancels the member's unused ones. A confirmation looks the code
-- up in the confirmer's own workspace (its token names it), so the lookup is one workspace's.
create table identity_link_codes (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    member_id bigint not null,
    code_hash bytea not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    used_at timestamptz,
    cancelled_at timestamptz,
    primary key (workspace_id, id),
    unique (workspace_id, code_hash),
    foreign key (workspace_id, member_id) references actors (workspace_id, id) on delete cascade
);
create index identity_link_codes_member on identity_link_codes (workspace_id, member_id)
    where used_at is null and cancelled_at is null;

-- A verified link joins exactly two members of different namespaces (member_a started it,
-- member_b confirmed it). Rows are never deleted: revocation stamps revoked_at, and who did it
-- (revoked_by: the member; null with revoked_via 'connector' or 'deactivation'). Only a live
-- link (revoked_at is null) opens anything.
create table identity_links (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    id bigint not null default nextval('recall_ids'),
    member_a bigint not null,
    namespace_a bigint not null,
    member_b bigint not null,
    namespace_b bigint not null,
    code_id bigint not null,
    verified_at timestamptz not null default now(),
    revoked_at timestamptz,
    revoked_by bigint,
    revoked_via text check (revoked_via in ('member', 'connector', 'deactivation')),
    primary key (workspace_id, id),
    foreign key (workspace_id, member_a, namespace_a)
        references actors (workspace_id, id, namespace_id) on delete cascade,
    foreign key (workspace_id, member_b, namespace_b)
        references actors (workspace_id, id, namespace_id) on delete cascade,
    foreign key (workspace_id, code_id) references identity_link_codes (workspace_id, id)
        on delete cascade,
    foreign key (workspace_id, revoked_by) references actors (workspace_id, id) on delete cascade,
    check (member_a <> member_b and namespace_a <> namespace_b),
    check ((revoked_at is null) = (revoked_via is null)),
    check (revoked_by is null or revoked_via = 'member')
);
-- The eligibility path and speaker REQUESTER look a member's live links up from either side.
create index identity_links_a on identity_links (workspace_id, member_a) where revoked_at is null;
create index identity_links_b on identity_links (workspace_id, member_b) where revoked_at is null;
-- Member.identityLinks lists them all, revoked ones too.
create index identity_links_a_all on identity_links (workspace_id, member_a);
create index identity_links_b_all on identity_links (workspace_id, member_b);

-- A member token reads as members(the member's own namespace, [member]): the reader's
-- default_namespace_id column is now the member's namespace (the workspace's for the other
-- token kinds). Otherwise exactly migrations/025's reader.
create or replace function recall_token_reader(p_token_hash bytea, p_workspace bigint)
returns table (
    workspace_id bigint, kind text, actor_id bigint, turn_id bigint,
    default_namespace_id bigint, dest_kind text, dest_ns bigint, dest_readers bigint[],
    search_ready boolean, turn_scope_id bigint, turn_conversation bigint,
    turn_requester_id bigint, turn_trigger_id bigint, turn_created_at timestamptz,
    turn_conversations bigint[], lineage_complete boolean
)
language plpgsql stable
set plan_cache_mode = 'force_generic_plan'
as $$
begin
    return query
    select t.workspace_id, t.kind, t.actor_id, t.turn_id,
           coalesce(ta.namespace_id, w.default_namespace_id),
           a.kind, a.namespace_id, a.readers,
           coalesce(r.migrated and r.backfilled and r.finalized and r.read_ready, false),
           tu.scope_id, coalesce(ts.parent_id, ts.id), tu.requester_id, tu.trigger_message_id,
           tu.created_at,
           case when tu.id is not null then array(
               select pm.scope_id from scope_members pm
               where pm.workspace_id = p_workspace and pm.actor_id = t.actor_id) end,
           not exists (
               select 1 from messages lm
               where lm.workspace_id = p_workspace and lm.has_provenance
                 and lm.lineage_audience_ids is null)
    from tokens t
    join workspaces w on w.id = t.workspace_id
    left join actors ta on t.kind = 'member' and ta.workspace_id = t.workspace_id
        and ta.id = t.actor_id
    left join search_readiness r on r.workspace_id = t.workspace_id
    left join turns tu on t.kind = 'turn' and tu.workspace_id = t.workspace_id
        and tu.id = t.turn_id and tu.agent_id = t.actor_id
    left join audiences a on a.workspace_id = tu.workspace_id
        and a.id = tu.destination_audience_id
    left join scopes ts on ts.workspace_id = tu.workspace_id and ts.id = tu.scope_id
    left join actors rq on rq.workspace_id = tu.workspace_id and rq.id = tu.requester_id
    where t.workspace_id = p_workspace and t.token_hash = p_token_hash
      and t.revoked_at is null and (t.expires_at is null or t.expires_at > now())
      and rq.deactivated_at is null;
end
$$;

-- Functions that read tables, made runnable on Citus (docs/scale.md). Same results on plain
-- PostgreSQL; nothing on a hot path changes (the statements use app/data/eligibility.py's
-- inline fragments, not these functions).
--
-- 1. The audience-change trigger of migrations/004 told messages from memories by
--    tg_table_name. On a Citus shard that name is the shard's (messages_102008), so every
--    message whose audience changed (makeScopePrivate narrowing a channel's history) took the
--    memories branch and forgot nothing: a reply elsewhere built on that history kept its
--    stale, wider summary. One trigger function per table instead.
--
-- 2. The eligibility reference functions (migrations/002, 008) and the per-message lineage
--    fill that the set-based fill falls back to for very large lineages (migrations/006) were
--    SQL functions with parameters. Citus cannot plan a distributed statement inside a SQL
--    function ("use of parameters in SQL functions is not supported"); PL/pgSQL passes them
--    as bound parameters, so each statement routes to the workspace's shard. Bodies unchanged.

create function recall_forget_lineage_of_message_audience_change() returns trigger
language plpgsql
as $$
begin
    perform recall_forget_lineage(new.workspace_id, array[new.id]);
    return null;
end
$$;

create function recall_forget_lineage_of_memory_audience_change() returns trigger
language plpgsql
as $$
begin
    perform recall_forget_lineage(new.workspace_id, array(
        select ms.message_id from message_memory_sources ms
        where ms.workspace_id = new.workspace_id and ms.memory_id = new.id));
    return null;
end
$$;

-- One EXECUTE per statement: on an already distributed database Citus propagates each
-- trigger change to the shards as one command.
do $$
begin
    execute 'drop trigger messages_audience_change_forgets_lineage on messages';
    execute 'create trigger messages_audience_change_forgets_lineage
        after update of audience_id on messages
        for each row when (old.audience_id is distinct from new.audience_id)
        execute function recall_forget_lineage_of_message_audience_change()';
    execute 'drop trigger memories_audience_change_forgets_lineage on memories';
    execute 'create trigger memories_audience_change_forgets_lineage
        after update of audience_id on memories
        for each row when (old.audience_id is distinct from new.audience_id)
        execute function recall_forget_lineage_of_memory_audience_change()';
end
$$;

drop function recall_forget_lineage_of_audience_change();

create or replace function recall_allowed_audiences(
    p_workspace bigint, dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns bigint[]
language plpgsql stable parallel safe
as $$
begin
    return (select coalesce(array_agg(id), '{}') from (
        select a.id from audiences a
        where a.workspace_id = p_workspace and a.kind in ('public', 'workspace')
          and recall_audience_allows(a.kind, a.namespace_id, a.readers,
                                     dest_kind, dest_ns, dest_readers)
        union all
        select a.id from audiences a
        where dest_kind in ('members', 'external') and cardinality(dest_readers) > 0
          and a.workspace_id = p_workspace and a.kind = 'members'
          and a.readers @> dest_readers
          and recall_audience_allows(a.kind, a.namespace_id, a.readers,
                                     dest_kind, dest_ns, dest_readers)
    ) allowed);
end
$$;

create or replace function recall_lineage_summary(
    p_workspace bigint, p_messages bigint[], out audience_ids bigint[], out denied boolean
)
language plpgsql stable parallel safe
as $$
begin
    with recursive walk(id) as (
        select distinct unnest(p_messages)
        union
        select x.source_message_id
        from walk w
        cross join lateral (
            select s.source_message_id from message_sources s
            where s.workspace_id = p_workspace and s.message_id = w.id
            offset 0
        ) x
    ),
    nodes as materialized (select id from walk limit 5001),
    node_rows as materialized (
        select m.id, m.audience_id from messages m
        where m.workspace_id = p_workspace and m.id in (select id from nodes)
    ),
    used_memories as materialized (
        select distinct mem.id, mem.audience_id
        from message_memory_sources ms
        join memories mem on mem.workspace_id = ms.workspace_id and mem.id = ms.memory_id
        where ms.workspace_id = p_workspace and ms.message_id in (select id from nodes)
    )
    select
        coalesce((select array_agg(distinct a) from (
            select audience_id as a from node_rows
            union all
            select audience_id from used_memories
        ) all_audiences), '{}'),
        case when p_messages is null or cardinality(p_messages) > 501 then true
        else
            (select count(*) from nodes) > 5000
            or (select count(*) from node_rows) <> (select count(*) from nodes)
            or exists (
                select 1 from message_sources s
                where s.workspace_id = p_workspace and s.message_id in (select id from nodes)
                group by s.message_id having count(*) > 500
            )
            or (select count(*) from nodes) + (select count(*) from used_memories) > 5000
        end
    into audience_ids, denied;
end
$$;

create or replace function recall_lineage_allowed(
    p_workspace bigint, p_messages bigint[],
    dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns boolean
language plpgsql stable parallel safe
as $$
declare
    s record;
begin
    select * into s from recall_lineage_summary(p_workspace, p_messages);
    return not s.denied
        and s.audience_ids <@ recall_allowed_audiences(p_workspace, dest_kind, dest_ns, dest_readers);
end
$$;

-- One message at a time, each walk bounded by its own LIMIT (migrations/006).
create or replace function recall_cache_lineage_one_by_one(p_workspace bigint, p_messages bigint[])
returns void
language plpgsql
as $$
declare
    one bigint;
    s record;
begin
    for one in select distinct t.id from unnest(p_messages) as t(id) loop
        select * into s from recall_lineage_summary(p_workspace, array[one]);
        update messages m
        set lineage_audience_ids = s.audience_ids, lineage_denied = s.denied
        where m.workspace_id = p_workspace and m.id = one and m.has_provenance;
    end loop;
end
$$;

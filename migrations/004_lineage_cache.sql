-- A per-message cache of the lineage walk, so eligibility does not run a recursive walk per
-- candidate row (at 100k messages the walk was ~90% of a common-term search's SQL time).
--
-- What a walk (recall_lineage_summary, migrations/002) needs to answer "is this message's lineage allowed for destination D?" is the set
-- of audience ids of every node of its lineage (messages and memories) and whether a cap was
-- overflowed or a node was unknown: allowed ⟺ not denied ∧ audience_ids ⊆ allowed_audiences(D),
-- because allowed_audiences(D) is exactly the workspace's audiences that allow D. That summary
-- depends only on provenance edges and audiences, which are written once, so it can be cached.
--
-- The cache can only ever be missing, never stale:
--   * a missing cache (NULL) makes eligibility fall back to the live walk;
--   * adding provenance edges clears the cache of the message and of every message whose
--     lineage reaches it, so an edge written later cannot hide behind a cache;
--   * changing the audience of a message or memory clears the cache of everything built from it.

alter table messages
    add column lineage_audience_ids bigint[],
    add column lineage_denied boolean;

-- Who was built from a message: the reverse walk of invalidation below.
create index message_sources_source on message_sources (workspace_id, source_message_id);

-- Fill the cache for messages whose provenance is complete (the importer after its last edge,
-- postReply after the reply's edges).
create function recall_cache_lineage(p_workspace bigint, p_messages bigint[]) returns void
language sql
as $$
    update messages m
    set lineage_audience_ids = s.audience_ids, lineage_denied = s.denied
    from unnest(p_messages) as t(id)
    cross join lateral recall_lineage_summary(p_workspace, array[t.id]) s
    where m.workspace_id = p_workspace and m.id = t.id and m.has_provenance
$$;

-- Forget every cached summary that could include the given messages: their own and, through a
-- reverse walk of provenance, those of every message built from them.
create function recall_forget_lineage(p_workspace bigint, p_messages bigint[]) returns void
language sql
as $$
    with recursive affected(id) as (
        select unnest(p_messages)
        union
        select x.message_id
        from affected a
        cross join lateral (  -- an index lookup per node, as in recall_lineage_summary
            select s.message_id from message_sources s
            where s.workspace_id = p_workspace and s.source_message_id = a.id
            offset 0
        ) x
    )
    update messages m set lineage_audience_ids = null, lineage_denied = null
    from affected a
    where m.workspace_id = p_workspace and m.id = a.id and m.lineage_audience_ids is not null
$$;

-- New provenance edges change the lineage of their message and of everything built from it.
create function recall_forget_lineage_of_new_edges() returns trigger
language plpgsql
as $$
declare
    ws bigint;
begin
    for ws in select distinct workspace_id from inserted loop
        perform recall_forget_lineage(
            ws, array(select distinct message_id from inserted where workspace_id = ws));
    end loop;
    return null;
end
$$;

create trigger message_sources_forget_lineage
    after insert on message_sources
    referencing new table as inserted
    for each statement execute function recall_forget_lineage_of_new_edges();

create trigger message_memory_sources_forget_lineage
    after insert on message_memory_sources
    referencing new table as inserted
    for each statement execute function recall_forget_lineage_of_new_edges();

-- Origin audiences are fixed when text is written (DESIGN.md); should one be corrected anyway,
-- every summary that included it is forgotten rather than left stale.
create function recall_forget_lineage_of_audience_change() returns trigger
language plpgsql
as $$
begin
    if tg_table_name = 'messages' then
        perform recall_forget_lineage(new.workspace_id, array[new.id]);
    else
        perform recall_forget_lineage(new.workspace_id, array(
            select ms.message_id from message_memory_sources ms
            where ms.workspace_id = new.workspace_id and ms.memory_id = new.id));
    end if;
    return null;
end
$$;

create trigger messages_audience_change_forgets_lineage
    after update of audience_id on messages
    for each row when (old.audience_id is distinct from new.audience_id)
    execute function recall_forget_lineage_of_audience_change();

create trigger memories_audience_change_forgets_lineage
    after update of audience_id on memories
    for each row when (old.audience_id is distinct from new.audience_id)
    execute function recall_forget_lineage_of_audience_change();

-- Messages written before this migration: cache their summaries now (until then, or if this
-- is skipped, eligibility walks their lineage live).
select recall_cache_lineage(w.id, array(
    select m.id from messages m where m.workspace_id = w.id and m.has_provenance))
from workspaces w;

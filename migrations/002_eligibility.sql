-- Eligibility: the one predicate set every surface uses (DESIGN.md, Eligibility).
--
--   eligible(message, destination) = evidence ∧ allows(origin, destination) ∧ lineage allowed
--
-- Search is never a new authorization boundary: messageSearch, historySearch, neighbors,
-- node lookups, transcripts and the pre-delivery recheck of a reply all call these
-- functions. Anything unknown (a null, a missing row, a cap overflow) answers false.

-- allows(origin, destination). A destination is (kind, namespace, readers) with kind one of
-- workspace | members | external.
create function recall_audience_allows(
    origin_kind text, origin_ns bigint, origin_readers bigint[],
    dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns boolean
language sql immutable parallel safe
as $$
    select coalesce(case origin_kind
        -- A truly public space: shown anywhere.
        when 'public' then true
        -- A public channel: the same namespace's workspace or member audiences; never an
        -- externally shared room, never another namespace.
        when 'workspace' then dest_kind in ('workspace', 'members') and dest_ns = origin_ns
        -- Private text: only to a non-empty reader set inside the origin's readers, in the
        -- same namespace (an external destination qualifies only by its named readers).
        when 'members' then dest_kind in ('members', 'external')
            and dest_ns = origin_ns
            and cardinality(dest_readers) > 0
            and dest_readers <@ origin_readers
        else false
    end, false)
$$;

-- The ids of the workspace's audiences that may be shown to a destination. Audiences are few
-- (one per channel, DM and memory reader set), so callers compute this set once per query and
-- test `audience_id = any(...)` per row instead of re-deciding per message.
create function recall_allowed_audiences(
    p_workspace bigint, dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns bigint[]
language sql stable parallel safe
as $$
    select coalesce(array_agg(a.id), '{}')
    from audiences a
    where a.workspace_id = p_workspace
      and recall_audience_allows(a.kind, a.namespace_id, a.readers, dest_kind, dest_ns, dest_readers)
$$;

-- Lineage: the messages are disclosable to the destination only if every message and memory in
-- their recursive provenance is. Hard caps, each of which denies the whole read on overflow:
-- 501 input messages, 5,000 lineage nodes (messages and memories), 500 history ids per node.
create function recall_lineage_allowed(
    p_workspace bigint, p_messages bigint[],
    dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns boolean
language plpgsql stable parallel safe
as $$
declare
    nodes bigint[];
    found integer;
    memory_count integer;
begin
    if p_messages is null or cardinality(p_messages) > 501 then
        return false;
    end if;
    if cardinality(p_messages) = 0 then
        return true;
    end if;

    -- The recursive walk is evaluated lazily: the outer LIMIT stops it one node past the cap,
    -- so an enormous lineage costs no more than the cap to reject.
    with recursive walk(id) as (
        select distinct unnest(p_messages)
        union
        select s.source_message_id
        from message_sources s
        join walk w on s.workspace_id = p_workspace and s.message_id = w.id
    )
    select array_agg(id) into nodes from (select id from walk limit 5001) capped;

    if cardinality(nodes) > 5000 then
        return false;
    end if;

    -- Every node must exist in this workspace: an id we cannot resolve is unknown provenance.
    select count(*) into found from messages m where m.workspace_id = p_workspace and m.id = any(nodes);
    if found <> cardinality(nodes) then
        return false;
    end if;

    if exists (
        select 1 from message_sources s
        where s.workspace_id = p_workspace and s.message_id = any(nodes)
        group by s.message_id having count(*) > 500
    ) then
        return false;
    end if;

    select count(distinct ms.memory_id) into memory_count
    from message_memory_sources ms
    where ms.workspace_id = p_workspace and ms.message_id = any(nodes);
    if cardinality(nodes) + memory_count > 5000 then
        return false;
    end if;

    if exists (
        select 1 from messages m
        join audiences a on a.workspace_id = m.workspace_id and a.id = m.audience_id
        where m.workspace_id = p_workspace and m.id = any(nodes)
          and not recall_audience_allows(a.kind, a.namespace_id, a.readers, dest_kind, dest_ns, dest_readers)
    ) then
        return false;
    end if;

    if exists (
        select 1 from message_memory_sources ms
        join memories mem on mem.workspace_id = ms.workspace_id and mem.id = ms.memory_id
        join audiences a on a.workspace_id = mem.workspace_id and a.id = mem.audience_id
        where ms.workspace_id = p_workspace and ms.message_id = any(nodes)
          and not recall_audience_allows(a.kind, a.namespace_id, a.readers, dest_kind, dest_ns, dest_readers)
    ) then
        return false;
    end if;

    return true;
end
$$;

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

-- The lineage walk of a set of messages: the audience ids of every message and memory in their
-- recursive provenance, and whether the read is denied outright.
-- Hard caps of DESIGN.md (501 inputs, 5,000 nodes, 500 history ids per node).
-- Overflow or an unknown node sets denied: the whole read is denied.
create function recall_lineage_summary(
    p_workspace bigint, p_messages bigint[], out audience_ids bigint[], out denied boolean
)
language sql stable parallel safe
as $$
    -- One statement (it runs once per candidate row without a cached summary, and once per
    -- reply when the cache is filled). The recursive walk is evaluated lazily: the LIMIT stops
    -- it one node past the cap, so an enormous lineage costs no more than the cap to reject.
    with recursive walk(id) as (
        select distinct unnest(p_messages)
        union
        -- A parameterized index lookup per node (OFFSET 0 keeps it one): the planner cannot
        -- estimate a work table and otherwise hashes every edge of the workspace per step.
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
            -- an id we cannot resolve is unknown provenance: fail closed
            or (select count(*) from node_rows) <> (select count(*) from nodes)
            or exists (
                select 1 from message_sources s
                where s.workspace_id = p_workspace and s.message_id in (select id from nodes)
                group by s.message_id having count(*) > 500
            )
            or (select count(*) from nodes) + (select count(*) from used_memories) > 5000
        end
$$;

-- Lineage: the messages are disclosable to the destination only if every message and memory in
-- their recursive provenance is: allowed ⟺ not denied ∧ lineage audiences ⊆ allowed audiences,
-- because recall_allowed_audiences(D) is exactly the workspace's audiences that allow D.
create function recall_lineage_allowed(
    p_workspace bigint, p_messages bigint[],
    dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns boolean
language sql stable parallel safe
as $$
    select not s.denied
        and s.audience_ids <@ recall_allowed_audiences(p_workspace, dest_kind, dest_ns, dest_readers)
    from recall_lineage_summary(p_workspace, p_messages) s
$$;

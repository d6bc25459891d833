-- Fill the lineage cache (migrations/004) for many messages at once.
--
-- 004 called recall_lineage_summary once per message: ~0.5 ms each at 100k messages and
-- ~3.7 ms each inside a 1M-message import (no statistics yet in the import's transaction), so
-- caching 26k replies took 96 s of a 183 s import. Here one recursive walk serves a whole batch
-- of roots, and the summaries are aggregated per root: the same definition as the live walk
-- (every node of the lineage, the roots included; the caps of 002), computed as sets.
--
-- The set-based walk has no per-root LIMIT to stop an enormous lineage early, so it is bounded
-- per batch instead: if a batch's walk reaches an average of 64 nodes per root, that
-- batch falls back to the per-message walk, whose own LIMIT bounds each lineage at the cap.
-- Either way each summary is exactly what recall_lineage_summary returns (tests pin it).

-- 004's per-message fill stays, under a new name, for batches whose lineages are too large to
-- walk as a set.
alter function recall_cache_lineage(bigint, bigint[]) rename to recall_cache_lineage_one_by_one;

-- p_average_nodes: the walk's bound per root, on average over a batch, before that batch falls
-- back to the per-message walk (a parameter so that tests can force either path).
create function recall_cache_lineage(
    p_workspace bigint, p_messages bigint[], p_average_nodes int default 64
)
returns void
language plpgsql
as $$
declare
    batch_size constant int := 2000;
    batch bigint[];
    walked bigint;
begin
    for batch in
        select array_agg(id) from (
            select id, (row_number() over () - 1) / batch_size as b
            from unnest(p_messages) as t(id)
        ) numbered
        group by b
    loop
        with recursive walk(root, id) as (
            select distinct r, r from unnest(batch) as t(r)
            union
            select w.root, s.source_message_id
            from walk w
            join message_sources s on s.workspace_id = p_workspace and s.message_id = w.id
        ),
        nodes as materialized (
            select root, id from walk limit cardinality(batch) * p_average_nodes + 1
        ),
        node_rows as (
            select n.root, n.id, m.audience_id, m.id is not null as known
            from nodes n
            left join messages m on m.workspace_id = p_workspace and m.id = n.id
        ),
        wide as (  -- a node citing more than 500 messages overflows the history cap
            select s.message_id from message_sources s
            where s.workspace_id = p_workspace and s.message_id in (select id from nodes)
            group by s.message_id having count(*) > 500
        ),
        used_memories as (
            select distinct n.root, mem.id, mem.audience_id
            from nodes n
            join message_memory_sources ms on ms.workspace_id = p_workspace and ms.message_id = n.id
            join memories mem on mem.workspace_id = ms.workspace_id and mem.id = ms.memory_id
        ),
        per_root as (
            select r.root,
                count(*) as nodes,
                bool_and(r.known) as all_known,
                bool_or(r.id in (select message_id from wide)) as has_wide
            from node_rows r
            group by r.root
        ),
        memories_per_root as (
            select root, count(*) as n from used_memories group by root
        ),
        audiences_per_root as (
            select root, array_agg(distinct a) as ids from (
                select root, audience_id as a from node_rows where known
                union all
                select root, audience_id from used_memories
            ) all_audiences
            group by root
        ),
        -- Written only if the whole batch was walked; otherwise the caller falls back.
        cached as (
            update messages m
            set lineage_audience_ids = coalesce(a.ids, '{}'),
                lineage_denied = p.nodes > 5000 or not p.all_known or p.has_wide
                    or p.nodes + coalesce(mp.n, 0) > 5000
            from per_root p
            left join audiences_per_root a on a.root = p.root
            left join memories_per_root mp on mp.root = p.root
            where m.workspace_id = p_workspace and m.id = p.root and m.has_provenance
              and (select count(*) from nodes) <= cardinality(batch) * p_average_nodes
            returning 1
        )
        select (select count(*) from nodes) into walked;

        if walked > cardinality(batch) * p_average_nodes then
            perform recall_cache_lineage_one_by_one(p_workspace, batch);
        end if;
    end loop;
end
$$;

-- historySearch's ledger write (app.data.turns.record_shown) as a function: what a search
-- showed joins the turn's ledger, the ranking weights it used are frozen for its binding (when
-- given), and its audit row is written, all or nothing, if the turn's row is still at
-- p_version (its xmin when the search read the ledger). Otherwise it writes nothing and
-- returns false: another search of the turn recorded in between.
--
-- It was one statement with data-modifying CTEs. Citus cannot route an INSERT inside a CTE to
-- a shard ("Router planner doesn't support INSERT common table expressions"): it planned the
-- CTEs as subplans and sent the turn CTE's result to every worker, in a two-phase commit over
-- all of them, so that with any worker down every workspace's historySearch failed
-- (docs/scale.md, A worker lost). Here each statement names its workspace and is routed to
-- the workspace's shard group alone; the function call is still one statement (one round
-- trip, one transaction of its own when the caller has none), on plain PostgreSQL as on
-- Citus.
--
-- The UPDATE is the version check. Each recording rewrites the turn's row (a no-op update: a
-- turn never changes), so a new version is exactly "the ledger may have grown". Under READ
-- COMMITTED the UPDATE waits for a concurrent recording and then re-checks the version on the
-- row it committed, where a SELECT ... FOR UPDATE would go on with a ledger read before the
-- wait. The audit row has the columns app.data.audit.audit_insert writes for messageSearch.
create function recall_record_shown(
    p_workspace bigint, p_turn bigint, p_agent bigint, p_version text, p_message_ids bigint[],
    p_binding text, p_weights jsonb,
    p_surface text, p_actor bigint, p_audit_turn bigint, p_query_digest text,
    p_filters jsonb, p_destination jsonb, p_selected jsonb, p_exclusions jsonb
) returns boolean
language plpgsql
as $$
declare
    recorded bigint;
begin
    update turns t set window_size = t.window_size
    where t.workspace_id = p_workspace and t.id = p_turn and t.agent_id = p_agent
      and t.xmin::text = p_version
    returning t.id into recorded;
    if recorded is null then
        return false;
    end if;
    -- From the messages themselves (each exists: turn_evidence's foreign key), selecting the
    -- distribution column: Citus pushes this INSERT ... SELECT down to the shard whole. Over
    -- unnest() it ran through the coordinator (one more round trip to the worker, and a
    -- two-phase commit on it).
    insert into turn_evidence (workspace_id, turn_id, message_id)
    select m.workspace_id, recorded, m.id from messages m
    where m.workspace_id = p_workspace and m.id = any(p_message_ids)
    on conflict do nothing;
    if p_binding is not null then
        -- A concurrent first search of the same binding may have saved its own: the first kept.
        insert into turn_search_weights (workspace_id, turn_id, binding, weights)
        values (p_workspace, recorded, p_binding, p_weights)
        on conflict do nothing;
    end if;
    insert into search_audit (workspace_id, surface, actor_id, turn_id, query_digest, filters,
                              destination, selected, exclusions)
    values (p_workspace, p_surface, p_actor, p_audit_turn, p_query_digest, p_filters,
            p_destination, p_selected, p_exclusions);
    return true;
end
$$;

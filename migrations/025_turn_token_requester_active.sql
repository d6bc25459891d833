-- A turn token stops working once its requester is deactivated (docs/changes.md): the turn
-- acts for that person, and a deactivated member reads nothing, through any surface. Otherwise
-- as migrations/021's reader (whose comments say why it is PL/pgSQL with a generic plan).
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
    select t.workspace_id, t.kind, t.actor_id, t.turn_id, w.default_namespace_id,
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

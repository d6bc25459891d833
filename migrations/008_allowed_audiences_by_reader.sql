-- recall_allowed_audiences (migrations/002) runs once per statement that checks eligibility,
-- several per request. It tested every audience of the workspace with recall_audience_allows:
-- ~1 ms at 4,000 audiences, most of them private reader sets. A private audience members(ns, R)
-- can allow a destination only if R lists every destination reader (allows requires D ⊆ R), so
-- those are found through an index on readers; the shared/public kinds are few. Both branches
-- still decide with recall_audience_allows: the new conjuncts only skip audiences it would
-- reject anyway, so the result is the same set.

create index audiences_readers on audiences using gin (readers);

create or replace function recall_allowed_audiences(
    p_workspace bigint, dest_kind text, dest_ns bigint, dest_readers bigint[]
) returns bigint[]
language sql stable parallel safe
as $$
    select coalesce(array_agg(id), '{}') from (
        -- Only these two kinds and members can allow anything (external origins never do).
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
    ) allowed
$$;

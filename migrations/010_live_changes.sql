-- Live workspaces (docs/changes.md): a connector applies posts, edits, deletions, membership,
-- visibility and actor lifecycle changes to a workspace after it was imported.

-- Connector tokens speak for a workspace's connector, not for an actor.
alter table tokens drop constraint tokens_kind_check;
alter table tokens add constraint tokens_kind_check
    check (kind in ('member', 'agent', 'turn', 'connector'));
alter table tokens alter column actor_id drop not null;
alter table tokens add constraint tokens_actor_check check ((kind = 'connector') = (actor_id is null));

-- Actor lifecycle. A deactivated person's tokens stop working and they read nothing; what they
-- wrote stays. An archived agent still authors its messages and matches author filters but is
-- not offered to pickers. A deleted agent loses its name, owner, memberships and tokens: its
-- messages stay (they are the transcript) under an author that says it was deleted, and no
-- author filter reaches them any more.
alter table actors
    add column deactivated_at timestamptz,
    add column archived_at timestamptz,
    add column deleted_at timestamptz;
alter table actors drop constraint actors_check;
alter table actors add constraint actors_owner_check check (
    case kind when 'member' then owner_id is null
              else owner_id is not null or deleted_at is not null end
);
alter table actors add constraint actors_lifecycle_check check (
    (kind = 'member' or deactivated_at is null)
    and (kind = 'agent' or (archived_at is null and deleted_at is null))
);

-- A private conversation whose last person left keeps a members audience with no readers:
-- allows() needs the destination's readers inside the origin's, so it allows nothing.
alter table audiences drop constraint audiences_check2;

-- A deleted message keeps its row: replies built on it are judged by its audience exactly as
-- before (lineage), replays of its post find it, and its seq stays taken. Its body is emptied
-- and its search document removed in the deleting transaction; eligibility treats it as having
-- no evidence (app/data/eligibility.py), so no surface shows it.
alter table messages add column deleted boolean not null default false;
alter table messages add constraint messages_deleted_body_check check (not deleted or body = '');

-- Deleting empties the body, which must not index the empty text again: the deleting
-- transaction removes the document itself.
drop trigger messages_index_body_update on messages;
create trigger messages_index_body_update
    after update of body on messages
    for each row when (old.body is distinct from new.body and not new.deleted)
    execute function recall_index_updated_message();

-- When a public channel was made private. A replayed createScope that once made it public is
-- then recognised as a replay; a request to make a channel that was born private public is a
-- private → public conversion, which is refused.
alter table scopes add column made_private_at timestamptz;

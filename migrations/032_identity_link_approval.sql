-- Linking needs both sides' consent (docs/identity.md): confirming a code makes a PENDING link
-- that opens nothing; it is live only once the member who started the code approves it. A
-- starter may also name the one namespace the code is for.
--
-- Plain ALTERs and UPDATEs filtered by nothing but the table's own rows, indexes that lead
-- with workspace_id: the same on Citus (the tables stay distributed by workspace_id).

-- The namespace a code is for (startIdentityLink(namespace:)); null: any other namespace.
alter table identity_link_codes add column for_namespace_id bigint;
alter table identity_link_codes add constraint identity_link_codes_namespace_fkey
    foreign key (workspace_id, for_namespace_id) references namespaces (workspace_id, id);

-- approved_at: when the starter approved (null while pending); approve_before: until when a
-- pending link may be approved. A link opens anything only when approved and not revoked.
alter table identity_links add column approved_at timestamptz;
alter table identity_links add column approve_before timestamptz;
-- Links from before approval existed stay live: approved when they were verified.
update identity_links set approved_at = verified_at where approved_at is null;
alter table identity_links add constraint identity_links_pending_check
    check (approved_at is not null or approve_before is not null);

-- The eligibility path and speaker REQUESTER look a member's live links up from either side:
-- live now also means approved, so the partial indexes say so too.
drop index identity_links_a;
drop index identity_links_b;
create index identity_links_a on identity_links (workspace_id, member_a)
    where revoked_at is null and approved_at is not null;
create index identity_links_b on identity_links (workspace_id, member_b)
    where revoked_at is null and approved_at is not null;

-- The search sidecar (DESIGN.md, Readiness): one document per message with a GIN-indexed
-- tsvector. It is a derived, disposable projection: it narrows the scan and never vouches for a
-- row; canonical text is always hydrated from `messages` after authorization.

-- Contiguous Chinese, Japanese and Korean text has no spaces to split words on, so (as TiDB's
-- MULTILINGUAL parser does) we index every pair of adjacent CJK characters as a token. A query
-- run of two or more characters becomes the phrase of its bigrams, which matches exactly the
-- documents containing that run. The pattern covers Hangul Jamo, CJK punctuation-free blocks,
-- Hiragana, Katakana, CJK Extension A, Unified Ideographs, Hangul syllables, compatibility
-- ideographs and half-width Katakana.
create function recall_cjk_runs(p text) returns setof text
language sql immutable parallel safe
as $$
    select m[1] from regexp_matches(
        p, '([\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+)', 'g'
    ) as m
$$;

create function recall_without_cjk(p text) returns text
language sql immutable parallel safe
as $$
    select regexp_replace(
        p, '[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+', ' ', 'g'
    )
$$;

-- "東京都" → "東京 京都"; a single character stays itself.
create function recall_bigrams(run text) returns text
language sql immutable parallel safe
as $$
    select case when char_length(run) < 2 then run
        else (select string_agg(substr(run, i, 2), ' ' order by i)
              from generate_series(1, char_length(run) - 1) as i)
    end
$$;

-- The document vector: stemmed English for everything else (identifiers, emails, URLs and
-- error strings keep their parser tokens), then the CJK bigrams in order.
create function recall_document_tsvector(body text) returns tsvector
language sql immutable parallel safe
as $$
    -- Most messages have no CJK text: one cheap regex test spares them two more passes.
    select case
        when body !~ '[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]'
            then to_tsvector('english', body)
        else to_tsvector('english', recall_without_cjk(body))
            || to_tsvector('simple', coalesce(
                (select string_agg(recall_bigrams(r), ' ') from recall_cjk_runs(body) as r), ''))
    end
$$;

-- One query term (a word, an identifier or a quoted phrase) as a tsquery: the English part as
-- a phrase of its lexemes, each CJK run as the phrase of its bigrams. Empty when the term has
-- nothing searchable (stop words, punctuation).
create function recall_term_tsquery(term text) returns tsquery
language plpgsql immutable parallel safe
as $$
declare
    q tsquery := phraseto_tsquery('english', recall_without_cjk(term));
    r text;
begin
    for r in select * from recall_cjk_runs(term) loop
        if numnode(q) = 0 then
            q := phraseto_tsquery('simple', recall_bigrams(r));
        else
            q := q && phraseto_tsquery('simple', recall_bigrams(r));
        end if;
    end loop;
    return q;
end
$$;

-- A whole query: included terms joined by AND (people) or OR (agents), minus excluded terms.
-- NULL when nothing searchable is included, so callers can answer "no matches" without a scan.
create function recall_search_tsquery(include text[], exclude text[], any_term boolean)
returns tsquery
language plpgsql immutable parallel safe
as $$
declare
    q tsquery;
    t tsquery;
    term text;
begin
    foreach term in array coalesce(include, '{}') loop
        t := recall_term_tsquery(term);
        continue when numnode(t) = 0;
        if q is null then q := t;
        elsif any_term then q := q || t;
        else q := q && t;
        end if;
    end loop;
    if q is null then
        return null;
    end if;
    foreach term in array coalesce(exclude, '{}') loop
        t := recall_term_tsquery(term);
        continue when numnode(t) = 0;
        q := q && !!t;
    end loop;
    return q;
end
$$;

create table search_documents (
    workspace_id bigint not null,
    message_id bigint not null,
    scope_id bigint not null,
    author_id bigint not null,
    global_seq bigint not null,
    seq integer not null,
    tsv tsvector not null,
    primary key (workspace_id, message_id),
    -- Deleting a message deletes its document: a deleted message is no longer findable.
    foreign key (workspace_id, message_id) references messages (workspace_id, id) on delete cascade
);
create index search_documents_tsv on search_documents using gin (tsv);
-- The recency walk of messageSearch: newest first within a workspace.
create index search_documents_recency
    on search_documents (workspace_id, global_seq desc, scope_id, seq desc, message_id);

-- Written by triggers so that no write path can forget to index. Inserts are indexed per
-- statement (a bulk import computes all its vectors in one pass); body edits per row.
create function recall_index_inserted_messages() returns trigger
language plpgsql
as $$
begin
    insert into search_documents (workspace_id, message_id, scope_id, author_id, global_seq, seq, tsv)
    select n.workspace_id, n.id, n.scope_id, n.author_id, n.global_seq, n.seq, recall_document_tsvector(n.body)
    from inserted n
    on conflict (workspace_id, message_id) do update set tsv = excluded.tsv;
    return null;
end
$$;

create trigger messages_index_insert
    after insert on messages
    referencing new table as inserted
    for each statement execute function recall_index_inserted_messages();

create function recall_index_updated_message() returns trigger
language plpgsql
as $$
begin
    insert into search_documents (workspace_id, message_id, scope_id, author_id, global_seq, seq, tsv)
    values (new.workspace_id, new.id, new.scope_id, new.author_id, new.global_seq, new.seq,
            recall_document_tsvector(new.body))
    on conflict (workspace_id, message_id) do update set tsv = excluded.tsv;
    return null;
end
$$;

create trigger messages_index_body_update
    after update of body on messages
    for each row when (old.body is distinct from new.body)
    execute function recall_index_updated_message();

-- Per-workspace readiness. Search answers SEARCH_UNAVAILABLE unless all four hold.
create table search_readiness (
    workspace_id bigint primary key references workspaces (id) on delete cascade,
    migrated boolean not null default false,
    backfilled boolean not null default false,
    finalized boolean not null default false,
    read_ready boolean not null default false,
    updated_at timestamptz not null default now(),
    -- Read-ready without the three steps before it is not a state we can be in.
    check (not read_ready or (migrated and backfilled and finalized))
);

-- Workspaces that existed before the sidecar must be backfilled, finalized and promoted by
-- the operator commands before their search opens.
insert into search_readiness (workspace_id, migrated) select id, true from workspaces;

-- A workspace created after the sidecar exists has every message indexed by the trigger from
-- its first write, so it is ready from birth.
create function recall_workspace_born_ready() returns trigger
language plpgsql
as $$
begin
    insert into search_readiness (workspace_id, migrated, backfilled, finalized, read_ready)
    values (new.id, true, true, true, true);
    return null;
end
$$;

create trigger workspaces_born_ready
    after insert on workspaces
    for each row execute function recall_workspace_born_ready();

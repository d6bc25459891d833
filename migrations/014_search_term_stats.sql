-- historySearch relevance (docs/relevance.md): identifiers indexed by their parts, and
-- per-workspace term statistics for word weighting (IDF, length normalisation).

-- Identifiers: a word starting with a letter and joined by '.', '_' or '/' to more letters or
-- digits (ERR_PAYMENT_DECLINED, billing.retry_interval, max.poll.interval.ms, v1/charges).
-- The English parser keeps some whole (a host, a file path) and splits others, but never both:
-- `billing.retry_interval` becomes 'billing.retry' and 'interv', so "billing retry interval"
-- in prose never met it. Hyphenated words are left to the parser, which already indexes both
-- the whole (checkout-servic) and its parts (checkout, servic).
create function recall_identifiers(p text) returns setof text
language sql immutable parallel safe
as $$
    select distinct lower(m[1])
    from regexp_matches(p, '([A-Za-z][A-Za-z0-9]*(?:[._/][A-Za-z0-9]+)+)', 'g') as m
$$;

-- An identifier's parts as words: separators (and '-') become spaces.
create function recall_identifier_words(identifier text) returns text
language sql immutable parallel safe
as $$
    select regexp_replace(identifier, '[._/-]+', ' ', 'g')
$$;

-- What the document vector adds for its identifiers: each one whole (one lexeme, lower-cased,
-- unstemmed, no position: it only matches the identifier itself and is rare, so word weighting
-- prizes it) and its parts as stemmed English words, after a stop word so that no phrase of
-- the body runs on into them. NULL when the body has no identifier.
create function recall_identifier_tsvector(body text) returns tsvector
language sql immutable parallel safe
as $$
    select case when count(*) > 0 then
        array_to_tsvector(array_agg(i))
        || to_tsvector('english', 'the ' || string_agg(recall_identifier_words(i), ' '))
    end
    from recall_identifiers(body) as i
$$;

create or replace function recall_document_tsvector(body text) returns tsvector
language sql immutable parallel safe
as $$
    -- Most messages have no CJK text and no identifier: one cheap regex test each spares them
    -- the passes that would find nothing.
    select case
        when body !~ '[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]'
            then to_tsvector('english', body)
        else to_tsvector('english', recall_without_cjk(body))
            || to_tsvector('simple', coalesce(
                (select string_agg(recall_bigrams(r), ' ') from recall_cjk_runs(body) as r), ''))
    end
    || case when body ~ '[A-Za-z0-9][._/][A-Za-z0-9]'
            then coalesce(recall_identifier_tsvector(body), ''::tsvector)
            else ''::tsvector end
$$;

-- historySearch's query (agents: words OR'd). As recall_search_tsquery(include, exclude, true),
-- except that an identifier term also matches its whole lexeme or any of its parts: a query for
-- ERR_PAYMENT_DECLINED reaches the messages that discuss the declined payments in other words,
-- and word weighting (app/data/history_search.py) keeps the exact quotes first.
-- messageSearch keeps recall_search_tsquery: people get exactly the words they typed.
create function recall_history_tsquery(include text[], exclude text[])
returns tsquery
language plpgsql immutable parallel safe
as $$
declare
    q tsquery;
    t tsquery;
    term text;
    ident text;
    part text;
begin
    foreach term in array coalesce(include, '{}') loop
        t := recall_term_tsquery(term);
        for ident in select * from recall_identifiers(term) loop
            t := case when numnode(t) = 0 then quote_literal(ident)::tsquery
                      else t || quote_literal(ident)::tsquery end;
        end loop;
        if term ~ '[a-z][a-z0-9]*([._/-][a-z0-9]+)+' then
            for part in select unnest(tsvector_to_array(
                    to_tsvector('english', recall_identifier_words(term)))) loop
                t := case when numnode(t) = 0 then quote_literal(part)::tsquery
                          else t || quote_literal(part)::tsquery end;
            end loop;
        end if;
        continue when numnode(t) = 0;
        q := case when q is null then t else q || t end;
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

-- The query's side of word weighting and of the context around identifier matches, as
-- plpgsql (never inlined): with the query's terms a constant, a custom plan folds each to a
-- constant once, instead of planning and running the document vector's expression per term.
-- The lexemes the document vector gives the query's terms (stems, CJK pairs, identifiers
-- whole and in parts), each once.
create function recall_query_lexemes(include text[]) returns text[]
language plpgsql immutable parallel safe
as $$
begin
    return array(
        select distinct x
        from unnest(coalesce(include, '{}')) as t
        cross join unnest(tsvector_to_array(recall_document_tsvector(t))) as x
        order by 1);
end
$$;

-- The identifier terms of a query as written (each the phrase of its lexemes), OR'd; NULL when
-- the query names no identifier.
create function recall_identifier_tsquery(include text[]) returns tsquery
language plpgsql immutable parallel safe
as $$
declare
    q tsquery;
    t tsquery;
    term text;
begin
    foreach term in array coalesce(include, '{}') loop
        continue when term !~ '[a-z][a-z0-9]*([._/-][a-z0-9]+)+';
        t := recall_term_tsquery(term);
        continue when numnode(t) = 0;
        q := case when q is null then t else q || t end;
    end loop;
    return q;
end
$$;

-- The documents written before this migration get their identifier parts now (only those
-- with something that looks like an identifier: the others' vectors do not change).
update search_documents d set tsv = recall_document_tsvector(m.body)
from messages m
where m.workspace_id = d.workspace_id and m.id = d.message_id
  and m.body ~ '[A-Za-z0-9][._/][A-Za-z0-9]';

-- Term statistics, per workspace: in how many search documents each lexeme occurs, and how
-- many documents and lexemes there are (for the average length). Kept exact by statement
-- triggers on search_documents, in the writing transaction: every path that writes a document
-- (import, post, edit, delete, cascade) updates them, and a bulk import pays one aggregate per
-- statement. Every writer of a workspace's messages already holds the workspace row lock
-- (app/data/changes.py), so these rows add no new contention; rows are upserted in lexeme
-- order all the same.
create table search_term_stats (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    lexeme text not null,
    documents integer not null,
    primary key (workspace_id, lexeme)
);

create table search_corpus_stats (
    workspace_id bigint primary key references workspaces (id) on delete cascade,
    documents bigint not null,
    lexemes bigint not null
);

insert into search_term_stats (workspace_id, lexeme, documents)
select d.workspace_id, l.lexeme, count(*)
from search_documents d cross join unnest(tsvector_to_array(d.tsv)) as l(lexeme)
group by 1, 2;

insert into search_corpus_stats (workspace_id, documents, lexemes)
select workspace_id, count(*), coalesce(sum(length(tsv)), 0) from search_documents group by 1;

-- The documents a statement added count +1 per lexeme, the ones it removed -1.
create function recall_count_inserted_documents() returns trigger
language plpgsql
as $$
begin
    insert into search_term_stats as s (workspace_id, lexeme, documents)
    select n.workspace_id, l.lexeme, count(*)
    from added n cross join unnest(tsvector_to_array(n.tsv)) as l(lexeme)
    group by 1, 2 order by 1, 2
    on conflict (workspace_id, lexeme) do update set documents = s.documents + excluded.documents;
    insert into search_corpus_stats as c (workspace_id, documents, lexemes)
    select n.workspace_id, count(*), coalesce(sum(length(n.tsv)), 0) from added n group by 1
    on conflict (workspace_id) do update
        set documents = c.documents + excluded.documents, lexemes = c.lexemes + excluded.lexemes;
    return null;
end
$$;

create function recall_count_deleted_documents() returns trigger
language plpgsql
as $$
begin
    update search_term_stats s set documents = s.documents - r.n
    from (select o.workspace_id, l.lexeme, count(*) as n
          from removed o cross join unnest(tsvector_to_array(o.tsv)) as l(lexeme)
          group by 1, 2 order by 1, 2) r
    where s.workspace_id = r.workspace_id and s.lexeme = r.lexeme;
    update search_corpus_stats c set documents = c.documents - r.n, lexemes = c.lexemes - r.l
    from (select workspace_id, count(*) as n, coalesce(sum(length(tsv)), 0) as l
          from removed group by 1) r
    where c.workspace_id = r.workspace_id;
    return null;
end
$$;

create function recall_count_updated_documents() returns trigger
language plpgsql
as $$
begin
    insert into search_term_stats as s (workspace_id, lexeme, documents)
    select workspace_id, lexeme, sum(d)::int from (
        select n.workspace_id, l.lexeme, 1 as d
        from added n cross join unnest(tsvector_to_array(n.tsv)) as l(lexeme)
        union all
        select o.workspace_id, l.lexeme, -1
        from removed o cross join unnest(tsvector_to_array(o.tsv)) as l(lexeme)
    ) x
    group by 1, 2 having sum(d) <> 0 order by 1, 2
    on conflict (workspace_id, lexeme) do update set documents = s.documents + excluded.documents;
    update search_corpus_stats c set lexemes = c.lexemes + r.l
    from (select workspace_id, sum(l)::bigint as l from (
              select workspace_id, length(tsv) as l from added
              union all select workspace_id, -length(tsv) from removed) x
          group by 1) r
    where c.workspace_id = r.workspace_id;
    return null;
end
$$;

create trigger search_documents_count_insert
    after insert on search_documents referencing new table as added
    for each statement execute function recall_count_inserted_documents();
create trigger search_documents_count_delete
    after delete on search_documents referencing old table as removed
    for each statement execute function recall_count_deleted_documents();
create trigger search_documents_count_update
    after update on search_documents referencing old table as removed new table as added
    for each statement execute function recall_count_updated_documents();

-- A hit pulls in the thread it roots (app/data/history_search.py): found by its root message.
create index scopes_root_message on scopes (workspace_id, root_message_id)
    where root_message_id is not null;

-- The weights a turn's search ranked with, per cursor binding (turn, query, speaker, time
-- bounds): its next pages and repeats rank with them, so cursors stay positions in one order
-- while the statistics move. Gone with the turn.
create table turn_search_weights (
    workspace_id bigint not null,
    turn_id bigint not null,
    binding text not null,
    weights jsonb not null,
    primary key (workspace_id, turn_id, binding),
    foreign key (workspace_id, turn_id) references turns (workspace_id, id) on delete cascade
);

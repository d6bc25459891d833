-- The words of each block of 16 consecutive documents, so a search of several words reads
-- only the blocks that hold all of them (app/data/message_search/scan.py, docs/performance.md
-- "Several words read the blocks that hold them all").
--
-- messageSearch finds a query of several lexemes (two words, a phrase, a Chinese word's
-- bigrams) among the newest documents first, newest first. Neither index gives matches in
-- that order: the text index gives them all, unsorted, and the recency index gives every
-- document. Walking the recency index read and tested each of the newest 10,000 documents:
-- at 1M messages `orbit kestrel` (2,386 matches) found its page's 25 candidates ~10,000
-- documents deep, 4.8-6 ms. A block's row holds the union of its documents' lexemes (a
-- stripped vector), so the walk now reads the newest 625 block rows, keeps the 87 that hold
-- both words, and reads only their 1,392 documents: 1.5 ms.
--
-- A block summary may hold more than its documents' words, never fewer: a block without all
-- of a query's lexemes has no document that matches it (the query tested on a block is the
-- AND of every lexeme of the query's included words: recall_every_lexeme). An edit or a
-- deletion summarizes its block again from the documents left, so an erased message's words
-- do not stay in a summary.
--
-- Blocks are by global_seq, the workspace's recency order: block = global_seq / 16
-- (app/data/search_blocks.py BLOCK). A block of a workspace whose global_seq is shared with
-- others holds fewer documents, never the wrong ones.

create table search_blocks (
    workspace_id bigint not null references workspaces (id) on delete cascade,
    block bigint not null,
    tsv tsvector not null,
    primary key (workspace_id, block)
);

-- The union of vectors, stripped of positions: tsvector || tsvector merges equal lexemes.
create aggregate recall_tsvector_union(tsvector) (
    sfunc = tsvector_concat,
    stype = tsvector,
    initcond = ''
);

-- The AND of every lexeme of a query: what a block must hold for one of its documents to
-- match the query (phrases become ANDs; a stripped vector matches no phrase). Only for a
-- query without NOT or weights, which messageSearch's included words are
-- (recall_search_tsquery with no excluded words: phrases of plain lexemes). Lexemes are taken
-- as the query prints them (quoted, quotes doubled), with a prefix mark kept ('pre':* still
-- matches every lexeme it begins), which tsquery's input reads back unchanged. NULL for NULL.
create function recall_every_lexeme(q tsquery) returns tsquery
language sql immutable parallel safe
as $$
    select string_agg(m[1], ' & ')::tsquery
    from regexp_matches(q::text, '(''(?:[^'']|'''')*''(?::\*)?)', 'g') as m
$$;

-- A block's summary again from its documents; no row when it has none left.
create function recall_summarize_search_block(workspace bigint, b bigint) returns void
language plpgsql
as $$
begin
    insert into search_blocks as s (workspace_id, block, tsv)
    select d.workspace_id, b, recall_tsvector_union(strip(d.tsv))
    from search_documents d
    where d.workspace_id = workspace and d.global_seq >= b * 16 and d.global_seq < (b + 1) * 16
    group by d.workspace_id
    on conflict (workspace_id, block) do update set tsv = excluded.tsv;
    if not found then
        delete from search_blocks s where s.workspace_id = workspace and s.block = b;
    end if;
end
$$;

-- A new document adds its lexemes to its block's (one upsert: a run of posts in one
-- transaction updates a block at most 16 times).
create function recall_block_inserted_document() returns trigger
language plpgsql
as $$
begin
    insert into search_blocks as s (workspace_id, block, tsv)
    values (new.workspace_id, new.global_seq / 16, strip(new.tsv))
    on conflict (workspace_id, block) do update set tsv = s.tsv || excluded.tsv;
    return null;
end
$$;

-- An edited or deleted document's block (and, moved, its new one) summarized again.
create function recall_block_changed_document() returns trigger
language plpgsql
as $$
begin
    perform recall_summarize_search_block(old.workspace_id, old.global_seq / 16);
    if tg_op = 'UPDATE' and new.global_seq / 16 <> old.global_seq / 16 then
        perform recall_summarize_search_block(new.workspace_id, new.global_seq / 16);
    end if;
    return null;
end
$$;

-- Skipped by the importer (recall.bulk_import), which summarizes its new workspace's blocks
-- in one statement (app/data/search_blocks.py), as migrations/016 and 017 do.
create trigger search_documents_block_insert
    after insert on search_documents
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
    execute function recall_block_inserted_document();

create trigger search_documents_block_update
    after update of tsv, global_seq on search_documents
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on'
                       and (old.tsv is distinct from new.tsv
                            or old.global_seq is distinct from new.global_seq))
    execute function recall_block_changed_document();

create trigger search_documents_block_delete
    after delete on search_documents
    for each row when (current_setting('recall.bulk_import', true) is distinct from 'on')
    execute function recall_block_changed_document();

-- The blocks of the documents already indexed.
insert into search_blocks (workspace_id, block, tsv)
select d.workspace_id, d.global_seq / 16, recall_tsvector_union(strip(d.tsv))
from search_documents d
group by d.workspace_id, d.global_seq / 16;

-- historySearch's query (agents: words OR'd): a term written in CJK also matches any of its
-- character pairs (and any English word written into it), as an identifier term matches any of
-- its parts. Chinese and Japanese are written without spaces, so one "term" is often several
-- words (`DNS設定`, `東京リージョンのレイテンシ`); as a phrase of its pairs it found only messages
-- holding that exact run. Word weighting (each pair its IDF, coverage) ranks the messages that
-- hold more of it first, and the exact tier the verbatim run. A term with spaces (a quoted
-- phrase) stays a phrase. messageSearch (people: every word required) is unchanged.
create or replace function recall_history_tsquery(include text[], exclude text[])
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
        if term ~ '[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]'
           and term !~ '\s' then
            for part in select unnest(tsvector_to_array(recall_document_tsvector(term))) loop
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

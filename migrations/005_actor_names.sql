-- historySearch labels a speaker by name, and disambiguates two actors who share a display name
-- ("Sam (sam1)"): that check looks actors up by name, once per person shown.
create index actors_name on actors (workspace_id, name);

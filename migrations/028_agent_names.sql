-- historySearch demotes a request to an agent by name ("scout, ..."): it reads the names of
-- the workspace's agents in every search. Agents are a handful among thousands of members,
-- so they get their own index instead of a scan of every actor of the workspace.
create index actors_agent_names on actors (workspace_id, lower(name)) where kind = 'agent';

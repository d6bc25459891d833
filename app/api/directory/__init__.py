"""The directory area: workspace, scopes, people, agents, messages and transcripts."""

"""The history area: the agent's surface (historySearch, startTurn, postReply, Turn)."""

"""Relevance evaluation of historySearch (docs/relevance.md): a hand-written team chat, graded
queries, and a runner that compares Recall's ranking with baselines over each turn's eligible
messages."""

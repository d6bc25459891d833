"""Recall: authorized search over conversation history."""

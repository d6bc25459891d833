"""The connector area: applyChanges."""

"""Recall's numbered plain-SQL migrations, installed as the package `app.migrations`.

pyproject.toml maps that package onto this folder, so a source checkout, an editable install and
an installed wheel all read the same files through importlib.resources (app/migrate.py).
"""

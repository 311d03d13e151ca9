"""The SQL both stores run alike, written once and rendered per dialect at import."""

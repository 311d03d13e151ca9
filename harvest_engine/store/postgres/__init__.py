"""The DurableStore on PostgreSQL (psycopg 3): many workers, many machines, one database."""

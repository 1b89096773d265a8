#!/usr/bin/env python3
"""How many WAL frames (and bytes) one authorization-code grant writes on SQLite.

A model of what the server's code grant does to the token tables, without the server: the
schema of migrations/sqlite (foreign keys not enforced, so no users or clients are needed),
a history of grants already
made, then GRANTS more, each one transaction (or BATCH of them per transaction, to see what
group commit would save). The WAL is never checkpointed during the measured grants, so its
size is every frame they wrote. Prints frames and KiB per grant and this process's CPU per
grant (Python's own overhead included: compare the runs with each other, not with the server).

    bench/wal_frames.py [--batch N] [--page-size BYTES] [--without-rowid]
                        [--random-grant-ids] [--history N] [--grants N] [--dir DIR]

docs/performance.md ("Where a describe's and a code grant's CPU go") has what it measured.
"""

import argparse
import hashlib
import os
import sqlite3
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN_TABLES = ("oauth_grants", "oauth_codes", "oauth_access_tokens", "oauth_refresh_tokens")


def migrate(db):
    """The schema the server makes: every migrations/sqlite/*/up.sql, in order."""
    base = os.path.join(ROOT, "migrations", "sqlite")
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name, "up.sql")) as f:
            db.executescript(f.read())


def without_rowid(db):
    """Makes the (still empty) token tables again as WITHOUT ROWID tables, indexes included."""
    for table in TOKEN_TABLES:
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (table,)).fetchone()
        indexes = [r[0] for r in db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND sql IS NOT NULL", (table,))]
        db.execute(f"DROP TABLE {table}")
        db.execute(sql + " WITHOUT ROWID")
        for index in indexes:
            db.execute(index)


START = 1_800_000_000


def digest():
    """A token digest as the server stores it: SHA-256 of random bytes, in hex."""
    return hashlib.sha256(os.urandom(32)).hexdigest()


def grant_ids(random_ids):
    """Grant ids as the server mints them: in order (second, then a counter: GrantId::ordered),
    or, with random_ids, random ones (the version-5 ids of before)."""
    n = 0
    while True:
        if random_ids:
            yield str(uuid.uuid4())
        else:
            yield f"{n:016x}{os.urandom(8).hex()}"
            n += 1


def grant(db, code, now, user, client, grant_id):
    """The writes of one code exchange: the code spent, a grant, an access and a refresh token."""
    db.execute("UPDATE oauth_codes SET redeemed_at = ?, grant_id = ? "
               "WHERE digest = ? AND redeemed_at IS NULL", (now, grant_id, code))
    db.execute("INSERT INTO oauth_grants (id, client_id, user_id, scope, offline, created_at) "
               "VALUES (?, ?, ?, 'read write', 1, ?)", (grant_id, client, user, now))
    db.execute("INSERT INTO oauth_access_tokens (digest, grant_id, user_id, client_id, scope, "
               "created_at, expires_at) VALUES (?, ?, ?, ?, 'read write', ?, ?)",
               (digest(), grant_id, user, client, now, now + 3600))
    db.execute("INSERT INTO oauth_refresh_tokens (digest, grant_id, created_at, expires_at) "
               "VALUES (?, ?, ?, ?)", (digest(), grant_id, now, now + 30 * 86400))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1, help="grants per transaction (1)")
    p.add_argument("--page-size", type=int, default=4096, help="SQLite page size (4096)")
    p.add_argument("--without-rowid", action="store_true", help="the four tables WITHOUT ROWID")
    p.add_argument("--random-grant-ids", action="store_true",
                   help="random grant ids (as before GrantId::ordered)")
    p.add_argument("--history", type=int, default=100_000, help="grants made before (100000)")
    p.add_argument("--grants", type=int, default=20_000, help="grants measured (20000)")
    p.add_argument("--dir", help="where the database goes (default: a temporary directory)")
    a = p.parse_args()
    if a.batch < 1 or a.grants < 1 or a.history < 0:
        p.error("--batch and --grants must be at least 1, --history at least 0")

    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        path = os.path.join(tmp, "grants.db")
        db = sqlite3.connect(path, isolation_level=None)
        db.execute(f"PRAGMA page_size = {int(a.page_size)}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA wal_autocheckpoint = 0")
        migrate(db)
        if a.without_rowid:
            without_rowid(db)
        user, client = str(uuid.uuid4()), str(uuid.uuid4())
        ids = grant_ids(a.random_grant_ids)
        codes = [digest() for _ in range(a.history + a.grants)]
        db.execute("BEGIN")
        for i, code in enumerate(codes):
            at = START + i // 100
            db.execute("INSERT INTO oauth_codes (digest, client_id, user_id, redirect_uri, scope, "
                       "offline, created_at, expires_at) "
                       "VALUES (?, ?, ?, 'https://app.example/cb', 'read write', 1, ?, ?)",
                       (code, client, user, at, at + 600))
        db.execute("COMMIT")
        for i in range(0, a.history, 1000):
            db.execute("BEGIN")
            for j in range(i, min(i + 1000, a.history)):
                grant(db, codes[j], START + j // 50, user, client, next(ids))
            db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        started = time.process_time()
        for k in range(a.grants):
            if k % a.batch == 0:
                db.execute("BEGIN IMMEDIATE")
            j = a.history + k
            grant(db, codes[j], START + j // 50, user, client, next(ids))
            if k % a.batch == a.batch - 1 or k == a.grants - 1:
                db.execute("COMMIT")
        cpu = time.process_time() - started
        wal = os.path.getsize(path + "-wal")
        frames = max(wal - 32, 0) / (a.page_size + 24)
        print(f"page size {a.page_size}, batch {a.batch}"
              f"{', WITHOUT ROWID' if a.without_rowid else ''}"
              f"{', random grant ids' if a.random_grant_ids else ''}: "
              f"{frames / a.grants:.1f} WAL frames and {wal / a.grants / 1024:.1f} KiB a grant, "
              f"{cpu * 1e6 / a.grants:.0f} µs of CPU a grant; "
              f"database {os.path.getsize(path) / 2**20:.1f} MiB")
        db.close()


if __name__ == "__main__":
    main()

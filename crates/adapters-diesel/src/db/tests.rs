use super::*;
use diesel::sql_types::{BigInt, Text};

#[derive(QueryableByName)]
struct JournalMode {
    #[diesel(sql_type = Text)]
    journal_mode: String,
}

#[derive(QueryableByName)]
struct ForeignKeys {
    #[diesel(sql_type = BigInt)]
    foreign_keys: i64,
}

#[derive(QueryableByName)]
struct BusyTimeout {
    #[diesel(sql_type = BigInt)]
    timeout: i64,
}

#[derive(QueryableByName)]
struct JournalSizeLimit {
    #[diesel(sql_type = BigInt)]
    journal_size_limit: i64,
}

#[derive(QueryableByName)]
struct Synchronous {
    #[diesel(sql_type = BigInt)]
    synchronous: i64,
}

/// (journal_mode, foreign_keys, busy_timeout, synchronous) as seen by a pooled connection.
fn pragmas(db: &Database) -> (String, i64, i64, i64) {
    let Pools::Sqlite(pool) = db.pools() else {
        panic!("not a SQLite database");
    };
    let conn = &mut *pool.get().unwrap();
    let jm = diesel::sql_query("PRAGMA journal_mode").get_result::<JournalMode>(conn);
    let fk = diesel::sql_query("PRAGMA foreign_keys").get_result::<ForeignKeys>(conn);
    let bt = diesel::sql_query("PRAGMA busy_timeout").get_result::<BusyTimeout>(conn);
    let sy = diesel::sql_query("PRAGMA synchronous").get_result::<Synchronous>(conn);
    (
        jm.unwrap().journal_mode,
        fk.unwrap().foreign_keys,
        bt.unwrap().timeout,
        sy.unwrap().synchronous,
    )
}

#[test]
fn sqlite_file_connections_have_the_pragmas() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("sub/dir/m.db").display());
    let db = Database::connect(&url, &PoolOptions::default()).unwrap();
    assert_eq!(db.backend(), Backend::Sqlite);
    assert!(dir.path().join("sub/dir/m.db").exists());
    // Check several connections, not just the first one.
    let held: Vec<_> = match db.pools() {
        Pools::Sqlite(pool) => (0..3).map(|_| pool.get().unwrap()).collect(),
        Pools::Postgres(_) => unreachable!(),
    };
    drop(held);
    for _ in 0..4 {
        let (jm, fk, bt, sy) = pragmas(&db);
        assert_eq!(jm, "wal");
        assert_eq!(fk, 1);
        assert_eq!(bt, 5000);
        assert_eq!(sy, 1, "synchronous=NORMAL");
        let Pools::Sqlite(pool) = db.pools() else {
            unreachable!()
        };
        let limit = diesel::sql_query("PRAGMA journal_size_limit")
            .get_result::<JournalSizeLimit>(&mut *pool.get().unwrap())
            .unwrap();
        assert_eq!(
            limit.journal_size_limit,
            64 << 20,
            "the WAL file is truncated to 64 MiB"
        );
        assert_eq!(
            wal_autocheckpoint(&mut pool.get().unwrap()),
            0,
            "no commit checkpoints: the checkpoint thread does"
        );
    }
    assert!(db.pool_state().0 >= 3);
}

#[derive(QueryableByName)]
struct WalAutocheckpoint {
    #[diesel(sql_type = BigInt)]
    wal_autocheckpoint: i64,
}

fn wal_autocheckpoint(conn: &mut diesel::SqliteConnection) -> i64 {
    diesel::sql_query("PRAGMA wal_autocheckpoint")
        .get_result::<WalAutocheckpoint>(conn)
        .unwrap()
        .wal_autocheckpoint
}

/// `sqlite::memory:` has no WAL and no checkpoint thread: SQLite's default stays.
#[test]
fn sqlite_memory_connections_keep_the_default_checkpoints() {
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!()
    };
    assert_eq!(wal_autocheckpoint(&mut pool.get().unwrap()), 1000);
}

/// A connection to a new migrated `sqlite::memory:` database: the pool's one connection,
/// which holds the pool (and so the database) for as long as it lives.
pub(crate) fn migrated_memory_connection() -> PooledConnection<ConnectionManager<SqliteConnection>>
{
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!()
    };
    pool.get().unwrap()
}

/// A statement prepared on a SQLite connection, with how often it ran and how often it was
/// prepared again after the first time, as SQLite counts them (`sqlite_stmt`).
#[derive(QueryableByName, Debug)]
pub(crate) struct PreparedStatement {
    #[diesel(sql_type = Text)]
    pub(crate) sql: String,
    #[diesel(sql_type = BigInt)]
    pub(crate) run: i64,
    #[diesel(sql_type = BigInt)]
    pub(crate) reprep: i64,
}

/// The statements prepared on `conn` now whose text is `LIKE` `pattern` (this query aside).
pub(crate) fn prepared_statements(
    conn: &mut diesel::SqliteConnection,
    pattern: &str,
) -> Vec<PreparedStatement> {
    diesel::sql_query(
        "SELECT sql, run, reprep FROM sqlite_stmt \
         WHERE sql LIKE ? AND sql NOT LIKE '%sqlite_stmt%'",
    )
    .bind::<Text, _>(pattern)
    .load(conn)
    .unwrap()
}

/// The statements prepared on `conn` that read `objects` with a `LIMIT`.
fn limited_reads(conn: &mut diesel::SqliteConnection) -> Vec<PreparedStatement> {
    prepared_statements(conn, "%FROM `objects`%LIMIT%")
}

/// diesel binds every parameter again on each execution of a cached statement, `LIMIT ?`
/// (`.first()`) included. Unless SQLite is built with the query planner stability
/// guarantee (`.cargo/config.toml`), binding a parameter the plan was made for expires the
/// statement, and each execution parses and plans it again: about 200 000 instructions for a
/// primary-key read (docs/performance.md). The control: a schema change does make SQLite
/// prepare the statement again, and `reprep` counts it.
#[test]
fn a_cached_statement_with_a_bound_limit_is_not_prepared_again() {
    use crate::schema::objects;
    let conn = &mut *migrated_memory_connection();
    let read = |conn: &mut diesel::SqliteConnection, id: &str| {
        objects::table
            .find(id)
            .select(objects::id)
            .first::<String>(conn)
            .optional()
            .unwrap()
    };
    for i in 0..5 {
        assert_eq!(read(conn, &format!("no-such-object-{i}")), None);
    }
    let stmts = limited_reads(conn);
    assert_eq!(stmts.len(), 1, "one cached statement: {stmts:?}");
    assert_eq!(stmts[0].run, 5, "{stmts:?}");
    assert_eq!(stmts[0].reprep, 0, "prepared again on a bind: {stmts:?}");

    // The control: a change of schema expires the statement; its next run prepares it again.
    diesel::sql_query("CREATE TEMP TABLE expire_them (x INTEGER)")
        .execute(conn)
        .unwrap();
    assert_eq!(read(conn, "after"), None);
    let stmts = limited_reads(conn);
    assert_eq!(stmts.len(), 1, "{stmts:?}");
    assert!(stmts[0].sql.contains("LIMIT"), "{stmts:?}");
    assert_eq!(stmts[0].reprep, 1, "a schema change is seen: {stmts:?}");
}

#[derive(QueryableByName)]
struct CompileOption {
    #[diesel(sql_type = Text)]
    compile_options: String,
}

/// SQLite is built in multi-thread mode without memory statistics (`.cargo/config.toml`), so it
/// locks no mutex around each call on a connection or each allocation; diesel never lets two
/// threads use one connection at once, which is what that mode asks. Without the bundled
/// build's memory management, so each connection keeps its own page cache instead of one
/// shared by the process under one mutex. The control: a flag the build always sets is listed
/// the same way.
#[test]
fn sqlite_is_built_for_one_thread_per_connection() {
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!()
    };
    let options: Vec<String> = diesel::sql_query("PRAGMA compile_options")
        .load::<CompileOption>(&mut *pool.get().unwrap())
        .unwrap()
        .into_iter()
        .map(|o| o.compile_options)
        .collect();
    for wanted in [
        "ENABLE_QPSG",
        "THREADSAFE=2",
        "DEFAULT_MEMSTATUS=0",
        "DEFAULT_FOREIGN_KEYS",
        "STMTJRNL_SPILL=262144",
    ] {
        assert!(
            options.iter().any(|o| o == wanted),
            "{wanted} missing from {options:?}"
        );
    }
    assert!(
        !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
        "the page caches are one, shared: {options:?}"
    );
}

#[test]
fn sqlite_memory_keeps_one_database() {
    let opts = PoolOptions {
        max_size: 16,
        ..PoolOptions::default()
    };
    let db = Database::connect("sqlite::memory:", &opts).unwrap();
    assert_eq!(db.pool_state(), (1, 1));
    let (jm, fk, _, _) = pragmas(&db);
    assert_eq!(jm, "memory", "in-memory databases cannot use WAL");
    assert_eq!(fk, 1);
    assert_eq!(db.migrate(&mut |_| {}).unwrap().len(), 10);
    // A migration that turns foreign keys off around its own transaction (20261202000009)
    // turns them on again: this is the only connection, the one every later write uses.
    assert_eq!(pragmas(&db).1, 1);
    // Another checkout sees the migrated schema: same connection, same database.
    assert!(db.pending_migrations().unwrap().is_empty());
    let ns = db.ensure_namespace([7; 16]).unwrap();
    assert_eq!(db.ensure_namespace([9; 16]).unwrap(), ns);
    assert_eq!(read_namespace(&db).unwrap(), Some(ns));
}

#[test]
fn namespace_is_a_lowercase_v4_uuid() {
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    assert_eq!(read_namespace(&db).unwrap(), None);
    let ns = db.ensure_namespace([0xAB; 16]).unwrap();
    assert_eq!(ns, "abababab-abab-4bab-abab-abababababab");
}

#[test]
fn with_tx_rolls_back_on_error() {
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    let result: Result<(), DbError> = with_tx!(db, conn => {
        diesel::insert_into(organization::table)
            .values((
                organization::id.eq(1),
                organization::namespace.eq("x"),
                organization::created_at.eq(0_i64),
            ))
            .execute(conn)?;
        Err(DbError::Query(diesel::result::Error::RollbackTransaction))
    });
    assert!(result.is_err());
    assert_eq!(read_namespace(&db).unwrap(), None);
}

/// A migrated SQLite file database whose connections and write gate wait at most `wait`.
pub(super) fn sqlite_file(dir: &std::path::Path, wait: Duration) -> Database {
    let url = format!("sqlite://{}", dir.join("gate.db").display());
    let opts = PoolOptions {
        connection_timeout: wait,
        ..PoolOptions::default()
    };
    let db = Database::connect(&url, &opts).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    db.ensure_namespace([7; 16]).unwrap();
    db
}

/// A transaction on the organization row, through `with_tx!`.
pub(super) fn touch_in_tx(db: &Database, at: i64) -> Result<usize, DbError> {
    with_tx!(db, conn => {
        Ok(diesel::update(organization::table)
            .set(organization::created_at.eq(at))
            .execute(conn)?)
    })
}

/// A single statement on the organization row, through `with_write!`.
pub(super) fn touch(db: &Database, at: i64) -> Result<usize, DbError> {
    crate::macros::with_write!(db, conn => {
        Ok(diesel::update(organization::table)
            .set(organization::created_at.eq(at))
            .execute(conn)?)
    })
}

#[test]
fn sqlite_writes_queue_on_the_write_gate_and_reads_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), Duration::from_secs(20));
    let held = db.write_gate().enter().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let (db, d) = (&db, done.clone());
        s.spawn(move || d.send(("transaction", touch_in_tx(db, 1).is_ok())).unwrap());
        s.spawn(move || done.send(("statement", touch(db, 2).is_ok())).unwrap());
        // The control: a read does not pass the gate, so it answers while the gate is held.
        assert!(read_namespace(db).unwrap().is_some());
        assert!(
            finished.recv_timeout(Duration::from_millis(400)).is_err(),
            "a write ran while another write of this process held the gate"
        );
        drop(held);
        let mut ended: Vec<_> = (0..2)
            .map(|_| finished.recv_timeout(Duration::from_secs(20)).unwrap())
            .collect();
        ended.sort();
        assert_eq!(ended, [("statement", true), ("transaction", true)]);
    });
}

#[test]
fn a_write_kept_waiting_past_the_timeout_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), Duration::from_millis(150));
    let held = db.write_gate().enter().unwrap();
    let (tx, statement) = std::thread::scope(|s| {
        let tx = s.spawn(|| touch_in_tx(&db, 1));
        let statement = s.spawn(|| touch(&db, 2));
        (tx.join().unwrap(), statement.join().unwrap())
    });
    drop(held);
    for r in [tx, statement] {
        let e = StoreError::from(r.unwrap_err());
        assert!(
            matches!(&e, StoreError::Unavailable(m) if m.contains("write lock")),
            "{e:?}"
        );
    }
    // The gate free again, the same writes go through.
    assert_eq!(touch_in_tx(&db, 3).unwrap(), 1);
    assert_eq!(touch(&db, 4).unwrap(), 1);
}

/// The organization row's `created_at`, which `touch` and `touch_in_tx` set.
pub(super) fn touched(db: &Database) -> i64 {
    let read = || -> Result<i64, DbError> {
        with_conn!(db, conn => {
            Ok(organization::table
                .find(1)
                .select(organization::created_at)
                .first::<i64>(conn)?)
        })
    };
    read().unwrap()
}

#[test]
fn without_waiting_a_sqlite_read_takes_an_idle_connection_or_refuses_at_once() {
    use medialib_ports::no_wait::{Inline, without_waiting};
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), Duration::from_secs(20));
    let read = || read_namespace(&db);
    assert!(
        matches!(without_waiting(read), Inline::Done(Ok(Some(_)))),
        "an idle connection answers the read on this thread"
    );
    let Pools::Sqlite(pool) = db.pools() else {
        unreachable!("a SQLite URL")
    };
    let lent: Vec<_> = (0..pool.max_size()).map(|_| pool.get().unwrap()).collect();
    let started = Instant::now();
    assert!(matches!(without_waiting(read), Inline::WouldWait));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once, not after connection_timeout: {:?}",
        started.elapsed()
    );
    // The control: where waiting is allowed, the same read waits for a connection.
    std::thread::scope(|s| {
        let waiting = s.spawn(read);
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !waiting.is_finished(),
            "the read waits while every connection is lent"
        );
        drop(lent);
        assert!(waiting.join().unwrap().unwrap().is_some());
    });
}

#[test]
fn without_waiting_no_write_runs() {
    use medialib_ports::no_wait::{Inline, without_waiting};
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(dir.path(), Duration::from_secs(20));
    assert!(matches!(
        without_waiting(|| touch_in_tx(&db, 5)),
        Inline::WouldWait
    ));
    assert!(matches!(
        without_waiting(|| touch(&db, 6)),
        Inline::WouldWait
    ));
    assert!(
        matches!(
            without_waiting(|| db.ensure_namespace([1; 16]).map(|_| ())),
            Inline::Done(Ok(()))
        ),
        "a namespace already stored is read, not written"
    );
    assert_eq!(touched(&db), 0, "neither write ran");
    // The control: the same writes where waiting is allowed.
    assert_eq!(touch_in_tx(&db, 5).unwrap(), 1);
    assert_eq!(touched(&db), 5);
    assert_eq!(touch(&db, 6).unwrap(), 1);
    assert_eq!(touched(&db), 6);
}

#[test]
fn without_waiting_postgres_is_never_used() {
    use medialib_ports::no_wait::{Inline, without_waiting};
    let Some(pg) = crate::testing::PgTestDb::create_or_skip() else {
        return;
    };
    let db = Database::connect(&pg.url, &PoolOptions::default()).unwrap();
    db.migrate(&mut |_| {}).unwrap();
    db.ensure_namespace([7; 16]).unwrap();
    assert!(matches!(
        without_waiting(|| read_namespace(&db)),
        Inline::WouldWait
    ));
    assert!(matches!(
        without_waiting(|| touch(&db, 1)),
        Inline::WouldWait
    ));
    assert_eq!(touched(&db), 0);
    assert!(read_namespace(&db).unwrap().is_some(), "the control");
}

/// A row of `pg_stat_ssl`, or of `SHOW ssl`.
#[derive(QueryableByName)]
struct Ssl {
    #[diesel(sql_type = Text)]
    ssl: String,
}

/// End to end, through libpq and a real server: a URL naming loopback and nothing about TLS
/// opens connections without TLS, although the server offers it (the control: its `ssl` is on,
/// so libpq's own default, `prefer`, would have encrypted them).
#[test]
fn a_loopback_database_is_reached_without_tls() {
    let Some(pg) = crate::testing::PgTestDb::create_or_skip() else {
        return;
    };
    let Some(bare) = pg.url.strip_suffix("?sslmode=disable") else {
        eprintln!("a test database URL of the environment's own: skipping");
        return;
    };
    assert!(url::only_loopback_hosts(bare), "{}", url::redact(bare));
    let db = Database::connect(bare, &PoolOptions::default()).unwrap();
    let Pools::Postgres(pool) = db.pools() else {
        unreachable!()
    };
    let conn = &mut **pool.get().unwrap();
    let offered = diesel::sql_query("SHOW ssl")
        .get_result::<Ssl>(conn)
        .unwrap();
    if offered.ssl != "on" {
        eprintln!("this PostgreSQL server offers no TLS: nothing to show");
        return;
    }
    let used = diesel::sql_query(
        "SELECT CASE WHEN ssl THEN 'on' ELSE 'off' END AS ssl \
         FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    )
    .get_result::<Ssl>(conn)
    .unwrap();
    assert_eq!(used.ssl, "off");
}

#[test]
fn invalid_pool_options_are_errors_not_panics() {
    let zero = PoolOptions {
        max_size: 0,
        ..PoolOptions::default()
    };
    assert!(matches!(
        Database::connect("sqlite::memory:", &zero),
        Err(ConnectError::Pool(_))
    ));
    let instant = PoolOptions {
        connection_timeout: Duration::ZERO,
        ..PoolOptions::default()
    };
    assert!(matches!(
        Database::connect("sqlite::memory:", &instant),
        Err(ConnectError::Pool(_))
    ));
}

#[test]
fn debug_output_hides_the_password() {
    let handler = TracingErrorHandler {
        url: "postgres://u:hunter22@h/d".to_owned(),
    };
    let debug = format!("{handler:?}");
    assert!(!debug.contains("hunter22"), "{debug}");
    let db = Database::connect("sqlite::memory:", &PoolOptions::default()).unwrap();
    assert!(format!("{db:?}").contains("Sqlite"));
}

#[test]
fn pool_errors_map_to_unavailable() {
    let e: StoreError = DbError::from(crate::error::PoolError::from(
        diesel::r2d2::Pool::<ConnectionManager<SqliteConnection>>::builder()
            .connection_timeout(Duration::from_millis(10))
            .build_unchecked(ConnectionManager::new("/nonexistent/dir/x.db"))
            .get()
            .err()
            .unwrap(),
    ))
    .into();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
}
/// A pool of one PostgreSQL connection whose liveness window is `window`, and that
/// connection's backend pid.
fn pg_pool_of_one(url: &str, window: Duration) -> (PgPool, i32) {
    #[derive(QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    let pool = Pool::builder()
        .max_size(1)
        .min_idle(Some(0))
        .connection_timeout(Duration::from_secs(5))
        .build(PgManager {
            inner: ConnectionManager::new(url),
            window,
        })
        .unwrap();
    let pid = diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result::<Pid>(&mut **pool.get().unwrap())
        .unwrap()
        .pid;
    (pool, pid)
}

/// Ends `pid`'s session from another connection, as a database restart would.
fn terminate(url: &str, pid: i32) {
    let mut other = PgConnection::establish(url).unwrap();
    diesel::sql_query(format!("SELECT pg_terminate_backend({pid})"))
        .execute(&mut other)
        .unwrap();
}

#[test]
fn a_dead_pg_connection_is_replaced_once_its_check_window_has_passed() {
    let Some(pg) = crate::testing::PgTestDb::create_or_skip() else {
        return;
    };
    // Within the window the checkout trusts the connection: the dead one is handed out
    // and the statement fails (one failed request, a 503 for the caller).
    let (pool, pid) = pg_pool_of_one(&pg.url, Duration::from_secs(3600));
    terminate(&pg.url, pid);
    let r = diesel::sql_query("SELECT 1").execute(&mut **pool.get().unwrap());
    assert!(r.is_err(), "a terminated session answered: {r:?}");
    // Past the window (zero here) the checkout checks, finds it dead and opens another.
    let (pool, pid) = pg_pool_of_one(&pg.url, Duration::ZERO);
    terminate(&pg.url, pid);
    let r = diesel::sql_query("SELECT 1").execute(&mut **pool.get().unwrap());
    assert!(r.is_ok(), "{r:?}");
}

mod tuned_pg_url {
    use super::*;

    /// No libpq environment variable set.
    fn unset(_: &str) -> bool {
        false
    }

    fn tuned(url: &str, connect: Duration) -> String {
        tuned_pg_url(url, connect, unset)
    }

    #[test]
    fn timeouts_are_added_only_where_the_url_sets_none() {
        let five = Duration::from_secs(5);
        assert_eq!(
            tuned("postgres://u@h/db", five),
            "postgres://u@h/db?connect_timeout=5&keepalives=1&keepalives_idle=30\
             &keepalives_interval=10&keepalives_count=3&tcp_user_timeout=30000\
             &gssencmode=disable"
        );
        assert!(
            tuned("postgres://h/db?gssencmode=require", five)
                .starts_with("postgres://h/db?gssencmode=require&"),
            "the operator's own choice stands"
        );
        assert_eq!(
            tuned("postgres://h/db?gssencmode=require", five)
                .matches("gssencmode")
                .count(),
            1
        );
        let own = tuned("postgresql://h/db?sslmode=require&connect_timeout=9", five);
        assert!(
            own.starts_with("postgresql://h/db?sslmode=require&connect_timeout=9&keepalives=1")
        );
        assert_eq!(own.matches("connect_timeout").count(), 1, "{own}");
        assert_eq!(
            tuned("host=h dbname=db", five),
            "host=h dbname=db",
            "a key=value string is the operator's"
        );
        assert!(
            tuned("postgres://h/db", Duration::from_millis(300)).contains("connect_timeout=2&")
        );
    }

    #[test]
    fn tls_is_left_off_on_loopback_only_where_nothing_asks_for_it() {
        let five = Duration::from_secs(5);
        let off = |url: &str| tuned(url, five).contains("sslmode=disable");
        assert!(off("postgres://postgres@127.0.0.1:5432/db"));
        assert!(off("postgres://u@[::1]/db?application_name=x"));
        assert!(off("postgres://localhost"));
        assert!(
            tuned("postgres://localhost", five)
                .starts_with("postgres://localhost?sslmode=disable&")
        );
        // Another host, or a URL or environment that says anything about TLS: libpq decides.
        assert!(!off("postgres://db.internal/db"));
        assert!(!off("postgres://127.0.0.1/db?sslmode=require"));
        assert!(!off("postgres://127.0.0.1/db?sslrootcert=/etc/ca.pem"));
        assert!(!off("postgres://127.0.0.1/db?host=db.internal"));
        assert_eq!(
            tuned("postgres://127.0.0.1/db?sslmode=verify-full", five)
                .matches("sslmode")
                .count(),
            1
        );
        for name in ["PGSSLMODE", "PGSSLROOTCERT", "PGHOSTADDR"] {
            let url = tuned_pg_url("postgres://127.0.0.1/db", five, |set| set == name);
            assert!(!url.contains("sslmode"), "{name}: {url}");
        }
    }

    #[test]
    fn a_parameter_set_in_libpqs_environment_is_left_to_it() {
        let five = Duration::from_secs(5);
        let asked = std::cell::RefCell::new(Vec::new());
        let gss_set = |name: &str| {
            asked.borrow_mut().push(name.to_owned());
            name == "PGGSSENCMODE"
        };
        let url = tuned_pg_url("postgres://h/db", five, gss_set);
        assert!(!url.contains("gssencmode"), "{url}");
        assert!(url.contains("connect_timeout=5"), "{url}");
        assert_eq!(*asked.borrow(), ["PGCONNECT_TIMEOUT", "PGGSSENCMODE"]);
        let url = tuned_pg_url("postgres://h/db", five, |name| name == "PGCONNECT_TIMEOUT");
        assert!(!url.contains("connect_timeout"), "{url}");
        assert!(url.ends_with("&gssencmode=disable"), "{url}");
    }
}

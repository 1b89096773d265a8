//! The machine's ceilings for bench/run.sh. One binary, one mode per invocation:
//!
//! - `serve ADDR`: actix-web answering `GET /` with a small JSON object, with actix-web's
//!   default worker count (one per CPU), the same as `medialib serve`.
//! - `argon2 SECONDS M_KIB T P`: argon2id hashes per second, one hashing thread per CPU.
//! - `sqlite-point SECONDS`: prepared point reads per second on an in-process SQLite table
//!   of 10 000 rows (a temporary file, WAL mode like medialib), one thread.
//! - `sqlite-scan DATABASE COLLECTION SECONDS`: rows per second reading the objects of one
//!   collection of a medialib SQLite database (the catalog query's rows), one thread.
//! - `flood SECONDS CONNECTIONS URL [BODY_FILE COOKIE_FILE]`: a client, not a ceiling: the
//!   latency of admitted and of refused answers apart, under a load that may be shed
//!   (`flood.rs`).
//!
//! Each measuring mode prints one JSON object on standard output.
#![forbid(unsafe_code)]

use std::error::Error;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix_web::{App, HttpResponse, HttpServer, web};
use argon2::{Algorithm, Argon2, Params, Version};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};

mod flood;

type Result<T> = std::result::Result<T, Box<dyn Error + Send + Sync>>;

#[derive(serde::Serialize)]
struct Hello {
    message: &'static str,
    authenticated: &'static str,
}

async fn hello() -> HttpResponse {
    let body = serde_json::to_vec(&Hello {
        message: "hello",
        authenticated: "false",
    })
    .unwrap_or_default();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(body)
}

fn serve(addr: &str) -> Result<()> {
    actix_web::rt::System::new().block_on(async {
        HttpServer::new(|| App::new().route("/", web::get().to(hello)))
            .bind(addr)?
            .run()
            .await
    })?;
    Ok(())
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn argon2_rate(seconds: f64, m_kib: u32, t: u32, p: u32) -> Result<()> {
    let params = Params::new(m_kib, t, p, Some(32)).map_err(|e| e.to_string())?;
    let threads = cpus();
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let (stop, count, params) = (stop.clone(), count.clone(), params.clone());
            std::thread::spawn(move || {
                let hasher = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
                let salt = [i as u8; 16];
                let mut out = [0u8; 32];
                while !stop.load(Ordering::Relaxed) {
                    if hasher
                        .hash_password_into(b"benchmark password", &salt, &mut out)
                        .is_ok()
                    {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    black_box(&out);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().map_err(|_| "a hashing thread panicked")?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let hashes = count.load(Ordering::Relaxed);
    println!(
        "{}",
        serde_json::json!({
            "hashes_per_second": hashes as f64 / elapsed,
            "threads": threads,
            "params": {"m_kib": m_kib, "t": t, "p": p},
        })
    );
    Ok(())
}

diesel::table! {
    kv (id) {
        id -> BigInt,
        v -> Text,
    }
}

fn sqlite_point(seconds: f64) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("medialib-bench-kv-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("kv.db");
    let outcome = (|| -> Result<f64> {
        let mut conn = SqliteConnection::establish(&path.to_string_lossy())?;
        diesel::sql_query("PRAGMA journal_mode = WAL").execute(&mut conn)?;
        diesel::sql_query("CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            .execute(&mut conn)?;
        conn.transaction(|conn| {
            for id in 1..=10_000_i64 {
                diesel::insert_into(kv::table)
                    .values((kv::id.eq(id), kv::v.eq(format!("value {id:05}"))))
                    .execute(conn)?;
            }
            diesel::QueryResult::Ok(())
        })?;
        let deadline = Instant::now() + Duration::from_secs_f64(seconds);
        let started = Instant::now();
        let mut reads = 0u64;
        let mut id = 0i64;
        while Instant::now() < deadline {
            for _ in 0..1000 {
                id = id * 7919 % 10_000 + 1;
                let v: String = kv::table.find(id).select(kv::v).first(&mut conn)?;
                black_box(v);
                reads += 1;
            }
        }
        Ok(reads as f64 / started.elapsed().as_secs_f64())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{}",
        serde_json::json!({"reads_per_second": outcome?, "threads": 1})
    );
    Ok(())
}

#[derive(QueryableByName)]
#[allow(dead_code)]
struct ObjectRow {
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Text)]
    object_type: String,
    #[diesel(sql_type = Text)]
    title: String,
    #[diesel(sql_type = Text)]
    description: String,
    #[diesel(sql_type = Bool)]
    public: bool,
    #[diesel(sql_type = Nullable<BigInt>)]
    duration: Option<i64>,
    #[diesel(sql_type = Text)]
    owner_id: String,
    #[diesel(sql_type = Text)]
    shortcode: String,
    #[diesel(sql_type = BigInt)]
    created_at: i64,
    #[diesel(sql_type = BigInt)]
    modified_at: i64,
}

fn sqlite_scan(database: &str, collection: &str, seconds: f64) -> Result<()> {
    let mut conn = SqliteConnection::establish(database)?;
    let query = "SELECT o.id, o.object_type, o.title, o.description, o.public, o.duration, \
                 o.owner_id, o.shortcode, o.created_at, o.modified_at \
                 FROM memberships m JOIN objects o ON o.id = m.member_id \
                 WHERE m.collection_id = ? AND o.deleted_at IS NULL \
                 ORDER BY o.modified_at DESC";
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let (mut rows, mut scans) = (0u64, 0u64);
    while Instant::now() < deadline {
        let got: Vec<ObjectRow> = diesel::sql_query(query)
            .bind::<Text, _>(collection)
            .load(&mut conn)?;
        rows += got.len() as u64;
        scans += 1;
        black_box(got);
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "rows_per_second": rows as f64 / elapsed,
            "scans_per_second": scans as f64 / elapsed,
            "rows_per_scan": rows.checked_div(scans).unwrap_or(0),
            "threads": 1,
        })
    );
    Ok(())
}

fn number<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T> {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("argument {i} ({what}) is missing or not a number").into())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(args.get(2).map_or("127.0.0.1:8089", String::as_str)),
        Some("argon2") => argon2_rate(
            number(&args, 2, "seconds")?,
            number(&args, 3, "memory KiB")?,
            number(&args, 4, "iterations")?,
            number(&args, 5, "lanes")?,
        ),
        Some("sqlite-point") => sqlite_point(number(&args, 2, "seconds")?),
        Some("sqlite-scan") => sqlite_scan(
            args.get(2).ok_or("argument 2 (database path) is missing")?,
            args.get(3).ok_or("argument 3 (collection id) is missing")?,
            number(&args, 4, "seconds")?,
        ),
        Some("flood") => flood::flood(
            number(&args, 2, "seconds")?,
            number(&args, 3, "connections")?,
            args.get(4).ok_or("argument 4 (URL) is missing")?,
            args.get(5)
                .map(String::as_str)
                .zip(args.get(6).map(String::as_str)),
        ),
        _ => Err(
            "usage: medialib-bench-hello serve ADDR | argon2 SECONDS M_KIB T P | \
                  sqlite-point SECONDS | sqlite-scan DATABASE COLLECTION SECONDS | \
                  flood SECONDS CONNECTIONS URL [BODY_FILE COOKIE_FILE]"
                .into(),
        ),
    }
}

//! A full disk under the database (issue 24): the database on a real file system that fills
//! up (a small tmpfs, mounted for the test; CI runs as root) answers writes with 507 and a
//! message that says the server is out of space, keeps answering reads, counts the refusals on
//! `/metrics`, says so in `/readyz`'s body, and takes writes again once space is freed, with
//! no restart. Before, each such write was `500 {"message":"internal error"}`.
//!
//! - SQLite: its file on a 16 MiB tmpfs.
//! - Media storage (`file://`) on a 16 MiB tmpfs that fills mid-upload: 507, and the tus
//!   upload goes on from its offset once space is freed.
//! - PostgreSQL: a private cluster (`pg_createcluster`) whose data directory is on a 48 MiB
//!   tmpfs and whose WAL is on the ordinary disk, as with a full tablespace: a table that
//!   cannot grow is an error (`could not extend file …: No space left on device`), where a WAL
//!   that cannot be written would stop the server.
//!
//! Needs `mount` (root, or a user namespace); `MEDIALIB_TEST_SKIP_MOUNT=1` skips them.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use reqwest::{Method, StatusCode};

use super::outage::PrivateCluster;
use crate::api::{ApiApp, Backend};
use crate::uploads::{UploadApp, data, sha256_hex};

/// A tmpfs of `SIZE` mounted on a fresh directory; unmounted (lazily, as the app may still
/// hold its files) and removed when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// A tmpfs of `size` (`16m`).
    fn mount(size: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .expect("cannot run mount");
        assert!(
            status.success(),
            "mounting a tmpfs failed ({status}): run as root, or set MEDIALIB_TEST_SKIP_MOUNT=1"
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system with one file, up to its last byte; returns the file.
    fn fill(&self) -> PathBuf {
        let filler = self.path().join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let mut block = vec![0x5a_u8; 1 << 20];
        while block.len() >= 512 {
            while f.write_all(&block).is_ok() {}
            block.truncate(block.len() / 2);
        }
        let _ = f.sync_all();
        filler
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[tokio::test]
async fn a_full_disk_answers_507_to_writes_while_reads_go_on_and_writes_resume_once_freed() {
    if std::env::var_os("MEDIALIB_TEST_SKIP_MOUNT").is_some() {
        return;
    }
    let disk = SmallDisk::mount("16m");
    let db_url = format!("sqlite://{}/medialib.db", disk.path().display());
    let app = ApiApp::start_on(db_url, Box::new(()), |l| l).await;
    on_a_full_disk(&app, &disk).await;
}

#[tokio::test]
async fn postgres_on_a_full_disk_answers_507_to_writes_while_reads_go_on() {
    if std::env::var_os("MEDIALIB_TEST_SKIP_MOUNT").is_some()
        || medialib_adapters_diesel::testing::skipping_pg()
    {
        return;
    }
    let disk = SmallDisk::mount("48m");
    let wal = tempfile::tempdir().unwrap();
    for dir in [disk.path(), wal.path()] {
        let status = Command::new("chown")
            .arg("postgres")
            .arg(dir)
            .status()
            .unwrap();
        assert!(status.success(), "chown postgres {}", dir.display());
    }
    let data = disk.path().join("pg");
    let waldir = wal.path().join("pg_wal");
    let cluster = PrivateCluster::create_with(&[
        ("-d", data.to_str().unwrap()),
        ("--waldir", waldir.to_str().unwrap()),
    ]);
    let app = ApiApp::start_on(cluster.url(), Box::new(()), |l| l).await;
    on_a_full_disk(&app, &disk).await;
    drop(app);
    drop(cluster);
}

/// The scenario on `app`, whose database lives on `disk`.
async fn on_a_full_disk(app: &ApiApp, disk: &SmallDisk) {
    let (_, token) = app.signed_in("filler");
    let library = app.library(&token, "Full").await;
    let object = app.object(&token, &library, "video", "read me").await;
    // The positive control: before the disk fills, a write is a 201.
    app.object(&token, &library, "file", "before").await;

    let filler = disk.fill();
    // Writes with 32 KiB descriptions, until the database needs a byte it cannot have (SQLite
    // may first reuse free pages and its log's space).
    let description = "x".repeat(32 * 1024);
    let write = async |title: &str| {
        app.call(
            Method::PUT,
            &format!("/api/describe/c/{library}/o/0"),
            Some(&token),
            &[
                ("type", "file"),
                ("title", title),
                ("description", &description),
            ],
        )
        .await
    };
    let mut refused = None;
    for i in 0..200 {
        let a = write(&format!("while full {i}")).await;
        assert!(
            a.status == StatusCode::CREATED || a.status == StatusCode::INSUFFICIENT_STORAGE,
            "write {i} on a full disk: {a:?}"
        );
        if a.status == StatusCode::INSUFFICIENT_STORAGE {
            println!(
                "write {i} after the disk filled was the first refused: {:?}",
                a.json
            );
            refused = Some(a);
            break;
        }
    }
    let refused = refused.expect("no write was refused on a full disk");
    let message = refused.json["message"].as_str().unwrap();
    assert!(message.contains("out of space"), "{message}");
    // Every further write is refused the same way, and reads go on.
    let again = write("still full").await;
    assert_eq!(again.status, StatusCode::INSUFFICIENT_STORAGE, "{again:?}");
    let read = app
        .get(
            &format!("/api/describe/c/{library}/o/{object}"),
            Some(&token),
        )
        .await;
    assert_eq!(read.status, StatusCode::OK, "{read:?}");
    let listed = app
        .get(&format!("/api/catalog/o/{library}"), Some(&token))
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{listed:?}");

    // /metrics counts the refusals; /readyz stays ready and says why writes fail.
    let metrics = app
        .app
        .client
        .get(app.app.url("/metrics"))
        .send()
        .await
        .unwrap();
    let metrics = metrics.text().await.unwrap();
    let count: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("medialib_out_of_space_total "))
        .unwrap_or_else(|| panic!("no medialib_out_of_space_total in:\n{metrics}"))
        .trim()
        .parse()
        .unwrap();
    assert!(count >= 2.0, "{count}");
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.status, StatusCode::OK, "{ready:?}");
    assert_eq!(ready.json["status"], "ready");
    assert!(
        ready.json["space"]
            .as_str()
            .is_some_and(|s| s.contains("want of space")),
        "{:?}",
        ready.json
    );

    // Space freed: writes work again, with the same process and pool.
    std::fs::remove_file(&filler).unwrap();
    let after = write("after").await;
    assert_eq!(after.status, StatusCode::CREATED, "{after:?}");
}

/// Media storage on a full disk mid-upload: the PATCH whose bytes cannot be stored is a 507
/// that says so, the upload keeps what it stored and stays resumable from its offset, and it
/// completes, whole and with the right checksum, once space is freed. The database is
/// elsewhere and keeps working.
#[tokio::test]
async fn a_full_media_disk_mid_upload_is_507_and_the_upload_resumes_once_freed() {
    if std::env::var_os("MEDIALIB_TEST_SKIP_MOUNT").is_some() {
        return;
    }
    let disk = SmallDisk::mount("16m");
    let media = disk.path().join("media");
    std::fs::create_dir(&media).unwrap();
    let storage = format!("file://{}", media.display());
    let app = UploadApp::start_with(Backend::Sqlite, |l| l.set("storage_url", storage)).await;
    let bytes = data(12 << 20);
    let location = app.create(bytes.len(), "lecture.mp4").await;
    // The positive control: with room, a chunk is stored.
    let first = app.patch(&location, 0, &bytes[..4 << 20]).await;
    assert_eq!(first.status(), StatusCode::NO_CONTENT);

    let filler = disk.fill();
    let refused = app.patch(&location, 4 << 20, &bytes[4 << 20..]).await;
    assert_eq!(refused.status(), StatusCode::INSUFFICIENT_STORAGE);
    // The rest of the body was not read: the client must not reuse the connection.
    assert_eq!(refused.headers()["connection"], "close");
    let message: serde_json::Value = refused.json().await.unwrap();
    assert!(
        message["message"]
            .as_str()
            .is_some_and(|m| m.contains("space")),
        "{message}"
    );
    // The upload is still there, at an offset within what was sent.
    let head = app.tus(Method::HEAD, &location).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    let offset: usize = head.headers()["upload-offset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (4 << 20..bytes.len()).contains(&offset),
        "offset {offset} after the refused PATCH"
    );

    std::fs::remove_file(&filler).unwrap();
    let rest = app.patch(&location, offset, &bytes[offset..]).await;
    assert_eq!(rest.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        rest.headers()["upload-offset"].to_str().unwrap(),
        bytes.len().to_string()
    );
    let object = location.trim_end_matches('/').rsplit('/').next().unwrap();
    let record = app.media(object).await;
    assert_eq!(record["source"]["size"], bytes.len(), "{record}");
    assert_eq!(record["source"]["sha256"], sha256_hex(&bytes), "{record}");
}

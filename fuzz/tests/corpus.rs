//! Replays the committed seed corpora (`fuzz/corpus/<target>/`) and any saved crash
//! inputs (`fuzz/artifacts/<target>/`) through the targets' checks, on stable Rust and
//! without libFuzzer: `cargo test --manifest-path fuzz/Cargo.toml`.

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for dir in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a readable directory entry").path();
            let data = std::fs::read(&path).expect("a readable input");
            eprintln!("{target}: {}", path.display());
            check(&data);
            seen += 1;
        }
    }
    assert!(seen > 0, "no seed inputs for {target}");
}

#[test]
fn uuid() {
    replay("uuid", medialib_fuzz::ids::check);
}

#[test]
fn text_values() {
    replay("text_values", medialib_fuzz::text_values::check);
}

#[test]
fn object_form() {
    replay("object_form", medialib_fuzz::object_form::check);
}

#[test]
fn redirect_uri() {
    replay("redirect_uri", medialib_fuzz::redirect_uri::check);
}

#[test]
fn authorization() {
    replay("authorization", medialib_fuzz::authorization::check);
}

//! The `local` directory: users' argon2id password hashes in medialib's own database.
//!
//! Passwords are hashed with argon2id and OWASP's parameters (19 MiB of memory, 2 passes,
//! 1 lane), each with a fresh 16-byte salt from the operating system's random source, and
//! stored as PHC strings (`$argon2id$v=19$m=19456,t=2,p=1$SALT$HASH`). Verification reads the
//! parameters from the stored string, so raising them later keeps old hashes working.
//!
//! Sign-in costs the same whether the account exists or not: an unknown user, a user
//! without a password, or a stored hash that does not parse is checked against a dummy hash
//! made when the directory is built, so the answer's timing does not tell which accounts
//! exist.

use std::sync::Arc;

use argon2::password_hash::{self, PasswordHasher, SaltString};
use argon2::{Algorithm, Argon2, Block, Params, Version};
use medialib_domain::{Secret, Timestamp, UniqueId};
use medialib_ports::{
    CredentialRepository, Credentials, PasswordHash, SsoError, SsoIdentity, SsoProvider,
};
use rand::TryRngCore;
use rand::rngs::OsRng;

/// Memory cost in KiB (OWASP Password Storage Cheat Sheet: argon2id, m = 19 MiB).
pub const MEMORY_KIB: u32 = 19_456;
/// Number of passes (OWASP: t = 2).
pub const ITERATIONS: u32 = 2;
/// Degree of parallelism (OWASP: p = 1).
pub const LANES: u32 = 1;
/// Shortest password accepted, in characters.
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Longest password accepted, in bytes of UTF-8.
pub const MAX_PASSWORD_BYTES: usize = 1024;

/// Bytes of random salt per hash (the PHC recommendation).
const SALT_BYTES: usize = 16;

/// A PHC string with the directory's parameters, used when making the dummy hash fails
/// (it cannot, short of the OS random source failing). A unit test keeps it in step with
/// the constants above. Its password is random and forgotten.
const FALLBACK_DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$\
    QK2UyDoYeaHhBfbYiAjHgg$hwvQEk2Ac84CGrusMloQ2MR/JECvMBWMHpNNOj5zSCg";

/// A password the directory refuses to store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Too short or too long.
    #[error("{0}")]
    Policy(String),
    /// The hash could not be computed.
    #[error("password hashing failed: {0}")]
    Hashing(String),
}

/// The hasher with the directory's parameters.
fn hasher() -> Result<Argon2<'static>, PasswordError> {
    let params = Params::new(MEMORY_KIB, ITERATIONS, LANES, None)
        .map_err(|e| PasswordError::Hashing(e.to_string()))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Checks the password policy: at least [`MIN_PASSWORD_CHARS`] characters and at most
/// [`MAX_PASSWORD_BYTES`] bytes.
pub fn check_policy(password: &Secret) -> Result<(), PasswordError> {
    let text = password.expose();
    if text.len() > MAX_PASSWORD_BYTES {
        return Err(PasswordError::Policy(format!(
            "the password is too long: at most {MAX_PASSWORD_BYTES} bytes"
        )));
    }
    let chars = text.chars().count();
    if chars < MIN_PASSWORD_CHARS {
        let what = if chars == 0 {
            "the password is empty".to_owned()
        } else {
            format!("the password is too short ({chars} characters)")
        };
        return Err(PasswordError::Policy(format!(
            "{what}: use at least {MIN_PASSWORD_CHARS} characters"
        )));
    }
    Ok(())
}

/// Hashes a new password with argon2id (a fresh random salt, OWASP parameters) after
/// checking the policy ([`check_policy`]).
pub fn hash_password(password: &Secret) -> Result<PasswordHash, PasswordError> {
    check_policy(password)?;
    hash_unchecked(password.expose().as_bytes())
}

/// Hashes `password` with a fresh salt, without the policy check.
fn hash_unchecked(password: &[u8]) -> Result<PasswordHash, PasswordError> {
    let mut salt = [0u8; SALT_BYTES];
    OsRng.try_fill_bytes(&mut salt).map_err(|e| {
        PasswordError::Hashing(format!("the operating system's random source failed: {e}"))
    })?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| PasswordError::Hashing(e.to_string()))?;
    let phc = hasher()?
        .hash_password(password, &salt)
        .map_err(|e| PasswordError::Hashing(e.to_string()))?;
    Ok(PasswordHash::new(phc.to_string()))
}

/// The `local` SSO provider: checks a username (the uniqueId) and password against the
/// argon2id hashes in the store.
pub struct LocalDirectory {
    store: Arc<dyn CredentialRepository>,
    /// At most one verification per CPU at a time: each takes 19 MiB, and a burst of sign-ins
    /// on the blocking pool would otherwise run dozens at once (memory, not speed, is the limit).
    permits: HashPermits,
    /// Verified against when there is no usable stored hash, so that costs the same.
    dummy: PasswordHash,
}

impl LocalDirectory {
    /// A directory over `store`. Makes the dummy hash (one argon2id hash: tens of
    /// milliseconds).
    pub fn new(store: Arc<dyn CredentialRepository>) -> Self {
        let mut dummy_password = [0u8; 32];
        let dummy = match OsRng.try_fill_bytes(&mut dummy_password) {
            Ok(()) => hash_unchecked(&dummy_password),
            Err(e) => Err(PasswordError::Hashing(e.to_string())),
        }
        .unwrap_or_else(|error| {
            tracing::error!(%error, "cannot make the dummy password hash; using the built-in one");
            PasswordHash::new(FALLBACK_DUMMY_HASH)
        });
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        Self {
            store,
            permits: HashPermits::new(cpus),
            dummy,
        }
    }

    /// Whether `password` matches the PHC string `phc`. A hash that does not parse is
    /// logged, costs a dummy verification, and never matches.
    fn verify(&self, password: &[u8], phc: &str, unique_id: &UniqueId) -> bool {
        let parsed = password_hash::PasswordHash::new(phc).and_then(|parsed| {
            Algorithm::try_from(parsed.algorithm)?;
            Params::try_from(&parsed)?;
            Ok(parsed)
        });
        match parsed {
            Ok(parsed) => match self
                .permits
                .run(|blocks| verify_in(password, &parsed, blocks))
            {
                Ok(matched) => matched,
                Err(error) => {
                    tracing::error!(user = %unique_id.as_str(), %error, "verifying a stored password hash failed");
                    false
                }
            },
            Err(error) => {
                tracing::error!(
                    user = %unique_id.as_str(),
                    %error,
                    "the stored password hash is not an argon2 PHC string; refusing the sign-in"
                );
                self.dummy_verification(password);
                false
            }
        }
    }

    /// The work of one verification, for a sign-in that cannot succeed.
    fn dummy_verification(&self, password: &[u8]) {
        if let Ok(parsed) = password_hash::PasswordHash::new(self.dummy.as_str()) {
            // The dummy's password is random and forgotten: this never matches.
            let _ = self
                .permits
                .run(|blocks| verify_in(password, &parsed, blocks));
        }
    }
}

/// The argon2 working memory of the verifications that may run at once: one buffer per CPU.
/// A verification waits for a free buffer, so at most that many run at a time, and the
/// allocator never sees a 19 MiB block per blocking thread (glibc keeps such blocks in
/// per-thread arenas, so memory grew with every new thread and never came back).
///
/// A buffer is handed on, grown, only to a verification already waiting for one: a burst of
/// sign-ins reuses its buffers (a fresh 19 MiB is about 4 800 page faults: hashing in fresh
/// buffers ran 40 % slower on a virtual machine), and once the burst is over the memory goes back to the system
/// instead of staying resident for the life of the process (19 MiB a CPU after a single
/// sign-in; docs/performance.md).
#[derive(Debug)]
struct HashPermits {
    state: std::sync::Mutex<PermitState>,
    released: std::sync::Condvar,
}

/// The buffers not in use (empty ones not yet grown), and how many verifications wait for one.
#[derive(Debug)]
struct PermitState {
    free: Vec<Vec<Block>>,
    waiting: usize,
}

impl HashPermits {
    fn new(permits: usize) -> Self {
        Self {
            state: std::sync::Mutex::new(PermitState {
                free: vec![Vec::new(); permits.max(1)],
                waiting: 0,
            }),
            released: std::sync::Condvar::new(),
        }
    }

    /// Runs `f` with a free buffer, and gives the buffer back afterwards (also when `f`
    /// panics, so that a permit is never lost): grown to a waiting verification, emptied
    /// otherwise.
    fn run<T>(&self, f: impl FnOnce(&mut Vec<Block>) -> T) -> T {
        let blocks = {
            let mut state = self.lock();
            loop {
                if let Some(b) = state.free.pop() {
                    break b;
                }
                state.waiting += 1;
                state = self.released.wait(state).unwrap_or_else(|p| p.into_inner());
                state.waiting -= 1;
            }
        };
        let mut lent = Lent {
            permits: self,
            blocks,
        };
        f(&mut lent.blocks)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PermitState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes `blocks` back: grown to a waiting verification, emptied otherwise.
    fn give_back(&self, mut blocks: Vec<Block>) {
        let mut state = self.lock();
        let unused = if state.waiting == 0 {
            std::mem::take(&mut blocks)
        } else {
            Vec::new()
        };
        state.free.push(blocks);
        drop(state);
        self.released.notify_one();
        // Freed outside the lock: 19 MiB given back to the system is a system call.
        drop(unused);
    }

    /// The capacity of each free buffer, in blocks.
    #[cfg(test)]
    fn free_capacities(&self) -> Vec<usize> {
        self.lock().free.iter().map(Vec::capacity).collect()
    }
}

/// A buffer lent by [`HashPermits::run`], given back when dropped, unwinding included.
struct Lent<'p> {
    permits: &'p HashPermits,
    blocks: Vec<Block>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        self.permits.give_back(std::mem::take(&mut self.blocks));
    }
}

/// Verifies `password` against a parsed PHC hash, in the caller's `blocks` (grown if the
/// hash's parameters need more). The comparison is constant-time (`Output`'s equality).
fn verify_in(
    password: &[u8],
    parsed: &password_hash::PasswordHash<'_>,
    blocks: &mut Vec<Block>,
) -> password_hash::Result<bool> {
    let algorithm = Algorithm::try_from(parsed.algorithm)?;
    let params = Params::try_from(parsed)?;
    let version = match parsed.version {
        Some(v) => Version::try_from(v)?,
        None => Version::default(),
    };
    let (Some(salt), Some(expected)) = (parsed.salt, parsed.hash) else {
        return Err(password_hash::Error::PhcStringField);
    };
    let mut salt_buf = [0u8; 64];
    let salt = salt.decode_b64(&mut salt_buf)?;
    let needed = params.block_count();
    if blocks.len() < needed {
        blocks.resize(needed, Block::default());
    }
    let mut out = vec![0u8; expected.len()];
    Argon2::new(algorithm, version, params).hash_password_into_with_memory(
        password,
        salt,
        &mut out,
        &mut blocks[..needed],
    )?;
    Ok(password_hash::Output::new(&out)? == expected)
}

impl std::fmt::Debug for LocalDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalDirectory").finish_non_exhaustive()
    }
}

impl SsoProvider for LocalDirectory {
    fn authenticate(
        &self,
        credentials: Credentials<'_>,
        _now: Timestamp,
    ) -> Result<SsoIdentity, SsoError> {
        let Credentials::Password { username, password } = credentials else {
            return Err(SsoError::Unsupported);
        };
        let password = password.expose().as_bytes();
        let Ok(unique_id) = UniqueId::parse(username) else {
            self.dummy_verification(password);
            return Err(SsoError::InvalidCredentials);
        };
        let stored = self
            .store
            .password_hash(&unique_id)
            .map_err(|e| SsoError::Unavailable(e.to_string()))?;
        match stored {
            Some((user, hash)) if self.verify(password, hash.as_str(), &unique_id) => {
                Ok(SsoIdentity {
                    unique_id: user.unique_id,
                    first_name: None,
                    last_name: None,
                })
            }
            Some(_) => Err(SsoError::InvalidCredentials),
            None => {
                self.dummy_verification(password);
                Err(SsoError::InvalidCredentials)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use medialib_domain::{PersonName, User, UserId};
    use medialib_ports::StoreError;

    use super::*;

    /// An in-memory credential store: users by uniqueId, each with an optional hash.
    #[derive(Default)]
    struct FakeCredentials {
        users: Mutex<HashMap<String, (User, Option<PasswordHash>)>>,
        fail: bool,
    }

    impl FakeCredentials {
        fn add(&self, unique_id: &str, n: u8, hash: Option<PasswordHash>) -> User {
            let user = User {
                id: UserId::parse(&format!("{n:032x}")).unwrap(),
                unique_id: UniqueId::parse(unique_id).unwrap(),
                first_name: PersonName::parse("First", "first").unwrap(),
                last_name: PersonName::parse("Last", "last").unwrap(),
                org_admin: false,
            };
            self.users
                .lock()
                .unwrap()
                .insert(unique_id.to_owned(), (user.clone(), hash));
            user
        }
    }

    impl CredentialRepository for FakeCredentials {
        fn set_password_hash(
            &self,
            user: UserId,
            hash: &PasswordHash,
            _now: Timestamp,
        ) -> Result<bool, StoreError> {
            let mut users = self.users.lock().unwrap();
            match users.values_mut().find(|(u, _)| u.id == user) {
                Some(entry) => {
                    entry.1 = Some(hash.clone());
                    Ok(true)
                }
                None => Ok(false),
            }
        }

        fn password_hash(
            &self,
            unique_id: &UniqueId,
        ) -> Result<Option<(User, PasswordHash)>, StoreError> {
            if self.fail {
                return Err(StoreError::Unavailable("database down".into()));
            }
            let users = self.users.lock().unwrap();
            Ok(users
                .get(unique_id.as_str())
                .and_then(|(u, h)| h.clone().map(|h| (u.clone(), h))))
        }
    }

    const PASSWORD: &str = "correct horse battery staple";

    fn now() -> Timestamp {
        Timestamp::from_epoch_seconds(1_800_000_000)
    }

    fn sign_in(
        dir: &LocalDirectory,
        username: &str,
        password: &str,
    ) -> Result<SsoIdentity, SsoError> {
        let password = Secret::new(password);
        dir.authenticate(
            Credentials::Password {
                username,
                password: &password,
            },
            now(),
        )
    }

    /// A directory with `alice` (password [`PASSWORD`]) and `nopass` (no password).
    fn directory() -> (LocalDirectory, Arc<FakeCredentials>) {
        let store = Arc::new(FakeCredentials::default());
        store.add(
            "alice",
            1,
            Some(hash_password(&Secret::new(PASSWORD)).unwrap()),
        );
        store.add("nopass", 2, None);
        (LocalDirectory::new(store.clone()), store)
    }

    #[test]
    fn the_right_password_signs_in_without_touching_names() {
        let (dir, _) = directory();
        let identity = sign_in(&dir, "alice", PASSWORD).unwrap();
        assert_eq!(identity.unique_id.as_str(), "alice");
        assert_eq!(identity.first_name, None);
        assert_eq!(identity.last_name, None);
    }

    #[test]
    fn wrong_unknown_passwordless_and_malformed_are_all_invalid_credentials() {
        let (dir, _) = directory();
        for (username, password) in [
            ("alice", "correct horse battery stapler"),
            ("alice", ""),
            ("Alice", PASSWORD),
            ("bob", PASSWORD),
            ("nopass", PASSWORD),
            ("nopass", ""),
            ("", PASSWORD),
            ("al\u{0}ice", PASSWORD),
            (&"x".repeat(300), PASSWORD),
        ] {
            assert_eq!(
                sign_in(&dir, username, password).unwrap_err(),
                SsoError::InvalidCredentials,
                "{username:?} / {password:?}"
            );
        }
    }

    #[test]
    fn a_replaced_password_takes_over() {
        let (dir, store) = directory();
        let alice = store.users.lock().unwrap()["alice"].0.id;
        let new = hash_password(&Secret::new("a brand new passphrase")).unwrap();
        assert!(store.set_password_hash(alice, &new, now()).unwrap());
        assert!(sign_in(&dir, "alice", "a brand new passphrase").is_ok());
        assert_eq!(
            sign_in(&dir, "alice", PASSWORD).unwrap_err(),
            SsoError::InvalidCredentials
        );
    }

    #[test]
    fn a_stored_hash_that_does_not_parse_never_matches() {
        let store = Arc::new(FakeCredentials::default());
        for (n, bad) in [
            "",
            "plaintext",
            "$2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
            "$argon2id$v=19$m=1,t=0,p=0$c2FsdHNhbHQ$aGFzaA",
        ]
        .into_iter()
        .enumerate()
        {
            store.add(&format!("u{n}"), 10 + n as u8, Some(PasswordHash::new(bad)));
        }
        let dir = LocalDirectory::new(store);
        for n in 0..4 {
            assert_eq!(
                sign_in(&dir, &format!("u{n}"), "plaintext").unwrap_err(),
                SsoError::InvalidCredentials
            );
        }
    }

    #[test]
    fn storage_failures_are_unavailable_and_proxy_headers_unsupported() {
        let store = Arc::new(FakeCredentials {
            fail: true,
            ..FakeCredentials::default()
        });
        let dir = LocalDirectory::new(store);
        assert!(matches!(
            sign_in(&dir, "alice", PASSWORD),
            Err(SsoError::Unavailable(why)) if why.contains("database down")
        ));
        let header = dir.authenticate(
            Credentials::ProxyHeader {
                value: "alice",
                from_trusted_proxy: true,
            },
            now(),
        );
        assert_eq!(header.unwrap_err(), SsoError::Unsupported);
    }

    #[test]
    fn the_policy_has_clear_messages() {
        let err = |p: &str| hash_password(&Secret::new(p)).unwrap_err();
        assert_eq!(
            err(""),
            PasswordError::Policy("the password is empty: use at least 8 characters".into())
        );
        assert_eq!(
            err("1234567").to_string(),
            "the password is too short (7 characters): use at least 8 characters"
        );
        // Characters, not bytes: seven two-byte letters are still too short.
        assert!(matches!(err("ééééééé"), PasswordError::Policy(_)));
        assert_eq!(
            err(&"x".repeat(1025)).to_string(),
            "the password is too long: at most 1024 bytes"
        );
        assert!(hash_password(&Secret::new("12345678")).is_ok());
        assert!(
            hash_password(&Secret::new("ü".repeat(512))).is_ok(),
            "1024 bytes"
        );
    }

    #[test]
    fn hashes_are_argon2id_phc_strings_with_the_owasp_parameters_and_fresh_salts() {
        let a = hash_password(&Secret::new(PASSWORD)).unwrap();
        let b = hash_password(&Secret::new(PASSWORD)).unwrap();
        assert_ne!(a, b, "each hash has its own salt");
        for hash in [&a, &b] {
            let phc = password_hash::PasswordHash::new(hash.as_str()).unwrap();
            assert_eq!(phc.algorithm.as_str(), "argon2id");
            assert_eq!(phc.version, Some(19));
            let params = Params::try_from(&phc).unwrap();
            assert_eq!(
                (params.m_cost(), params.t_cost(), params.p_cost()),
                (19_456, 2, 1)
            );
            assert!(
                hash.as_str().starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
                "{}",
                hash.as_str()
            );
            let mut salt = [0u8; 64];
            assert_eq!(phc.salt.unwrap().decode_b64(&mut salt).unwrap().len(), 16);
            assert!(!hash.as_str().contains(PASSWORD));
        }
        assert_eq!(format!("{a:?}"), "PasswordHash([redacted])");
    }

    #[test]
    fn the_fallback_dummy_hash_has_the_directory_parameters() {
        let phc = password_hash::PasswordHash::new(FALLBACK_DUMMY_HASH).unwrap();
        assert_eq!(
            Algorithm::try_from(phc.algorithm).unwrap(),
            Algorithm::Argon2id
        );
        let params = Params::try_from(&phc).unwrap();
        assert_eq!(
            (params.m_cost(), params.t_cost(), params.p_cost()),
            (MEMORY_KIB, ITERATIONS, LANES)
        );
        assert!(
            hasher().is_ok(),
            "the constants are valid argon2 parameters"
        );
    }

    fn timed(f: impl FnOnce()) -> Duration {
        let start = Instant::now();
        f();
        start.elapsed()
    }

    /// An unknown user costs what a known user with a wrong password costs, so the answer's
    /// timing does not reveal which accounts exist. Run with `--nocapture` to see the numbers.
    #[test]
    fn an_unknown_user_costs_as_much_as_a_wrong_password() {
        const N: u32 = 20;
        let (dir, _) = directory();
        let wrong = "not the password at all";
        // Warm up (page in the memory, settle the CPU frequency).
        for _ in 0..3 {
            let _ = sign_in(&dir, "alice", wrong);
            let _ = sign_in(&dir, "nobody", wrong);
        }
        // Interleaved, so that load from other processes hits all three alike.
        let (mut known, mut unknown, mut passwordless) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        for _ in 0..N {
            known += timed(|| assert!(sign_in(&dir, "alice", wrong).is_err()));
            unknown += timed(|| assert!(sign_in(&dir, "nobody", wrong).is_err()));
            passwordless += timed(|| assert!(sign_in(&dir, "nopass", wrong).is_err()));
        }
        let (known, unknown, passwordless) = (known / N, unknown / N, passwordless / N);
        let ratio = unknown.as_secs_f64() / known.as_secs_f64();
        let ratio_passwordless = passwordless.as_secs_f64() / known.as_secs_f64();
        println!(
            "argon2id verification ({} build): known user, wrong password {known:?}; \
             unknown user {unknown:?}; user without password {passwordless:?}; \
             ratios {ratio:.3} and {ratio_passwordless:.3}",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
        assert!(
            (0.5..=2.0).contains(&ratio),
            "unknown user {unknown:?} vs wrong password {known:?}: ratio {ratio}"
        );
        assert!(
            (0.5..=2.0).contains(&ratio_passwordless),
            "user without password {passwordless:?} vs wrong password {known:?}: ratio {ratio_passwordless}"
        );
        // A skipped verification would cost microseconds, not milliseconds.
        assert!(unknown > Duration::from_millis(1), "{unknown:?}");
        if !cfg!(debug_assertions) {
            assert!(
                known < Duration::from_millis(100),
                "one verification took {known:?}"
            );
        }
    }

    #[test]
    fn a_buffer_is_kept_only_for_a_verification_already_waiting() {
        use std::sync::mpsc;
        let permits = Arc::new(HashPermits::new(1));
        // Alone: the buffer it grew is given back to the system afterwards.
        permits.run(|blocks| blocks.resize(64, Block::default()));
        assert_eq!(permits.free_capacities(), [0]);
        // A second verification waits while the first holds the only buffer: it gets the
        // buffer as the first grew it (positive control: the hand-on is seen), and, alone
        // in its turn, empties it.
        let (started, holding) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let first = {
            let permits = permits.clone();
            std::thread::spawn(move || {
                permits.run(|blocks| {
                    blocks.resize(64, Block::default());
                    started.send(()).unwrap();
                    released.recv().unwrap();
                })
            })
        };
        holding.recv().unwrap();
        let second = {
            let permits = permits.clone();
            std::thread::spawn(move || permits.run(|blocks| blocks.capacity()))
        };
        while permits.state.lock().unwrap().waiting == 0 {
            std::thread::yield_now();
        }
        release.send(()).unwrap();
        first.join().unwrap();
        assert!(
            second.join().unwrap() >= 64,
            "the waiting verification got a fresh buffer"
        );
        assert_eq!(permits.free_capacities(), [0]);
    }

    #[test]
    fn a_verification_that_panics_gives_its_permit_back() {
        let permits = HashPermits::new(1);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            permits.run(|_| std::panic::resume_unwind(Box::new("a verification failed")))
        }));
        assert!(panicked.is_err());
        assert_eq!(
            permits.free_capacities(),
            [0],
            "the only permit is free again"
        );
        // And the next verification gets it (without it, this would wait for ever).
        assert_eq!(permits.run(|_| 7), 7);
    }

    #[test]
    fn at_most_the_permitted_number_of_verifications_run_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let permits = Arc::new(HashPermits::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (permits, running, peak) = (permits.clone(), running.clone(), peak.clone());
                std::thread::spawn(move || {
                    permits.run(|_| {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        running.fetch_sub(1, Ordering::SeqCst);
                    })
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }
}

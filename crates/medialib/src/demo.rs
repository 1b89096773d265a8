//! `medialib demo`: a demo organization on the embedded defaults, and what to paste to try it.
//!
//! [`prepare`] makes sure the demo data exists (idempotent: a second run reuses the user, the
//! library and its objects, and the client), gives the demo user a fresh random password and
//! the demo client a fresh secret (each is printed, and stored only as a hash or digest), and
//! [`Instructions`] turns that into the sign-in details, a ready-to-paste authorization URL and
//! the `curl` commands that finish the OAuth 2.0 flow.

use std::fmt::Write as _;

use medialib_adapters_sso::{PasswordError, hash_password};
use medialib_domain::oauth::{ClientId, CodeChallenge, CodeVerifier};
use medialib_domain::{
    Caller, Description, DurationSecs, NewObject, ObjectFields, ObjectId, ObjectType, PersonName,
    Properties, Secret, Title, UniqueId, User, hex,
};
use medialib_ports::services::clients::NewClient;
use medialib_ports::services::{NewUserInput, Placement};
use medialib_ports::{CreateUserError, RandomExt as _, RandomSource, Services};
use serde_json::json;

use crate::admin::AdminError;
use crate::configuration::{BaseUrl, Settings, Sso};

/// The demo user's uniqueId (their username on the sign-in page).
pub const DEMO_USER: &str = "demo";
/// The title of the demo library.
pub const DEMO_LIBRARY: &str = "Demo library";
/// The demo OAuth client's name, shown on the consent page.
pub const DEMO_CLIENT: &str = "medialib demo client";
/// The demo client's one redirect URI. A loopback `http` URI: any port matches (RFC 8252),
/// and with none the browser lands on a page that does not load, with the code in its
/// address bar.
pub const DEMO_REDIRECT_URI: &str = "http://127.0.0.1/callback";
/// The title of the sub-library inside the demo library.
const DEMO_SUB_LIBRARY: &str = "Seminar materials";

/// One demo object: type, title, description, public, duration.
struct Item {
    object_type: ObjectType,
    title: &'static str,
    description: &'static str,
    public: bool,
    duration: Option<i64>,
}

/// The demo library's members.
const ITEMS: [Item; 5] = [
    Item {
        object_type: ObjectType::Video,
        title: "Welcome to medialib",
        description: "A public video: its limited record can be read without signing in.",
        public: true,
        duration: Some(95),
    },
    Item {
        object_type: ObjectType::Audio,
        title: "Lecture recording, week 1",
        description: "An audio recording.",
        public: false,
        duration: Some(3120),
    },
    Item {
        object_type: ObjectType::Image,
        title: "Campus map",
        description: "An image.",
        public: false,
        duration: None,
    },
    Item {
        object_type: ObjectType::File,
        title: "Syllabus",
        description: "A file.",
        public: false,
        duration: None,
    },
    Item {
        object_type: ObjectType::Catalog,
        title: DEMO_SUB_LIBRARY,
        description: "A library inside the demo library.",
        public: false,
        duration: None,
    },
];

/// The sub-library's member.
const SUB_ITEM: Item = Item {
    object_type: ObjectType::File,
    title: "Reading list",
    description: "A file in the sub-library.",
    public: false,
    duration: None,
};

/// Refuses settings `demo` must not run with: a non-loopback listen address (it prints a
/// password and a client secret, and it is for trying medialib on this computer) and a
/// sign-in mode other than `local` (the demo user signs in with a password).
pub fn check_settings(settings: &Settings) -> Result<(), AdminError> {
    let mut problems = Vec::new();
    if !settings.bind.ip().to_canonical().is_loopback() {
        problems.push(format!(
            "medialib demo serves only on a loopback address (127.0.0.1 or [::1]), not {}: it prints \
             a password and a client secret and is meant for trying medialib on this computer; \
             use `medialib serve` to serve others",
            settings.bind
        ));
    }
    if !matches!(settings.sso, Sso::Local) {
        problems.push(
            "medialib demo uses the `local` sign-in directory: unset MEDIALIB_SSO (or set it to local)"
                .to_owned(),
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(AdminError::Invalid(problems.join("\n")))
    }
}

/// What [`prepare`] made sure of.
#[derive(Debug)]
pub struct DemoData {
    /// The demo user.
    pub user: User,
    /// The password just set for it.
    pub password: Secret,
    /// The demo library.
    pub library: ObjectId,
    /// Its members whose media was uploaded now or before (processing may still run).
    pub media: Vec<ObjectId>,
    /// The demo client.
    pub client_id: ClientId,
    /// The secret just issued to it.
    pub client_secret: Secret,
    /// The public client the API reference page (`/api/docs`) signs in with.
    pub docs_client_id: ClientId,
}

fn failed(e: impl std::fmt::Display) -> AdminError {
    AdminError::Failed(e.to_string())
}

/// Creates what is missing of the demo organization, sets a fresh password for the demo user
/// and a fresh secret for the demo client, and reports each step through `progress`.
pub fn prepare(
    services: &Services,
    settings: &Settings,
    random: &dyn RandomSource,
    progress: &mut dyn FnMut(&str),
) -> Result<DemoData, AdminError> {
    let user = demo_user(services, progress)?;
    let password = Secret::new(random_password(random));
    let hash = hash_password(&password).map_err(|e| match e {
        PasswordError::Policy(m) | PasswordError::Hashing(m) => AdminError::Failed(m),
    })?;
    services
        .people()
        .set_password(&user.unique_id, &hash)
        .map_err(failed)?
        .ok_or_else(|| failed("the demo user vanished while its password was set"))?;
    progress(&format!(
        "user {DEMO_USER}: a new password is set (it changes at every start)"
    ));
    let (library, members) = demo_library(services, &user, progress)?;
    let media = crate::demo_media::attach(services, &user, library, &members, progress);
    let (client_id, client_secret) = demo_client(services, progress)?;
    let docs_client_id = docs_client(services, &docs_redirect_uri(settings), progress)?;
    Ok(DemoData {
        user,
        password,
        library,
        media,
        client_id,
        client_secret,
        docs_client_id,
    })
}

/// The API reference page's client's name, shown on the consent page.
pub const DOCS_CLIENT: &str = "medialib API reference";

/// Where the API reference's sign-in returns: under the configured base URL, else on the
/// loopback address the demo binds, with no port (any port matches a loopback `http`
/// redirect URI, RFC 8252 §7.3).
pub fn docs_redirect_uri(settings: &Settings) -> String {
    let path = "/api/docs/oauth2-redirect.html";
    match &settings.base_url {
        Some(base) => format!("{}{path}", base.as_str().trim_end_matches('/')),
        None => match settings.bind.ip() {
            std::net::IpAddr::V6(ip) => format!("http://[{ip}]{path}"),
            std::net::IpAddr::V4(ip) => format!("http://{ip}{path}"),
        },
    }
}

/// The client named `name`, public or not, whose redirect URIs include `redirect`, if one is
/// registered.
fn registered(
    services: &Services,
    name: &str,
    public: bool,
    redirect: &str,
) -> Result<Option<medialib_domain::oauth::Client>, AdminError> {
    Ok(services
        .oauth()
        .list_clients()
        .map_err(failed)?
        .into_iter()
        .find(|c| {
            c.name().as_str() == name
                && c.is_public() == public
                && c.redirect_uris().iter().any(|u| u.as_str() == redirect)
        }))
}

/// The public client of the API reference page with `redirect`, found or registered.
fn docs_client(
    services: &Services,
    redirect: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<ClientId, AdminError> {
    if let Some(client) = registered(services, DOCS_CLIENT, true, redirect)? {
        return Ok(client.id().clone());
    }
    let (client, _) = services
        .oauth()
        .register_client(NewClient {
            name: DOCS_CLIENT.to_owned(),
            redirect_uris: vec![redirect.to_owned()],
            public: true,
        })
        .map_err(failed)?;
    progress(&format!(
        "client {DOCS_CLIENT:?}: registered ({}), public, for the API reference page",
        client.id()
    ));
    Ok(client.id().clone())
}

fn demo_user(services: &Services, progress: &mut dyn FnMut(&str)) -> Result<User, AdminError> {
    let unique_id = UniqueId::parse(DEMO_USER).map_err(failed)?;
    if let Some(user) = services
        .store()
        .user_by_unique_id(&unique_id)
        .map_err(failed)?
    {
        progress(&format!("user {DEMO_USER}: exists ({})", user.id));
        return Ok(user);
    }
    let input = NewUserInput {
        unique_id: unique_id.clone(),
        first_name: PersonName::parse("Demo", "first-name").map_err(failed)?,
        last_name: PersonName::parse("User", "last-name").map_err(failed)?,
        org_admin: false,
    };
    match services.people().create_user(input) {
        Ok(user) => {
            progress(&format!("user {DEMO_USER}: created ({})", user.id));
            Ok(user)
        }
        // Another demo start won the race: use its user.
        Err(CreateUserError::UniqueIdTaken) => services
            .store()
            .user_by_unique_id(&unique_id)
            .map_err(failed)?
            .ok_or_else(|| failed("the demo user could not be created")),
        Err(CreateUserError::Store(e)) => Err(failed(e)),
    }
}

fn new_object(item: &Item) -> Result<NewObject, AdminError> {
    Ok(NewObject {
        object_type: item.object_type,
        fields: ObjectFields {
            title: Title::parse(item.title).map_err(failed)?,
            description: Description::parse(item.description).map_err(failed)?,
            public: item.public,
            duration: item
                .duration
                .map(DurationSecs::from_seconds)
                .transpose()
                .map_err(failed)?,
            properties: Properties::parse([("source", "medialib demo")]).map_err(failed)?,
        },
    })
}

/// The id of `collection`'s member titled like `item` with its type, creating it if missing.
fn ensure_member(
    services: &Services,
    caller: &Caller,
    collection: ObjectId,
    item: &Item,
) -> Result<(ObjectId, bool), AdminError> {
    let page = services
        .media()
        .list_catalog(caller, collection, None, None)
        .map_err(failed)?;
    let existing = page.items.iter().find(|m| {
        m.object.object_type() == item.object_type && m.object.fields().title.as_str() == item.title
    });
    if let Some(found) = existing {
        return Ok((found.object.id(), false));
    }
    let created = services
        .media()
        .create_object(caller, Placement::In(collection), new_object(item)?)
        .map_err(failed)?;
    Ok((created.id(), true))
}

/// The demo library and its members that carry media, with their types.
fn demo_library(
    services: &Services,
    user: &User,
    progress: &mut dyn FnMut(&str),
) -> Result<(ObjectId, Vec<(ObjectId, ObjectType)>), AdminError> {
    let caller = user.as_caller();
    let existing = services
        .store()
        .catalogs_with_entries_for(user.id)
        .map_err(failed)?
        .into_iter()
        .find(|c| c.fields().title.as_str() == DEMO_LIBRARY);
    let (library, library_is_new) = match existing {
        Some(library) => (library.id(), false),
        None => {
            let library = Item {
                object_type: ObjectType::Catalog,
                title: DEMO_LIBRARY,
                description: "The demo organization's library: a video, an audio recording, an image, a file and a sub-library.",
                public: false,
                duration: None,
            };
            let id = services
                .media()
                .create_object(&caller, Placement::TopLevel, new_object(&library)?)
                .map_err(failed)?
                .id();
            (id, true)
        }
    };
    let mut created = 0_usize;
    let mut sub = None;
    let mut media = Vec::new();
    for item in &ITEMS {
        let (id, new) = ensure_member(services, &caller, library, item)?;
        created += usize::from(new);
        if item.title == DEMO_SUB_LIBRARY {
            sub = Some(id);
        } else {
            media.push((id, item.object_type));
        }
    }
    if let Some(sub) = sub {
        let (_, new) = ensure_member(services, &caller, sub, &SUB_ITEM)?;
        created += usize::from(new);
    }
    let message = match (library_is_new, created) {
        (true, n) => format!("created with {n} objects"),
        (false, 0) => "exists with its objects".to_owned(),
        (false, n) => format!("exists; {n} missing object(s) added"),
    };
    progress(&format!("library {DEMO_LIBRARY:?}: {message} ({library})"));
    Ok((library, media))
}

fn demo_client(
    services: &Services,
    progress: &mut dyn FnMut(&str),
) -> Result<(ClientId, Secret), AdminError> {
    if let Some(client) = registered(services, DEMO_CLIENT, false, DEMO_REDIRECT_URI)? {
        let secret = services
            .oauth()
            .rotate_client_secret(client.id())
            .map_err(failed)?;
        progress(&format!(
            "client {DEMO_CLIENT:?}: exists ({}); a new secret is issued (it changes at every start)",
            client.id()
        ));
        return Ok((client.id().clone(), secret));
    }
    let (client, secret) = services
        .oauth()
        .register_client(NewClient {
            name: DEMO_CLIENT.to_owned(),
            redirect_uris: vec![DEMO_REDIRECT_URI.to_owned()],
            public: false,
        })
        .map_err(failed)?;
    let secret = secret.ok_or_else(|| failed("the demo client got no secret"))?;
    progress(&format!(
        "client {DEMO_CLIENT:?}: registered ({})",
        client.id()
    ));
    Ok((client.id().clone(), secret))
}

/// Letters and digits that cannot be mistaken for one another (no `l`, `o`, `0`, `1`): 32 of
/// them, so each random byte maps to one without bias.
const PASSWORD_ALPHABET: &[u8; 32] = b"abcdefghijkmnpqrstuvwxyz23456789";

/// A random password of 20 characters (100 bits) in four dash-separated groups of five.
fn random_password(random: &dyn RandomSource) -> String {
    let bytes = random.bytes32();
    let mut out = String::with_capacity(23);
    for (i, b) in bytes.iter().take(20).enumerate() {
        if i > 0 && i % 5 == 0 {
            out.push('-');
        }
        out.push(char::from(PASSWORD_ALPHABET[usize::from(b % 32)]));
    }
    out
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// How to try the running demo: sign-in details, the authorization URL, the commands.
#[derive(Debug)]
pub struct Instructions {
    base_url: String,
    username: String,
    password: Secret,
    library: ObjectId,
    client_id: ClientId,
    client_secret: Secret,
    state: String,
    code_verifier: Secret,
    code_ttl: u32,
}

impl Instructions {
    /// The instructions for `data` on the server at `base_url`, with a fresh `state` and PKCE
    /// verifier; `code_ttl` is the authorization code lifetime in seconds.
    pub fn new(
        base_url: &BaseUrl,
        data: &DemoData,
        random: &dyn RandomSource,
        code_ttl: u32,
    ) -> Self {
        Self {
            base_url: base_url.as_str().trim_end_matches('/').to_owned(),
            username: data.user.unique_id.as_str().to_owned(),
            password: data.password.clone(),
            library: data.library,
            client_id: data.client_id.clone(),
            client_secret: data.client_secret.clone(),
            state: hex::lower(&random.bytes16()),
            code_verifier: Secret::new(hex::lower(&random.bytes32())),
            code_ttl,
        }
    }

    /// The authorization request to open in a browser: code flow, `read write`, offline
    /// access, PKCE S256.
    pub fn authorization_url(&self) -> String {
        let challenge = match CodeVerifier::parse(self.code_verifier.expose()) {
            Ok(verifier) => CodeChallenge::of(&verifier).as_str().to_owned(),
            // 64 hex digits always parse; an empty challenge would only make the URL fail.
            Err(_) => String::new(),
        };
        format!(
            "{}/api/oauth/authorize?response_type=code&client_id={}&redirect_uri={}&scope={}&state={}&access_type=offline&code_challenge={}&code_challenge_method=S256",
            self.base_url,
            encode(self.client_id.as_str()),
            encode(DEMO_REDIRECT_URI),
            encode("read write"),
            encode(&self.state),
            challenge,
        )
    }

    /// The `curl` command that exchanges a code (pasted over `PASTE_THE_CODE_HERE`) for tokens.
    pub fn token_command(&self) -> String {
        format!(
            "curl -s -X POST {}/api/oauth/access_token -d grant_type=authorization_code -d code=PASTE_THE_CODE_HERE -d redirect_uri={} -d client_id={} -d client_secret={} -d code_verifier={}",
            self.base_url,
            encode(DEMO_REDIRECT_URI),
            encode(self.client_id.as_str()),
            encode(self.client_secret.expose()),
            self.code_verifier.expose(),
        )
    }

    /// The `curl` command that lists the demo library with an access token (pasted over
    /// `PASTE_THE_ACCESS_TOKEN_HERE`).
    pub fn api_command(&self) -> String {
        format!(
            "curl -s -H \"Authorization: Bearer PASTE_THE_ACCESS_TOKEN_HERE\" {}/api/catalog/o/{}",
            self.base_url, self.library
        )
    }

    /// The `curl` command that uploads a file into the demo library (the one-shot PUT).
    pub fn upload_command(&self) -> String {
        format!(
            "curl -s -X PUT -H \"Authorization: Bearer PASTE_THE_ACCESS_TOKEN_HERE\" -F file=@PATH_OF_A_FILE {}/api/upload/c/{}/o/0/",
            self.base_url, self.library
        )
    }

    /// The `curl` command that reads an uploaded object's media record (its download URL).
    pub fn media_command(&self) -> String {
        format!(
            "curl -s -H \"Authorization: Bearer PASTE_THE_ACCESS_TOKEN_HERE\" {}/api/media/c/{}/o/PASTE_THE_UUID_HERE/",
            self.base_url, self.library
        )
    }

    /// Everything as one JSON object (`medialib demo --json`).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "url": format!("{}/", self.base_url),
            "username": self.username,
            "password": self.password.expose(),
            "library": self.library.to_string(),
            "client_id": self.client_id.as_str(),
            "client_secret": self.client_secret.expose(),
            "redirect_uri": DEMO_REDIRECT_URI,
            "state": self.state,
            "code_verifier": self.code_verifier.expose(),
            "authorization_url": self.authorization_url(),
            "token_command": self.token_command(),
            "api_command": self.api_command(),
            "upload_command": self.upload_command(),
            "media_command": self.media_command(),
        })
    }

    /// The text printed on a terminal.
    pub fn to_text(&self) -> String {
        format!(
            "\
medialib demo is running at {base}/
Ctrl-C stops it. The password and the client secret change at every start.

Sign in as
  username:  {username}
  password:  {password}

OAuth client {client:?} (confidential; redirect URI {redirect})
  client_id:      {client_id}
  client_secret:  {client_secret}

Try the OAuth 2.0 flow:
1. Open this URL in a browser, sign in as above and approve:
   {authorize}
2. The browser is sent to {redirect}?code=...&state={state}&iss=...,
   a page that does not load (nothing listens there). Copy the code from the address bar
   and exchange it within {ttl} seconds:
   {token}
3. Call the API with the access_token of the answer (here: list the demo library):
   {api}
4. Upload a file into the demo library (the answer names its uuid; tus clients resume large
   uploads at the same address, see docs/api.md):
   {upload}
   and read its media record, whose files[0].url downloads it back:
   {media}
The API reference is at {base}/api/docs (its Authorize button signs in as above, with the
public client {docs_client:?}); the document itself is {base}/api/openapi.json, and
docs/api.md explains it.
",
            base = self.base_url,
            username = self.username,
            password = self.password.expose(),
            client = DEMO_CLIENT,
            docs_client = DOCS_CLIENT,
            redirect = DEMO_REDIRECT_URI,
            client_id = self.client_id,
            client_secret = self.client_secret.expose(),
            authorize = self.authorization_url(),
            state = self.state,
            ttl = self.code_ttl,
            token = self.token_command(),
            api = self.api_command(),
            upload = self.upload_command(),
            media = self.media_command(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter(std::sync::atomic::AtomicU8);

    impl RandomSource for Counter {
        fn fill(&self, buf: &mut [u8]) {
            for b in buf {
                *b = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    #[test]
    fn passwords_are_four_groups_of_five_unambiguous_characters() {
        let password = random_password(&Counter(0.into()));
        assert_eq!(password, "abcde-fghij-kmnpq-rstuv");
        let password = random_password(&Counter(27.into()));
        assert_eq!(password.len(), 23);
        assert!(password.starts_with("56789-ab"), "{password}");
        assert!(
            password
                .bytes()
                .all(|b| b == b'-' || PASSWORD_ALPHABET.contains(&b))
        );
    }

    #[test]
    fn urls_encode_everything_but_unreserved_characters() {
        assert_eq!(
            encode("http://127.0.0.1/callback"),
            "http%3A%2F%2F127.0.0.1%2Fcallback"
        );
        assert_eq!(encode("read write"), "read%20write");
        assert_eq!(encode("a-b.c_d~e"), "a-b.c_d~e");
    }
}

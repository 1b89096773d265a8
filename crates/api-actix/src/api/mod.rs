//! The media REST API (spec §4). Each resource is a [`Resource`]: the methods it offers, who
//! may call it without a token, how its path's ids parse, what its writes do and its answer
//! to each method. One handler, [`handle`], reads every call in the same order (body, 501,
//! 401, fields, path), answers OPTIONS on every path and hands the rest to the resource,
//! which dispatches on the effective method (overrides applied): a method it does not offer
//! is a 501 with `Allow`.

pub(crate) mod authenticate;
pub(crate) mod catalog;
pub(crate) mod contribute;
pub(crate) mod describe;
pub(crate) mod info;
pub(crate) mod media;
pub(crate) mod media_call;
pub(crate) mod permission;
pub(crate) mod user;

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::authz;
use medialib_domain::{Action, Caller, IdOrZero, ObjectId, UserId};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::auth::{optional_caller, presented_token, required_caller};
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::ApiCall;
use crate::state::AppState;

/// Registers the API routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    use crate::routing::resource;
    cfg.service(resource("/api/describe/c/{c}/o/{o}").to(handle::<describe::Describe>))
        .service(resource("/api/user/c/{c}/o/{o}").to(handle::<user::User>))
        .service(resource("/api/permission/c/{c}/o/{o}").to(handle::<permission::Permission>))
        .service(resource("/api/info/c/{c}/o/{o}").to(handle::<info::Info>))
        .service(resource("/api/embed/c/{c}/o/{o}").to(handle::<media::Embed>))
        .service(resource("/api/video/c/{c}/o/{o}").to(handle::<media::Video>))
        .service(resource("/api/authenticate").to(handle::<authenticate::Authenticate>))
        .service(resource("/api/catalog/c/{c}/o/{o}").to(handle::<catalog::Catalog>))
        .service(resource("/api/catalog/o/{c}").to(handle::<catalog::CatalogShort>))
        .service(resource("/api/contribute/o/{o}").to(handle::<contribute::Contribute>))
        .service(resource("/api/media/c/{c}/o/{o}").to(handle::<media_call::Media>));
}

/// The `{c}` and `{o}` segments of a path.
pub type CollectionObject = (String, String);

/// What a handler answers.
pub type Answer = Result<HttpResponse, ApiError>;

/// The ids a path names, parsed from its segments as routed; a malformed id is a 400 naming
/// its segment.
pub(crate) trait PathIds: Copy {
    /// The segments as routed (`{c}/{o}`: [`CollectionObject`]).
    type Segments: DeserializeOwned;

    /// Parses the segments.
    fn parse(segments: Self::Segments) -> Result<Self, ApiError>;
}

/// A path without ids.
impl PathIds for () {
    type Segments = ();

    fn parse((): ()) -> Result<(), ApiError> {
        Ok(())
    }
}

/// `c/{collection_uuid}/o/{object_id}`: an object reached through a collection (info,
/// embed, video); neither may be `0`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MemberPath(pub(crate) ObjectId, pub(crate) ObjectId);

impl PathIds for MemberPath {
    type Segments = CollectionObject;

    fn parse((c, o): CollectionObject) -> Result<Self, ApiError> {
        Ok(Self(collection_id(&c)?, path_real_id(&o, "object_id")?))
    }
}

/// `c/{collection_uuid}/o/{user_id}`: a user seen through a collection (user, permission);
/// the user may be `0`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserPath(pub(crate) ObjectId, pub(crate) IdOrZero<UserId>);

impl PathIds for UserPath {
    type Segments = CollectionObject;

    fn parse((c, u): CollectionObject) -> Result<Self, ApiError> {
        Ok(Self(collection_id(&c)?, path_id(&u, "user_id")?))
    }
}

/// The body of a [`Resource::answer`]: the function that answers each method the resource
/// offers (`read` answers GET and HEAD), and a 501 naming the resource's `ALLOW` for any
/// other, so that no resource restates the dispatch.
macro_rules! answer {
    ($call:ident, $path:expr, read => $read:ident $(, $($method:ident)|+ => $write:ident)* $(,)?) => {
        match $call.input.method {
            ref m if $crate::api::is_read(m) => $read(&$call, $path).await,
            $($(actix_web::http::Method::$method)|+ => $write(&$call, $path).await,)*
            _ => Err($crate::api::not_implemented(Self::ALLOW)),
        }
    };
}
pub(crate) use answer;

/// A resource of the media API: the facts [`handle`] needs to read a call to it, and its
/// answer to every call but OPTIONS.
pub(crate) trait Resource {
    /// The methods the path offers, as `Allow` names them.
    const ALLOW: &'static str;
    /// Which calls need no token.
    const PUBLIC: Public = Public::Options;
    /// The ids the path names.
    type Path: PathIds;

    /// What the path's writes would do, which OPTIONS asks the gate about (see [`options`]);
    /// `None` (the default) for a path whose writes the gate does not guard, or that has none.
    fn writes(_: Self::Path) -> Option<Action> {
        None
    }

    /// Answers a call that is not OPTIONS; a method the path does not offer is a 501.
    async fn answer(call: Call<'_>, path: Self::Path) -> Answer;
}

/// A call to a [`Resource`], read and authenticated by [`handle`].
pub(crate) struct Call<'a> {
    /// The application.
    pub(crate) state: &'a AppState,
    /// The request (its headers: describe reads the token itself).
    pub(crate) req: &'a HttpRequest,
    /// The effective method and the fields.
    pub(crate) input: ApiCall,
    /// Who is calling.
    pub(crate) who: Who,
}

impl Call<'_> {
    /// The authenticated caller; a public call has none (401).
    pub(crate) fn caller(&self) -> Result<Caller, ApiError> {
        self.who.caller()
    }

    /// Refuses a field the method does not know ([`ApiCall::only`]).
    pub(crate) fn only(&self, known: &[&str]) -> Result<(), ApiError> {
        self.input.only(known)
    }

    /// A field's value, from the body or else the query ([`ApiCall::field`]).
    pub(crate) fn field(&self, name: &str) -> Option<&str> {
        self.input.field(name)
    }
}

/// The handler of every resource: reads the call with [`begin`] (so that a call without a
/// valid token is a 401 before its path is judged), parses the path, answers OPTIONS, and
/// hands any other call to the resource.
pub(crate) async fn handle<R: Resource>(
    req: HttpRequest,
    path: web::Path<<R::Path as PathIds>::Segments>,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Answer {
    let (input, who) = begin(&req, payload, &state, R::ALLOW, R::PUBLIC).await?;
    let path = R::Path::parse(path.into_inner())?;
    if input.method == Method::OPTIONS {
        return options(&state, &req, R::ALLOW, R::writes(path)).await;
    }
    let call = Call {
        state: &state,
        req: &req,
        input,
        who,
    };
    R::answer(call, path).await
}

/// A path outside the media API's resources that has no ids and reads its call whole
/// (body and fields) before it judges the method: oEmbed, the OAuth metadata, logout.
pub(crate) trait Endpoint {
    /// The methods the path offers, as `Allow` names them.
    const ALLOW: &'static str;

    /// Answers a call that is not OPTIONS; a method the path does not offer is a 501.
    async fn answer(call: Call<'_>) -> Answer;
}

/// The handler of every [`Endpoint`]: reads the call, answers OPTIONS (no write of these
/// paths is the gate's to judge), and hands any other call to the endpoint, as anyone's.
pub(crate) async fn endpoint<E: Endpoint>(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> Answer {
    let input = ApiCall::read(&req, payload).await?;
    if input.method == Method::OPTIONS {
        return options(&state, &req, E::ALLOW, None).await;
    }
    let call = Call {
        state: &state,
        req: &req,
        input,
        who: Who::Anyone,
    };
    E::answer(call).await
}

/// Parses a path id or `0`, naming the field in the 400.
pub fn path_id<T>(input: &str, field: &str) -> Result<IdOrZero<T>, ApiError>
where
    T: std::str::FromStr<Err = medialib_domain::InvalidUuid>,
{
    IdOrZero::parse(input).map_err(|_| {
        ApiError::BadRequest(format!(
            "{field} must be a UUID (32 hexadecimal digits, dashes optional) or 0"
        ))
    })
}

/// Parses a path id where `0` is not meaningful.
pub fn path_real_id<T>(input: &str, field: &str) -> Result<T, ApiError>
where
    T: std::str::FromStr<Err = medialib_domain::InvalidUuid>,
{
    match path_id::<T>(input, field)? {
        IdOrZero::Id(id) => Ok(id),
        IdOrZero::Zero => Err(ApiError::BadRequest(format!(
            "{field} 0 is not valid for this call"
        ))),
    }
}

/// The collection id of `c/{c}` (never `0` outside describe PUT).
pub fn collection_id(input: &str) -> Result<ObjectId, ApiError> {
    path_real_id(input, "collection_uuid")
}

/// `501 Not Implemented` for a method the path does not offer.
pub fn not_implemented(allow: &'static str) -> ApiError {
    ApiError::MethodNotImplemented { allow }
}

/// Which calls of a resource need no token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Public {
    /// Only OPTIONS (every resource answers it to anyone).
    Options,
    /// GET and HEAD too (describe: a public object's limited record).
    Reads,
    /// Every call (authenticate, which never fails on a bad token).
    All,
}

/// Who a call is from, as judged before anything else about the call.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    /// A public call: any caller, a token (if any) is judged by the call itself.
    Anyone,
    /// The authenticated caller of a call that needs one, with its token's scopes.
    Caller(Caller),
}

impl Who {
    /// The authenticated caller; a public call has none (401).
    pub fn caller(self) -> Result<Caller, ApiError> {
        match self {
            Self::Caller(c) => Ok(c),
            Self::Anyone => Err(ApiError::AuthenticationRequired),
        }
    }
}

/// Reads an API call, judging authentication first (DECISIONS.md §4): the body is read
/// (bounded) before anything is refused; a method the path does not offer is a 501
/// whoever asks (OPTIONS tells anyone as much); then a call that is not `public` needs a
/// valid token (401) before its path, query or body are judged; only then are the query
/// and body parsed. [`handle`] judges the path after this returns.
async fn begin(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    allow: &'static str,
    public: Public,
) -> Result<(ApiCall, Who), ApiError> {
    let body = ApiCall::body(req, payload).await?;
    let method = req.method();
    let offered = allow.split(", ").any(|m| m == method.as_str());
    if !offered && *method != Method::POST {
        // A POST may still name an offered method with `_METHOD`: judged after parsing.
        return Err(not_implemented(allow));
    }
    let is_public = match public {
        Public::All => true,
        Public::Reads => *method == Method::OPTIONS || is_read(method),
        Public::Options => *method == Method::OPTIONS,
    };
    let who = if is_public {
        Who::Anyone
    } else {
        Who::Caller(required_caller(state, req).await?.caller())
    };
    Ok((ApiCall::parse(req, body)?, who))
}

#[derive(Serialize)]
struct OptionsBody {
    methods: Vec<&'static str>,
    authenticated: &'static str,
    proceed: &'static str,
}

/// `OPTIONS`: 200 with `Allow` and `{methods, authenticated, proceed}`, where `proceed`
/// says whether the caller may perform the path's write methods: for a media-API path,
/// whether the authorization gate lets it do `writes`, what those methods do; for a path
/// whose writes the gate does not guard (`None`: sign-out, the token endpoint), whether
/// the caller is signed in with a credential that allows writes.
pub async fn options(
    state: &AppState,
    req: &HttpRequest,
    allow: &'static str,
    writes: Option<Action>,
) -> Result<HttpResponse, ApiError> {
    let methods: Vec<&'static str> = allow.split(", ").collect();
    // OPTIONS never fails on a bad token: it answers "not authenticated".
    let caller = if presented_token(req).is_ok() {
        optional_caller(state, req).await.ok().flatten()
    } else {
        None
    };
    let has_writes = methods
        .iter()
        .any(|m| matches!(*m, "PUT" | "POST" | "DELETE"));
    let proceed = match (&caller, writes) {
        (Some(c), Some(action)) => {
            let who = c.caller();
            run(state, move |s| s.media().permits(&who, action))
                .await
                .unwrap_or(false)
        }
        (Some(c), None) => has_writes && authz::may_use_unguarded_writes(&c.caller()),
        (None, _) => false,
    };
    Ok(HttpResponse::Ok()
        .insert_header(("Allow", allow))
        .json(OptionsBody {
            methods,
            authenticated: medialib_domain::object::bool_str(caller.is_some()),
            proceed: medialib_domain::object::bool_str(proceed),
        }))
}

/// Whether a method reads (GET or HEAD).
pub fn is_read(m: &Method) -> bool {
    *m == Method::GET || *m == Method::HEAD
}

//! The media REST API (spec §4): one handler per resource, dispatching on the
//! effective method (overrides applied), so that an unimplemented method is a
//! 501 with `Allow` and OPTIONS answers on every path.

pub(crate) mod authenticate;
pub(crate) mod catalog;
pub(crate) mod contribute;
pub(crate) mod describe;
pub(crate) mod info;
pub(crate) mod media;
pub(crate) mod permission;
pub(crate) mod user;

use actix_web::http::Method;
use actix_web::{HttpRequest, HttpResponse, web};
use medialib_domain::authz;
use medialib_domain::{Action, Caller, IdOrZero, ObjectId, UserId};
use serde::Serialize;

use crate::auth::{optional_caller, presented_token, required_caller};
use crate::blocking::run;
use crate::error::ApiError;
use crate::input::ApiCall;
use crate::state::AppState;

/// Registers the API routes.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(crate::routing::resource("/api/describe/c/{c}/o/{o}").to(describe::handle))
        .service(crate::routing::resource("/api/user/c/{c}/o/{o}").to(user::handle))
        .service(crate::routing::resource("/api/permission/c/{c}/o/{o}").to(permission::handle))
        .service(crate::routing::resource("/api/info/c/{c}/o/{o}").to(info::handle))
        .service(crate::routing::resource("/api/embed/c/{c}/o/{o}").to(media::embed))
        .service(crate::routing::resource("/api/video/c/{c}/o/{o}").to(media::video))
        .service(crate::routing::resource("/api/authenticate").to(authenticate::handle))
        .service(crate::routing::resource("/api/catalog/c/{c}/o/{o}").to(catalog::handle))
        .service(crate::routing::resource("/api/catalog/o/{c}").to(catalog::handle_short))
        .service(crate::routing::resource("/api/contribute/o/{o}").to(contribute::handle));
}

/// The `{c}` and `{o}` segments of a path.
pub type CollectionObject = web::Path<(String, String)>;

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

/// A user id of `o/{user_id}` (`0` allowed).
pub fn user_path_id(input: &str) -> Result<IdOrZero<UserId>, ApiError> {
    path_id(input, "user_id")
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
/// and body parsed. The handler judges the path after this returns.
pub async fn begin(
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
